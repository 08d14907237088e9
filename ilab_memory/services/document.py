"""The export document: its format, and the checks a document passes before an import writes it.

The format (``FORMAT``, ``VERSION``)::

    {"format": "ilab_memory.export", "version": 3, "user_id": "...", "exported_at": "...",
     "sessions": [...], "observations": [...], "revisions": [...]}

Each session and observation names its ``scope`` ("" is the user's shared space); a revision
is in its observation's. Version 3 adds time: an observation's ``happened_at`` and
``expires_at``, a revision's ``happened_at``. Older versions are still read: version 2 rows
happened when they were created (a revision when it was written) and never expire by
themselves; version 1, written before scopes, has no ``scope`` field: its rows go to the shared
space. Ids are kept, timestamps are ISO 8601 UTC, and nothing
private is in it: private blocks were redacted before they were stored, and ``clean_document``
redacts again, so a hand-edited document cannot smuggle one in.
"""

from __future__ import annotations

import functools
import uuid
from datetime import UTC, datetime
from typing import Any, NoReturn

from ..conf import Config
from ..exceptions import ValidationError
from ..models import Observation, ObservationRevision, Session, SessionStatus
from ..scopes import SHARED, clean_write_scope
from ..validation import (
    MEMORY_FIELDS,
    NO_DEFAULT,
    MemoryField,
    check_length,
    check_text,
    clean_choice,
    clean_type,
)
from .observations import clean_fields
from .privacy import redact, shown_key

FORMAT = "ilab_memory.export"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)  # 1: before scopes, every row in the shared space; 2: before time
CHUNK = 500  # rows per database round trip; also under SQLite's bound-parameter limit



def record_fields(model, *, left_out: tuple[str, ...] = (), renamed: dict[str, str] | None = None) -> tuple:
    """A model's columns as its records in the document name them, in the model's order: a new
    column is exported and read back without a list to extend here. ``user_id`` is the
    document's, never a record's; ``left_out`` are made again on import."""
    renamed = renamed or {}
    return tuple(renamed.get(field.attname, field.attname) for field in model._meta.concrete_fields
                 if field.attname != "user_id" and field.attname not in left_out)


SESSION_FIELDS = record_fields(Session)
# The dedupe hash is computed from the text again.
OBSERVATION_FIELDS = record_fields(Observation, left_out=("dedupe_hash",))
# A revision is numbered within its observation; the session that wrote it is its ``session_id``.
REVISION_FIELDS = record_fields(ObservationRevision, left_out=("id",), renamed={"session_id_at_write": "session_id"})
DOCUMENT_FIELDS = ("format", "version", "user_id", "exported_at", "sessions", "observations", "revisions")
# What an import needs of each record; the other fields have defaults (and older versions lack some).
SESSION_REQUIRED = ("id", "status", "started_at", "last_activity_at")
OBSERVATION_REQUIRED = ("id", "session_id", "title", "content", "created_at")
REVISION_REQUIRED = ("observation_id", "revision", "title", "content", "written_at", "replaced_at")
DOCUMENT_REQUIRED = ("format", "version")


def read_as_saved(fields: tuple[MemoryField, ...] = MEMORY_FIELDS) -> tuple[tuple[str, Any], ...]:
    """The declared fields a save takes that an import reads the same way, with what a record
    lacking one gets (the type is checked apart, against the types a revision may hold; the
    moments are the document's own)."""
    return tuple((field.name, None if field.default is NO_DEFAULT else field.default)
                 for field in fields if field.kind in ("text", "object"))


_AS_SAVED = read_as_saved()


def _fail(field: str, message: str, code: str = "invalid") -> NoReturn:
    raise ValidationError(field, message, code=code)


@functools.cache  # asked once per row of a document: the answer depends only on the version
def _optional(fields: tuple, required: tuple, *, scoped: bool = True) -> tuple:
    """A record's other fields, ``scope`` only in versions that have it."""
    return tuple(name for name in fields if name not in required and (scoped or name != "scope"))


def _require_object(field: str, value: Any, *, required: tuple, optional: tuple = ()) -> dict:
    if not isinstance(value, dict):
        _fail(field, "must be a JSON object.", "invalid_type")
    for key in value:
        if key not in required and key not in optional:
            name = shown_key(key)  # never a private block in an error
            _fail(f"{field}.{name}" if field else name, "is not a known field.", "unknown_field")
    for key in required:
        if key not in value:
            _fail(f"{field}.{key}" if field else key, "is required.", "required")
    return value


def _uuid(field: str, value: Any) -> uuid.UUID:
    if not isinstance(value, str):
        _fail(field, "must be a UUID string.", "invalid_type")
    try:
        return uuid.UUID(value)
    except ValueError:
        _fail(field, "is not a valid UUID.", "invalid_uuid")


TIMESTAMP_YEARS = (1970, 9000)


def _timestamp(field: str, value: Any, *, nullable: bool = False) -> datetime | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or len(value) > 40:
        _fail(field, "must be an ISO 8601 timestamp string.", "invalid_type")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        _fail(field, "is not an ISO 8601 timestamp.", "invalid_timestamp")
    if parsed.tzinfo is None:
        _fail(field, "must carry a time zone (UTC).", "naive_timestamp")
    try:
        in_utc: datetime | None = parsed.astimezone(UTC)
    except OverflowError:
        in_utc = None
    # A bounded range keeps the timeout arithmetic done on imported times from overflowing.
    if in_utc is None or not TIMESTAMP_YEARS[0] <= in_utc.year <= TIMESTAMP_YEARS[1]:
        _fail(field, f"must lie between the years {TIMESTAMP_YEARS[0]} and {TIMESTAMP_YEARS[1]}.", "invalid_timestamp")
    return in_utc


def _count(field: str, value: Any, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= 2**31 - 1:
        _fail(field, f"must be an integer from {minimum} to {2**31 - 1}.", "invalid_integer")
    return value


def _rows(document: dict, name: str) -> list:
    rows = document.get(name, [])
    if not isinstance(rows, list):
        _fail(name, "must be a JSON array.", "invalid_type")
    return rows


def _record_scope(field: str, row: dict, *, target: str | None, config: Config) -> str:
    """The scope a record goes to: ``target`` when the import names one (the record's own is not
    read then, so a document moves between sites with different SCOPES), else its own."""
    if target is not None:
        return target
    value = row.get("scope", SHARED)
    if value is None:
        _fail(f"{field}.scope", "must be a string (empty for the shared space).", "invalid_type")
    try:
        return clean_write_scope(value, config=config)
    except ValidationError as error:
        raise ValidationError(
            f"{field}.scope", error.message, code=error.code, limit=error.limit, size=error.size
        ) from None


def _clean_session(field: str, row: Any, *, config: Config, target: str | None, scoped: bool) -> dict:
    _require_object(field, row, required=SESSION_REQUIRED,
                    optional=_optional(SESSION_FIELDS, SESSION_REQUIRED, scoped=scoped))
    status = clean_choice(f"{field}.status", row["status"], allowed=SessionStatus.values)
    ended_at = _timestamp(f"{field}.ended_at", row.get("ended_at"), nullable=True)
    if (status == SessionStatus.ACTIVE) != (ended_at is None):
        _fail(f"{field}.ended_at", "must be null exactly when the session is active.", "invalid_state")
    summary, blocks = row.get("summary"), _count(f"{field}.redacted_blocks", row.get("redacted_blocks", 0), minimum=0)
    if summary is not None:
        redacted = redact(check_text(f"{field}.summary", summary, allow_blank=True))
        summary = check_length(f"{field}.summary", redacted.text, config.MAX_SUMMARY_CHARS)
        blocks += redacted.blocks
    is_auto = row.get("is_auto_generated", False)
    if not isinstance(is_auto, bool):
        _fail(f"{field}.is_auto_generated", "must be true or false.", "invalid_type")
    if is_auto and summary is None:
        _fail(f"{field}.summary", "is required when is_auto_generated is true.", "required")
    return {
        "id": _uuid(f"{field}.id", row["id"]),
        "scope": _record_scope(field, row, target=target, config=config),
        "status": status,
        "started_at": _timestamp(f"{field}.started_at", row["started_at"]),
        "last_activity_at": _timestamp(f"{field}.last_activity_at", row["last_activity_at"]),
        "ended_at": ended_at,
        "summary": summary,
        "is_auto_generated": is_auto,
        "redacted_blocks": blocks,
    }


def _clean_text_fields(field: str, row: dict, *, config: Config, allowed_types) -> tuple[dict, int]:
    """The memory's text fields, its metadata and its type through the same checks as a save."""
    try:
        type_ = clean_type(row.get("type", "manual"), allowed=allowed_types)
        fields = clean_fields(config=config, **{name: row.get(name, default) for name, default in _AS_SAVED})
    except ValidationError as error:
        inner = "type" if error.field == "type" else error.field
        raise ValidationError(
            f"{field}.{inner}", error.message, code=error.code, limit=error.limit, size=error.size
        ) from None
    return {**fields.values, "type": type_}, fields.redacted_blocks


def _clean_observation(field: str, row: Any, *, config: Config, target: str | None, scoped: bool) -> dict:
    _require_object(field, row, required=OBSERVATION_REQUIRED,
                    optional=_optional(OBSERVATION_FIELDS, OBSERVATION_REQUIRED, scoped=scoped))
    values, blocks = _clean_text_fields(field, row, config=config, allowed_types=config.OBSERVATION_TYPES)
    created_at = _timestamp(f"{field}.created_at", row["created_at"])
    updated_at = _timestamp(f"{field}.updated_at", row.get("updated_at", row["created_at"]))
    return {
        **values,
        "id": _uuid(f"{field}.id", row["id"]),
        "scope": _record_scope(field, row, target=target, config=config),
        "session_id": _uuid(f"{field}.session_id", row["session_id"]),
        "revision_count": _count(f"{field}.revision_count", row.get("revision_count", 1), minimum=1),
        "duplicate_count": _count(f"{field}.duplicate_count", row.get("duplicate_count", 1), minimum=1),
        "redacted_blocks": blocks + _count(f"{field}.redacted_blocks", row.get("redacted_blocks", 0), minimum=0),
        "created_at": created_at,
        "updated_at": updated_at,
        "happened_at": _timestamp(f"{field}.happened_at", row.get("happened_at", row["created_at"])),
        "last_seen_at": _timestamp(f"{field}.last_seen_at", row.get("last_seen_at", row["created_at"])),
        "deleted_at": _timestamp(f"{field}.deleted_at", row.get("deleted_at"), nullable=True),
        "expires_at": _timestamp(f"{field}.expires_at", row.get("expires_at"), nullable=True),
    }


def _clean_revision(field: str, row: Any, *, config: Config) -> dict:
    _require_object(field, row, required=REVISION_REQUIRED, optional=_optional(REVISION_FIELDS, REVISION_REQUIRED))
    # History may hold types a later OBSERVATION_TYPES no longer allows: only the slug is checked.
    values, _ = _clean_text_fields(field, row, config=config, allowed_types=None)
    session_id = row.get("session_id")
    return {
        **values,
        "observation_id": _uuid(f"{field}.observation_id", row["observation_id"]),
        "revision": _count(f"{field}.revision", row["revision"], minimum=1),
        "session_id_at_write": None if session_id is None else _uuid(f"{field}.session_id", session_id),
        "happened_at": _timestamp(f"{field}.happened_at", row.get("happened_at", row["written_at"])),
        "written_at": _timestamp(f"{field}.written_at", row["written_at"]),
        "replaced_at": _timestamp(f"{field}.replaced_at", row["replaced_at"]),
    }


def clean_document(data: Any, *, config: Config, scope: str | None = None) -> tuple[list, list, list]:
    """Every row of an export document validated, redacted and limit-checked; nothing is written.

    Each session and observation gets its ``scope``: ``scope`` when given (already clean),
    else the record's own (version 1: the shared space). Raises ValidationError naming the
    first bad field (``observations[3].title``).
    """
    document = _require_object("", data, required=DOCUMENT_REQUIRED, optional=DOCUMENT_FIELDS)
    if document["format"] != FORMAT:
        _fail("format", f"must be {FORMAT!r}.", "invalid_format")
    version = document["version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        _fail("version", f"must be one of {readable}; this version of ilab_memory reads no other.",
              "unsupported_version")
    scoped = version >= 2
    sessions = [
        _clean_session(f"sessions[{i}]", row, config=config, target=scope, scoped=scoped)
        for i, row in enumerate(_rows(document, "sessions"))
    ]
    observations = [
        _clean_observation(f"observations[{i}]", row, config=config, target=scope, scoped=scoped)
        for i, row in enumerate(_rows(document, "observations"))
    ]
    revisions = [
        _clean_revision(f"revisions[{i}]", row, config=config) for i, row in enumerate(_rows(document, "revisions"))
    ]
    _check_references(sessions, observations, revisions, merged=scope is not None)
    return sessions, observations, revisions


def _check_references(sessions: list, observations: list, revisions: list, *, merged: bool) -> None:
    """Unique ids, rows that point at rows of the document, and the document's own invariants.

    ``merged``: every row goes to one scope the import names, so the document's scopes meet
    there; several active sessions or live topics that meet are resolved when written
    (``user_import``), not refused.
    """
    session_scopes: dict = {}
    for i, session in enumerate(sessions):
        if session["id"] in session_scopes:
            _fail(f"sessions[{i}].id", "appears twice in the document.", "duplicate_id")
        session_scopes[session["id"]] = session["scope"]
    active = [s["scope"] for s in sessions if s["status"] == SessionStatus.ACTIVE]
    if not merged and len(active) > len(set(active)):
        _fail("sessions", "hold more than one active session in one scope.", "several_active_sessions")
    observation_ids, live_topics = set(), set()
    for i, observation in enumerate(observations):
        if observation["id"] in observation_ids:
            _fail(f"observations[{i}].id", "appears twice in the document.", "duplicate_id")
        observation_ids.add(observation["id"])
        if observation["session_id"] not in session_scopes:
            _fail(f"observations[{i}].session_id", "names no session of the document.", "unknown_session")
        if observation["scope"] != session_scopes[observation["session_id"]]:
            _fail(f"observations[{i}].scope", "must be the scope of its session: an observation stays in the "
                  "scope of the session that wrote it.", "scope_mismatch")
        topic = (observation["scope"], observation["topic_key"])
        if topic[1] is not None and observation["deleted_at"] is None and not merged:
            if topic in live_topics:
                _fail(f"observations[{i}].topic_key", "is used by another live observation of the document "
                      "in the same scope.", "topic_key_taken")
            live_topics.add(topic)
    revision_keys = set()
    for i, revision in enumerate(revisions):
        key = (revision["observation_id"], revision["revision"])
        if revision["observation_id"] not in observation_ids:
            _fail(f"revisions[{i}].observation_id", "names no observation of the document.", "unknown_observation")
        if key in revision_keys:
            _fail(f"revisions[{i}].revision", "appears twice for the same observation.", "duplicate_id")
        revision_keys.add(key)
