"""Importing an export document: the rows ``user_id`` does not have yet, all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from ..conf import Config, get_config
from ..exceptions import ValidationError
from ..models import Observation, ObservationRevision, Session, SessionStatus
from ..scopes import clean_write_scope
from ..sql import lock_user
from ..validation import clean_user_id
from ..visibility import expired_q
from . import embedding
from .document import CHUNK, clean_document
from .observations import dedupe_hash
from .sessions import build_auto_summary
from .transactions import atomic_with_retry


def _chunks(items: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _owners(model, ids: list, *, using: str) -> dict:
    """id -> (user_id, scope) for the ids that already exist, read in chunks."""
    owners: dict[Any, tuple[str, str]] = {}
    for chunk in _chunks(ids):
        rows = model.objects.using(using).filter(pk__in=chunk).values_list("pk", "user_id", "scope")
        owners.update((pk, (user_id, scope)) for pk, user_id, scope in rows)
    return owners


def _refuse_foreign(kind: str, rows: list, owners: dict, user_id: str) -> None:
    for i, row in enumerate(rows):
        owner = owners.get(row["id"])
        if owner is not None and owner[0] != user_id:
            raise ValidationError(f"{kind}[{i}].id", "is already taken by a row of another user; nothing was imported.",
                                  code="id_taken")


def _refuse_scope_moves(observations: list, observation_owners: dict, session_owners: dict) -> None:
    """A new observation whose session the user already has, in another scope (the document was
    imported before into another scope): it would leave its session's scope."""
    for i, observation in enumerate(observations):
        if observation["id"] in observation_owners:
            continue
        owner = session_owners.get(observation["session_id"])
        if owner is not None and owner[1] != observation["scope"]:
            raise ValidationError(f"observations[{i}].session_id", "names a session this user already has in another "
                                  "scope; nothing was imported.", code="scope_mismatch")


def _scopes_with_an_active_session(user_id: str, scopes: list, *, using: str) -> set:
    """Which of ``scopes`` already hold an active session of the user, those sessions locked.

    The shared space's lock is held already (``user_import``). Another scope is not locked
    by name: a document may hold many, and each advisory lock takes a slot of PostgreSQL's
    shared lock table. A ``session_start`` that opens that scope's first session meanwhile
    meets the import at the one-active-session constraint, and the loser's retry sees the
    winner's session.
    """
    busy: set = set()
    for chunk in _chunks(scopes):
        busy.update(
            Session.objects.using(using).select_for_update().for_user(user_id).active()
            .filter(scope__in=chunk).values_list("scope", flat=True)
        )
    return busy


def user_import(
    *, user_id: str, data: Any, scope: str | None = None, config: Config | None = None, using: str = "default"
) -> dict:
    """Add the rows of an export document that ``user_id`` does not have yet; returns counts.

    Each row goes to its record's scope (a version 1 document: the shared space), or every row
    to ``scope`` when given. Validates the whole document first (ValidationError, nothing
    written); rows already present are skipped, so importing the same document twice adds
    nothing. Raises ValidationError when an id belongs to another user, or when a new
    observation's session is one the user has in another scope.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    target = None if scope is None else clean_write_scope(scope, config=config)
    cleaned_sessions, cleaned_observations, revisions = clean_document(data, config=config, scope=target)

    def run():
        # Copies: a retry starts again from the document, not from rows the last attempt changed.
        sessions = [dict(s) for s in cleaned_sessions]
        observations = [dict(o) for o in cleaned_observations]
        now = timezone.now()
        # Imports of one user queue here, and with session_start in the shared space.
        lock_user(user_id, using=using)
        session_owners = _owners(Session, [s["id"] for s in sessions], using=using)
        observation_owners = _owners(Observation, [o["id"] for o in observations], using=using)
        _refuse_foreign("sessions", sessions, session_owners, user_id)
        _refuse_foreign("observations", observations, observation_owners, user_id)
        _refuse_scope_moves(observations, observation_owners, session_owners)

        new_sessions = [s for s in sessions if s["id"] not in session_owners]
        arriving = sorted({s["scope"] for s in new_sessions if s["status"] == SessionStatus.ACTIVE})
        busy = _scopes_with_an_active_session(user_id, arriving, using=using)
        closed, to_auto_summarize = 0, []
        for session in _latest_first([s for s in new_sessions if s["status"] == SessionStatus.ACTIVE],
                                     "last_activity_at"):
            expires_at = session["last_activity_at"] + timedelta(hours=config.SESSION_TIMEOUT_HOURS)
            if session["scope"] in busy or expires_at < now:
                # One active session per (user, scope): the one already here wins, then the
                # document's latest (several meet in the scope an import names); an imported
                # active session is closed with the auto-close rules, at the latest now.
                session["status"], session["ended_at"] = SessionStatus.COMPLETED, min(expires_at, now)
                closed += 1
                if not session["summary"] or session["is_auto_generated"]:
                    session["summary"], session["is_auto_generated"] = None, False
                    to_auto_summarize.append(session["id"])
            else:
                busy.add(session["scope"])
        Session.objects.using(using).bulk_create(
            [Session(user_id=user_id, **s) for s in new_sessions], batch_size=CHUNK
        )

        new_observations = [o for o in observations if o["id"] not in observation_owners]
        conflicts = _hide_topic_conflicts(user_id, new_observations, now=now, config=config, using=using)
        created = Observation.objects.using(using).bulk_create(
            [
                Observation(user_id=user_id, dedupe_hash=dedupe_hash(type=o["type"], title=o["title"],
                                                                      content=o["content"]), **o)
                for o in new_observations
            ],
            batch_size=CHUNK,
        )
        # Each vector row carries its observation's scope (embedding.queue copies it).
        embedding.queue([o for o in created if o.deleted_at is None], now=now, config=config, using=using)

        # History of an observation the user already had is kept as it is: it has its own.
        new_ids = {o["id"] for o in new_observations}
        new_revisions = [r for r in revisions if r["observation_id"] in new_ids]
        ObservationRevision.objects.using(using).bulk_create(
            [ObservationRevision(user_id=user_id, **r) for r in new_revisions], batch_size=CHUNK
        )

        for session in Session.objects.using(using).filter(pk__in=to_auto_summarize):
            session.summary = build_auto_summary(session, config=config, using=using)
            session.is_auto_generated, session.redacted_blocks = True, 0
            session.save(using=using, update_fields=["summary", "is_auto_generated", "redacted_blocks"])

        return {
            "sessions_created": len(new_sessions),
            "sessions_skipped": len(sessions) - len(new_sessions),
            "sessions_closed": closed,
            "observations_created": len(new_observations),
            "observations_skipped": len(observations) - len(new_observations),
            "observations_hidden": conflicts,
            "revisions_created": len(new_revisions),
            "revisions_skipped": len(revisions) - len(new_revisions),
        }

    return atomic_with_retry(run, using=using)


def _latest_first(rows: list, field: str) -> list:
    return sorted(rows, key=lambda row: (row[field], str(row["id"])), reverse=True)


def _hide_topic_conflicts(user_id: str, observations: list, *, now: datetime, config: Config, using: str) -> int:
    """Import as soft-deleted a live observation whose topic_key a live one of the same scope
    here already uses, or a later one of the document (several meet in the scope an import names).

    The memory the user has now wins, then the one updated last; the others stay restorable
    once the topic is free. An expired memory here holding a wanted topic is erased first: it is
    gone to every read, and the one-live-topic rule would still count it.
    """
    wanted = {o["topic_key"] for o in observations if o["topic_key"] is not None and o["deleted_at"] is None}
    taken: set[tuple[str, str | None]] = set()  # (scope, topic key)
    for chunk in _chunks(sorted(wanted)):
        mine = Observation.objects.using(using).filter(user_id=user_id, topic_key__in=chunk)
        mine.filter(expired_q(config, now=now), deleted_at__isnull=True).delete()
        # The topic in any of the user's scopes: a few more rows than needed, one query a chunk.
        taken.update(mine.filter(deleted_at__isnull=True).values_list("scope", "topic_key"))
    hidden = 0
    for observation in _latest_first([o for o in observations if o["deleted_at"] is None], "updated_at"):
        topic = (observation["scope"], observation["topic_key"])
        if topic in taken:
            observation["deleted_at"] = now
            hidden += 1
        elif topic[1] is not None:
            taken.add(topic)
    return hidden
