"""Erasing a user, or one scope of a user: every row, index entry and admin log label, in one transaction."""

from __future__ import annotations

import uuid
from contextlib import nullcontext

from django.db import connections, transaction

from ..conf import Config, get_config
from ..models import Observation, ObservationRevision, ObservationVector, Session, VectorStamp
from ..scopes import ALL, SHARED, Reach, clean_held_scope
from ..signals import send_on_commit, user_forgotten
from ..sql import lock_user
from ..validation import clean_user_id
from .sqlite_scrub import checkpoint_wal, compact_search_index, secure_delete
from .transactions import atomic_with_retry

ADMIN_LOG_BATCH = 500


def forget_admin_log_labels(model, pks) -> None:
    """The host's admin log keeps entries of erased rows by id only: ``object_repr`` (a title,
    a summary) becomes the id. Nothing when ``django.contrib.admin`` is not installed."""
    from django.apps import apps

    if not apps.is_installed("django.contrib.admin"):
        return
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType
    from django.db.models import F

    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    batch: list[str] = []
    for pk in [*pks, None]:
        if pk is not None:
            batch.append(str(pk))
        if batch and (pk is None or len(batch) == ADMIN_LOG_BATCH):
            LogEntry.objects.filter(content_type=content_type, object_id__in=batch).update(object_repr=F("object_id"))
            batch = []


def user_forget(
    *, user_id: str, scope: str = ALL, config: Config | None = None, using: str = "default"
) -> dict[str, int]:
    """Erase every row of ``user_id`` (sessions, observations, revisions, index entries), or
    with a ``scope`` only that scope's, in one transaction; returns how many of each were
    deleted. Raises ValidationError for a bad user_id or scope (``"*"``, the default, and None
    mean the whole user).

    ``user_forgotten`` is sent for the whole user only: its receivers erase the user elsewhere,
    which one scope's erasure must not set off.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_held_scope(scope, config=config)
    whole_user = scope == ALL
    erased = Reach.exactly(scope)
    connection = connections[using]
    sqlite = connection.vendor == "sqlite"

    def run():
        # A writer opening a session in the shared space (or in the erased scope) waits here.
        lock_user(user_id, SHARED if whole_user else scope, using=using)
        # A writer on the fast path holds its session's row lock instead (sql.bump_live_session): lock
        # every session row erased, so one in flight commits first (the deletes below then see its
        # rows) and the next one waits, then finds no session and opens one after the erasure.
        sessions_erased = Session.objects.using(using).for_user(user_id).filter(erased.q())
        observations_erased = Observation.objects.using(using).for_user(user_id).filter(erased.q())
        session_ids = list(sessions_erased.select_for_update().values_list("pk", flat=True))
        forget_admin_log_labels(Session, session_ids)
        forget_admin_log_labels(Observation, observations_erased.values_list("pk", flat=True).iterator())
        of_observation = erased.q("observation__")
        # Children first, so each count is of that kind of row alone, not of a cascade.
        revisions = ObservationRevision.objects.using(using)
        revisions = (revisions.filter(of_observation, user_id=user_id).delete()[0]
                     + revisions.filter(of_observation, observation__user_id=user_id).delete()[0])
        vectors = ObservationVector.objects.using(using)
        vectors = (vectors.filter(erased.q(), user_id=user_id).delete()[0]
                   + vectors.filter(of_observation, observation__user_id=user_id).delete()[0])
        stamp = VectorStamp.objects.using(using).filter(user_id=user_id)
        if whole_user:
            stamp.delete()
        else:
            # The other scopes' vectors stay: a new stamp makes every process reload them, without
            # the erased ones it may still hold in memory.
            stamp.update(stamp=uuid.uuid4())
        observations = observations_erased.delete()[0]
        sessions = sessions_erased.delete()[0]
        if sqlite:
            compact_search_index(connection)
        counts = {"sessions": sessions, "observations": observations, "revisions": revisions, "vectors": vectors}
        if whole_user:
            send_on_commit(user_forgotten, Session, using=using, user_id=user_id, counts=counts)
        return counts

    with secure_delete(connection) if sqlite else nullcontext():
        counts = atomic_with_retry(run, using=using)
    if sqlite:
        transaction.on_commit(lambda: checkpoint_wal(using), using=using)
    return counts
