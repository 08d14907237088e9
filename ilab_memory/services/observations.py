"""Observation writes: save (create / revise by topic / duplicate), update, delete."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from .. import sql
from ..conf import Config, get_config
from ..exceptions import ObservationNotFound, ValidationError
from ..models import Observation, ObservationRevision, first_or_none
from ..scopes import ALL, Reach, clean_target_scope, clean_write_scope
from ..signals import observation_saved, send_on_commit
from ..types import DeleteResult, ObservationRecord, SaveResult, observation_record
from ..validation import (
    check_length,
    check_metadata_shape,
    check_metadata_size,
    check_text,
    clean_moment,
    clean_ttl,
    clean_type,
    clean_user_id,
    normalize_content,
    normalize_topic_key,
    parse_uuid,
)
from ..visibility import expired_q, is_expired
from . import embedding
from .privacy import redact, redact_json
from .sessions import claim_active_session
from .transactions import atomic_with_retry

UNSET: Any = object()  # "not given" for update, where None has a meaning (clear the topic_key)

CREATED, REVISED, DUPLICATE, UPDATED = "created", "revised", "duplicate", "updated"
# What a replace writes and the history keeps: every field of the memory a caller may give.
REPLACED_FIELDS = ("type", "title", "content", "topic_key", "metadata", "happened_at")
# What a revise writes besides them (the expiry is the row's lifetime, not part of its history).
REVISED_COLUMNS = (*REPLACED_FIELDS, "expires_at", "dedupe_hash", "revision_count", "redacted_blocks", "session",
                   "updated_at", "last_seen_at")


@dataclass
class CleanFields:
    """Validated, redacted and limit-checked values, ready to store. Only given fields are set."""

    values: dict[str, Any]
    redacted_blocks: int


def clean_fields(*, config: Config, **given) -> CleanFields:
    """Shapes first, then redaction, then limits on what will be stored."""
    values: dict[str, Any] = {}
    blocks = 0
    if "type" in given:
        values["type"] = clean_type(given["type"], allowed=config.OBSERVATION_TYPES)
    for field, limit in (("title", config.MAX_TITLE_CHARS), ("content", config.MAX_CONTENT_CHARS)):
        if field in given:
            result = redact(check_text(field, given[field]))
            blocks += result.blocks
            # Blank is judged on what would be stored: "</private>" alone redacts to "".
            values[field] = check_length(field, check_text(field, result.text), limit)
    if "topic_key" in given:
        topic_key = given["topic_key"]
        if topic_key is not None:
            result = redact(check_text("topic_key", topic_key, allow_blank=True))
            blocks += result.blocks
            topic_key = normalize_topic_key(result.text)
            if topic_key is not None:
                check_length("topic_key", topic_key, config.MAX_TOPIC_KEY_CHARS)
        values["topic_key"] = topic_key
    if "metadata" in given:
        metadata = check_metadata_shape(given["metadata"], max_depth=config.MAX_METADATA_DEPTH)
        metadata, metadata_blocks = redact_json(metadata)
        blocks += metadata_blocks
        values["metadata"] = check_metadata_size(metadata, limit=config.MAX_METADATA_BYTES)
    if "happened_at" in given:
        happened_at = clean_moment("happened_at", given["happened_at"])
        if happened_at is None:
            raise ValidationError("happened_at", "must be a date-time, not null.", code="null")
        values["happened_at"] = happened_at
    return CleanFields(values, blocks)


def clean_expiry(expires_at: Any, ttl: Any) -> Any:
    """When a write says the memory expires: ``expires_at`` (a moment), or ``ttl`` (a time to
    live from the write), or neither (None: never by itself; RETENTION may still apply). Returns
    a datetime, a timedelta, or None; the write turns a timedelta into a moment by its clock."""
    expires_at, ttl = clean_moment("expires_at", expires_at), clean_ttl(ttl)
    if expires_at is not None and ttl is not None:
        raise ValidationError("ttl", "give expires_at or ttl, not both.", code="conflict")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError("expires_at", "must be in the future.", code="in_the_past")
    return expires_at if ttl is None else ttl


def _expiry_at(expiry: Any, now) -> Any:
    """``clean_expiry``'s value as a moment, ``now`` being the write's time."""
    return now + expiry if isinstance(expiry, timedelta) else expiry


def dedupe_hash(*, type: str, title: str, content: str) -> str:
    """Identity of a memory for dedupe: type, exact title, normalized content."""
    key = "\x1f".join((type, title, normalize_content(content)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _locked_live(queryset, user_id: str, using: str, config: Config) -> Observation | None:
    """The user's live observation of ``queryset`` (already scoped by the caller), locked until
    the transaction ends."""
    return first_or_none(queryset.using(using).select_for_update().live_for_user(user_id, config))


def _topic_holder(user_id: str, scope: str, topic_key: str, *, now, config: Config, using: str,
                  lock: bool = False) -> Observation | None:
    """The user's live observation holding ``topic_key`` in ``scope`` (locked with ``lock``), or
    None. One that expired is set aside and None returned: it is gone to every read, but the
    one-live-topic index still counts it until the sweep erases it, so a new memory could not
    take its topic. Set aside as a soft delete is (its vector dropped), nothing is erased here;
    the sweep erases it with the other expired memories."""
    holders = Observation.objects.using(using).filter(
        user_id=user_id, scope=scope, topic_key=topic_key, deleted_at__isnull=True)
    holder = first_or_none(holders.select_for_update() if lock else holders)
    if holder is not None and is_expired(holder, config, now=now):
        Observation.objects.using(using).filter(pk=holder.pk).update(deleted_at=now)
        embedding.drop(user_id=user_id, observation_ids=[holder.pk], using=using)
        return None
    return holder


def _revise(observation: Observation, *, values: dict, blocks: int, session_id, now, expires_at, config: Config,
            using: str) -> None:
    """Write ``values`` (every replaceable field) over ``observation``, locked by the caller, its
    current version kept in the history first; it moves to the session that wrote it (Braess
    #4) and is queued for a new vector."""
    ObservationRevision.objects.using(using).create(
        observation=observation, user_id=observation.user_id, revision=observation.revision_count,
        session_id_at_write=observation.session_id, written_at=observation.updated_at, replaced_at=now,
        **{name: getattr(observation, name) for name in REPLACED_FIELDS},
    )
    for name in REPLACED_FIELDS:
        setattr(observation, name, values[name])
    # Plain increments are safe: the row is locked (PostgreSQL) or the database is (SQLite).
    observation.revision_count += 1
    observation.redacted_blocks += blocks
    observation.dedupe_hash = dedupe_hash(type=values["type"], title=values["title"], content=values["content"])
    observation.session_id = session_id
    observation.expires_at = expires_at
    observation.updated_at = observation.last_seen_at = now
    observation.save(using=using, update_fields=REVISED_COLUMNS)
    embedding.requeue(observation, now=now, config=config, using=using)


def _row_scope(user_id: str, pk, scope: str, *, config: Config, using: str) -> str | None:
    """The scope of the row a write by id changes, whose session it claims: ``scope`` itself, or
    with ``"*"`` the live observation's own (None: the user has no such live observation)."""
    if scope != ALL:
        return scope
    found = Observation.objects.using(using).live_for_user(user_id, config).filter(pk=pk)
    return first_or_none(found.values_list("scope", flat=True))


def _saved(observation: Observation, action: str, *, using: str) -> None:
    send_on_commit(
        observation_saved, Observation, using=using, user_id=observation.user_id,
        observation_id=str(observation.id), action=action,
    )


def observation_save(
    *,
    user_id: str,
    title: str,
    content: str,
    type: str = "manual",
    topic_key: str | None = None,
    metadata: dict | None = None,
    scope: str = "",
    happened_at=None,
    expires_at=None,
    ttl=None,
    config: Config | None = None,
    using: str = "default",
) -> SaveResult:
    """Create, revise (same topic_key) or count a duplicate, in ``scope``'s active session; the
    topic and the twin are looked for in the same (user, scope) only.

    ``happened_at``: when what it says happened (default: now). ``expires_at`` or ``ttl`` (a
    timedelta or seconds): when it expires (default: never, or its type's RETENTION). A repeat
    counted as a duplicate keeps the twin's times. Raises ValidationError (nothing stored) for
    bad input.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_write_scope(scope, config=config)
    given_time = {} if happened_at is None else {"happened_at": happened_at}
    fields = clean_fields(
        config=config, type=type, title=title, content=content, topic_key=topic_key, metadata=metadata, **given_time
    )
    expiry = clean_expiry(expires_at, ttl)
    values = fields.values
    digest = dedupe_hash(type=values["type"], title=values["title"], content=values["content"])

    def run():
        now = timezone.now()
        session_id, _ = claim_active_session(user_id, scope, now=now, config=config, using=using)
        blocks = fields.redacted_blocks
        written = {"happened_at": now, **values}
        expires = _expiry_at(expiry, now)
        observation = None
        if values["topic_key"] is not None:
            observation = _topic_holder(user_id, scope, values["topic_key"], now=now, config=config, using=using,
                                        lock=True)
        if observation is not None:
            action = REVISED
            _revise(observation, values=written, blocks=blocks, session_id=session_id, now=now, expires_at=expires,
                    config=config, using=using)
        else:
            observation = sql.count_duplicate(
                user_id=user_id, scope=scope, digest=digest,
                since=now - timedelta(minutes=config.DEDUPE_WINDOW_MINUTES),
                session_id=session_id, now=now, blocks=blocks, topic_key=values["topic_key"], config=config,
                using=using,
            )
            action = DUPLICATE
        if observation is None:
            action = CREATED
            observation = Observation(
                user_id=user_id, scope=scope, session_id=session_id, dedupe_hash=digest, redacted_blocks=blocks,
                created_at=now, updated_at=now, last_seen_at=now, expires_at=expires, **written,
            )
            observation.save(using=using, force_insert=True)
            embedding.queue([observation], now=now, config=config, using=using)
        _saved(observation, action, using=using)
        return SaveResult(action=action, observation=observation_record(observation))

    return atomic_with_retry(run, using=using)


def observation_update(
    *,
    user_id: str,
    observation_id,
    title: str = UNSET,
    content: str = UNSET,
    type: str = UNSET,
    topic_key: str | None = UNSET,
    metadata: dict | None = UNSET,
    happened_at=UNSET,
    expires_at=UNSET,
    ttl=UNSET,
    keep_session: bool = False,
    scope: str = "",
    config: Config | None = None,
    using: str = "default",
) -> ObservationRecord:
    """Replace some fields, keeping the old version in history; moves it to the active session
    of its scope, or with ``keep_session`` (an operator's correction, not the user's write)
    leaves it in its session and touches no session.

    ``expires_at`` (None: never) or ``ttl`` (from now) change when it expires; not given, it
    keeps its expiry. ``scope``: the observation must be in it (``"*"``: in any of the user's
    scopes). Raises ObservationNotFound, or ValidationError when no field is given or a value is bad.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_target_scope(scope, config=config)
    given = {
        name: value
        for name, value in (
            ("title", title), ("content", content), ("type", type), ("topic_key", topic_key), ("metadata", metadata),
            ("happened_at", happened_at),
        )
        if value is not UNSET
    }
    new_expiry = expires_at is not UNSET or ttl is not UNSET
    if not given and not new_expiry:
        raise ValidationError(
            "non_field_errors", "give at least one of title, content, type, topic_key, metadata, happened_at, "
            "expires_at, ttl.", code="no_fields"
        )
    fields = clean_fields(config=config, **given)
    expiry = clean_expiry(None if expires_at is UNSET else expires_at, None if ttl is UNSET else ttl)
    values = fields.values
    pk = parse_uuid(observation_id, ObservationNotFound)

    def run():
        now = timezone.now()
        # Session first, then the observation: the same lock order as observation_save, so two
        # writers of one user cannot deadlock. An error below rolls the session back too. Its
        # scope is the observation's: with "*" it is read first (a row never changes scope).
        row_scope = _row_scope(user_id, pk, scope, config=config, using=using)
        session_id = None
        if not keep_session and row_scope is not None:
            session_id = claim_active_session(user_id, row_scope, now=now, config=config, using=using)[0]
        observation = None if row_scope is None else _locked_live(
            Observation.objects.filter(Reach.exactly(scope).q(), pk=pk), user_id, using, config)
        if observation is None:
            raise ObservationNotFound("No such observation.")
        session_id = session_id or observation.session_id
        new_topic = values.get("topic_key", observation.topic_key)
        if (new_topic is not None and new_topic != observation.topic_key
                and _topic_holder(user_id, observation.scope, new_topic, now=now, config=config, using=using)):
            raise ValidationError(
                "topic_key", "is already used by another live observation of this user in this scope.",
                code="topic_key_taken",
            )
        merged = {name: values.get(name, getattr(observation, name)) for name in REPLACED_FIELDS}
        expires = _expiry_at(expiry, now) if new_expiry else observation.expires_at
        _revise(observation, values=merged, blocks=fields.redacted_blocks, session_id=session_id, now=now,
                expires_at=expires, config=config, using=using)
        _saved(observation, UPDATED, using=using)
        return observation_record(observation)

    return atomic_with_retry(run, using=using)


def observation_delete(
    *, user_id: str, observation_id, hard: bool = False, scope: str = "", config: Config | None = None,
    using: str = "default",
) -> DeleteResult:
    """Soft delete (hidden everywhere) or hard delete (row, history and index entry gone).

    ``scope``: the observation must be in it (``"*"``: in any of the user's scopes). A
    soft-deleted observation can still be hard-deleted; anything else missing raises
    ObservationNotFound.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_target_scope(scope, config=config)
    if not isinstance(hard, bool):
        # "false" is truthy: guessing here could erase what the caller meant to keep.
        raise ValidationError("hard", "must be true or false.", code="invalid_type")
    pk = parse_uuid(observation_id, ObservationNotFound)

    def run():
        mine = Observation.objects.using(using).for_user(user_id).filter(Reach.exactly(scope).q(), pk=pk)
        if hard:
            # Soft-deleted rows may still be erased by id; expired ones are missing to every write.
            # The row is locked before its history and vector go: an update holds the row, then
            # writes those, so the same order here cannot deadlock with it.
            locked = first_or_none(mine.exclude(expired_q(config)).select_for_update().values_list("pk", flat=True))
            found = locked is not None and mine.delete()[0] > 0
        else:
            found = mine.live(config).update(deleted_at=timezone.now()) > 0
            embedding.drop(user_id=user_id, observation_ids=[pk], using=using)
        if not found:
            raise ObservationNotFound("No such observation.")
        return DeleteResult(id=str(pk), hard=hard)

    return atomic_with_retry(run, using=using)


def observation_restore(
    *, user_id: str, observation_id, scope: str = "", config: Config | None = None, using: str = "default"
) -> ObservationRecord:
    """Undo a soft delete. ``scope`` as for ``observation_delete``. Raises ObservationNotFound,
    or ValidationError when its topic_key has meanwhile been taken by another live observation
    of its scope."""
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    scope = clean_target_scope(scope, config=config)
    pk = parse_uuid(observation_id, ObservationNotFound)

    def run():
        observation = first_or_none(
            Observation.objects.using(using).select_for_update().for_user(user_id).deleted()
            .filter(Reach.exactly(scope).q(), pk=pk).exclude(expired_q(config))
        )
        if observation is None:
            raise ObservationNotFound("No such deleted observation.")
        if observation.topic_key is not None and _topic_holder(
            user_id, observation.scope, observation.topic_key, now=timezone.now(), config=config, using=using
        ):
            raise ValidationError(
                "topic_key",
                "is now used by another live observation; delete or rename it first.",
                code="topic_key_taken",
            )
        observation.deleted_at = None
        observation.save(using=using, update_fields=["deleted_at"])
        embedding.requeue(observation, now=timezone.now(), config=config, using=using)
        return observation_record(observation)

    return atomic_with_retry(run, using=using)
