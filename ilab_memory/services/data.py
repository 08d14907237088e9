"""A user's data as a versioned document: export it, import it back, or erase all of it.

The export format (``FORMAT``, ``VERSION``)::

    {"format": "ilab_memory.export", "version": 2, "user_id": "...", "exported_at": "...",
     "sessions": [...], "observations": [...], "revisions": [...]}

Each session and observation names its ``scope`` ("" is the user's shared space); a revision
is in its observation's. Version 1, written before scopes, has no ``scope`` field and is still
read: its rows go to the shared space. Ids are kept, timestamps are ISO 8601 UTC, and nothing
private is in it: private blocks were redacted before they were stored, and an import redacts
again, so a hand-edited document cannot smuggle one in.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from ..conf import Config, get_config
from ..exceptions import ValidationError
from ..models import Observation, ObservationRevision, ObservationVector, Session, SessionStatus, VectorStamp
from ..scopes import ALL, SHARED, Reach, clean_held_scope, clean_read_reach, clean_write_scope
from ..signals import send_on_commit, user_forgotten
from ..sql import lock_user
from ..types import iso
from ..validation import check_length, check_text, clean_choice, clean_type, clean_user_id
from . import embedding
from .observations import clean_fields, dedupe_hash
from .privacy import redact, shown_key
from .sessions import build_auto_summary
from .transactions import atomic_with_retry

FORMAT = "ilab_memory.export"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: before scopes, every row in the shared space
CHUNK = 500  # rows per database round trip; also under SQLite's bound-parameter limit
SPOOL_BYTES = 1 << 20  # revisions waiting for their section stay in memory up to this, then go to disk

SESSION_FIELDS = (
    "id", "scope", "status", "started_at", "last_activity_at", "ended_at", "summary", "is_auto_generated",
    "redacted_blocks",
)
OBSERVATION_FIELDS = (
    "id", "scope", "session_id", "type", "title", "content", "topic_key", "metadata", "revision_count",
    "duplicate_count", "redacted_blocks", "created_at", "updated_at", "last_seen_at", "deleted_at",
)
REVISION_FIELDS = (
    "observation_id", "revision", "session_id", "type", "title", "content", "topic_key", "metadata",
    "written_at", "replaced_at",
)
DOCUMENT_FIELDS = ("format", "version", "user_id", "exported_at", "sessions", "observations", "revisions")
SCOPED = {False: (), True: ("scope",)}  # the record fields a version adds: version 1 has no scope


# -- export ------------------------------------------------------------------------------


def export_reach(scope: Any, *, config: Config) -> Reach:
    """What an export reads: ``ALL`` (also None, the default) every scope; a scope exactly that
    one, without the shared space a read adds to it (an export of a scope imports back into
    that scope alone, also one the settings no longer allow: the data is held); a list exactly
    those. Raises ValidationError("scope", ...) for a bad one."""
    if isinstance(scope, (list, tuple)):
        return clean_read_reach(scope, config=config)
    return Reach.exactly(clean_held_scope(scope, config=config))


def _session_rows(user_id: str, reach: Reach, *, using: str) -> Iterator[dict]:
    rows = (
        Session.objects.using(using).for_user(user_id).filter(reach.q()).order_by("started_at", "id")
        .values(*SESSION_FIELDS).iterator(chunk_size=CHUNK)
    )
    for row in rows:
        yield {
            **row,
            "id": str(row["id"]),
            "started_at": iso(row["started_at"]),
            "last_activity_at": iso(row["last_activity_at"]),
            "ended_at": iso(row["ended_at"]),
        }


def _observation_rows(user_id: str, reach: Reach, *, using: str, history: "_History") -> Iterator[dict]:
    rows = (
        Observation.objects.using(using).for_user(user_id).filter(reach.q())
        .order_by("created_at", "id")
        .values(*OBSERVATION_FIELDS).iterator(chunk_size=CHUNK)
    )
    chunk = []
    for row in rows:
        chunk.append(row["id"])
        yield {
            **row,
            "id": str(row["id"]),
            "session_id": str(row["session_id"]),
            **{name: iso(row[name]) for name in ("created_at", "updated_at", "last_seen_at", "deleted_at")},
        }
        if len(chunk) == CHUNK:
            history.add(chunk)
            chunk = []
    history.add(chunk)


class _History:
    """The revisions of the observations exported so far, read a chunk of observations at a time.

    Read right after the observations they belong to, they can only name observations of the
    document (one created and revised while the export runs is left out with its history). They
    wait for their section as JSON lines in a spooled file: in memory up to ``SPOOL_BYTES``, on
    disk beyond, so the export's memory stays flat however long the history is.
    """

    def __init__(self, user_id: str, *, using: str):
        self.user_id, self.using = user_id, using
        self.file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8")

    def add(self, observation_ids: list) -> None:
        if not observation_ids:
            return
        fields = tuple("session_id_at_write" if f == "session_id" else f for f in REVISION_FIELDS)
        rows = (
            ObservationRevision.objects.using(self.using)
            .filter(user_id=self.user_id, observation_id__in=observation_ids)
            .order_by("observation_id", "revision").values(*fields)
        )
        for row in rows:
            session_id = row.pop("session_id_at_write")
            revision = {
                **row,
                "observation_id": str(row["observation_id"]),
                "session_id": str(session_id) if session_id else None,
                "written_at": iso(row["written_at"]),
                "replaced_at": iso(row["replaced_at"]),
            }
            self.file.write(json.dumps(revision, ensure_ascii=False) + "\n")

    def rows(self) -> Iterator[dict]:
        with self.file:
            self.file.seek(0)
            for line in self.file:
                yield json.loads(line)


def user_export_sections(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default"
):
    """The document's header and three lazy row streams of what ``scope`` reaches
    (``export_reach``), read chunk by chunk.

    Observations are read first, each chunk's revisions right after it, and sessions after the
    observations: nothing can point at a session that is missing (sessions are only removed by
    ``user_forget``, and an observation stays in its session's scope), so the document is
    self-consistent without holding a long transaction open against writers.
    """
    config = config or get_config()
    user_id = clean_user_id(user_id, limit=config.MAX_USER_ID_CHARS)
    reach = export_reach(scope, config=config)
    header = {"format": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": iso(timezone.now())}
    history = _History(user_id, using=using)
    return header, [
        ("observations", _observation_rows(user_id, reach, using=using, history=history)),
        ("sessions", _session_rows(user_id, reach, using=using)),
        ("revisions", history.rows()),
    ]


def user_export(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default"
) -> dict:
    """Everything ``user_id`` has in ``scope`` (default: every scope), as a versioned JSON-ready
    dict. Raises ValidationError for a bad user_id or scope."""
    header, sections = user_export_sections(user_id=user_id, scope=scope, config=config, using=using)
    document = dict(header)
    for name, rows in sections:
        document[name] = list(rows)
    return {name: document[name] for name in DOCUMENT_FIELDS}


def user_export_json(
    *, user_id: str, scope: Any = ALL, config: Config | None = None, using: str = "default", progress=None
) -> Iterator[str]:
    """The export as JSON text in pieces, one row at a time: for files and streaming responses.

    ``progress``, if given, is called with 1 for each row written. A bad user_id or scope
    raises ValidationError when the first piece is asked for.
    """
    header, sections = user_export_sections(user_id=user_id, scope=scope, config=config, using=using)
    yield json.dumps(header, ensure_ascii=False)[:-1]
    for name, rows in sections:
        yield f', "{name}": ['
        for index, row in enumerate(rows):
            yield ("" if index == 0 else ", ") + json.dumps(row, ensure_ascii=False)
            if progress is not None:
                progress(1)
        yield "]"
    yield "}\n"


# -- import: validation ------------------------------------------------------------------


def _fail(field: str, message: str, code: str = "invalid"):
    raise ValidationError(field, message, code=code)


def _require_object(field: str, value: Any, *, required: tuple, optional: tuple = ()) -> dict:
    if not isinstance(value, dict):
        _fail(field, "must be a JSON object.", "invalid_type")
    for key in value:
        if key not in required and key not in optional:
            name = shown_key(key)  # never a private block in an error (SPEC §4)
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
        parsed = parsed.astimezone(dt_timezone.utc)
    except OverflowError:
        parsed = None
    # A bounded range keeps the timeout arithmetic done on imported times from overflowing.
    if parsed is None or not TIMESTAMP_YEARS[0] <= parsed.year <= TIMESTAMP_YEARS[1]:
        _fail(field, f"must lie between the years {TIMESTAMP_YEARS[0]} and {TIMESTAMP_YEARS[1]}.", "invalid_timestamp")
    return parsed


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
    _require_object(field, row, required=("id", "status", "started_at", "last_activity_at"),
                    optional=("ended_at", "summary", "is_auto_generated", "redacted_blocks", *SCOPED[scoped]))
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
    """Title, content, type, topic_key and metadata through the same checks as a save."""
    try:
        type_ = clean_type(row.get("type", "manual"), allowed=allowed_types)
        fields = clean_fields(
            config=config, title=row["title"], content=row["content"],
            topic_key=row.get("topic_key"), metadata=row.get("metadata"),
        )
    except ValidationError as error:
        inner = "type" if error.field == "type" else error.field
        raise ValidationError(
            f"{field}.{inner}", error.message, code=error.code, limit=error.limit, size=error.size
        ) from None
    return {**fields.values, "type": type_}, fields.redacted_blocks


def _clean_observation(field: str, row: Any, *, config: Config, target: str | None, scoped: bool) -> dict:
    _require_object(
        field, row,
        required=("id", "session_id", "title", "content", "created_at"),
        optional=("type", "topic_key", "metadata", "revision_count", "duplicate_count", "redacted_blocks",
                  "updated_at", "last_seen_at", "deleted_at", *SCOPED[scoped]),
    )
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
        "last_seen_at": _timestamp(f"{field}.last_seen_at", row.get("last_seen_at", row["created_at"])),
        "deleted_at": _timestamp(f"{field}.deleted_at", row.get("deleted_at"), nullable=True),
    }


def _clean_revision(field: str, row: Any, *, config: Config) -> dict:
    _require_object(
        field, row,
        required=("observation_id", "revision", "title", "content", "written_at", "replaced_at"),
        optional=("session_id", "type", "topic_key", "metadata"),
    )
    # History may hold types a later OBSERVATION_TYPES no longer allows: only the slug is checked.
    values, _ = _clean_text_fields(field, row, config=config, allowed_types=None)
    session_id = row.get("session_id")
    return {
        **values,
        "observation_id": _uuid(f"{field}.observation_id", row["observation_id"]),
        "revision": _count(f"{field}.revision", row["revision"], minimum=1),
        "session_id_at_write": None if session_id is None else _uuid(f"{field}.session_id", session_id),
        "written_at": _timestamp(f"{field}.written_at", row["written_at"]),
        "replaced_at": _timestamp(f"{field}.replaced_at", row["replaced_at"]),
    }


def clean_document(data: Any, *, config: Config, scope: str | None = None) -> tuple[list, list, list]:
    """Every row of an export document validated, redacted and limit-checked; nothing is written.

    Each session and observation gets its ``scope``: ``scope`` when given (already clean),
    else the record's own (version 1: the shared space). Raises ValidationError naming the
    first bad field (``observations[3].title``).
    """
    document = _require_object("", data, required=("format", "version"), optional=DOCUMENT_FIELDS)
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


# -- import: writing ---------------------------------------------------------------------


def _chunks(items: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _owners(model, ids: list, *, using: str) -> dict:
    """id -> (user_id, scope) for the ids that already exist, read in chunks."""
    owners = {}
    for chunk in _chunks(ids):
        rows = model.objects.using(using).filter(pk__in=chunk).values_list("pk", "user_id", "scope")
        owners.update((pk, (user_id, scope)) for pk, user_id, scope in rows)
    return owners


def _refuse_foreign(kind: str, rows: list, owners: dict, user_id: str) -> None:
    for i, row in enumerate(rows):
        owner = owners.get(row["id"])
        if owner is not None and owner[0] != user_id:
            _fail(f"{kind}[{i}].id", "is already taken by a row of another user; nothing was imported.",
                  "id_taken")


def _refuse_scope_moves(observations: list, observation_owners: dict, session_owners: dict) -> None:
    """A new observation whose session the user already has, in another scope (the document was
    imported before into another scope): it would leave its session's scope."""
    for i, observation in enumerate(observations):
        if observation["id"] in observation_owners:
            continue
        owner = session_owners.get(observation["session_id"])
        if owner is not None and owner[1] != observation["scope"]:
            _fail(f"observations[{i}].session_id", "names a session this user already has in another scope; "
                  "nothing was imported.", "scope_mismatch")


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
        conflicts = _hide_topic_conflicts(user_id, new_observations, now=now, using=using)
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


def _hide_topic_conflicts(user_id: str, observations: list, *, now: datetime, using: str) -> int:
    """Import as soft-deleted a live observation whose topic_key a live one of the same scope
    here already uses, or a later one of the document (several meet in the scope an import names).

    The memory the user has now wins, then the one updated last; the others stay restorable
    once the topic is free.
    """
    wanted = {o["topic_key"] for o in observations if o["topic_key"] is not None and o["deleted_at"] is None}
    taken = set()
    for chunk in _chunks(sorted(wanted)):
        # The topic in any of the user's scopes: a few more rows than needed, one query a chunk.
        taken.update(
            Observation.objects.using(using).live_for_user(user_id).filter(topic_key__in=chunk)
            .values_list("scope", "topic_key")
        )
    hidden = 0
    for observation in _latest_first([o for o in observations if o["deleted_at"] is None], "updated_at"):
        topic = (observation["scope"], observation["topic_key"])
        if topic in taken:
            observation["deleted_at"] = now
            hidden += 1
        elif topic[1] is not None:
            taken.add(topic)
    return hidden


# -- erasure -----------------------------------------------------------------------------


ADMIN_LOG_BATCH = 500


def _forget_admin_log_labels(model, pks) -> None:
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
        _forget_admin_log_labels(Session, session_ids)
        _forget_admin_log_labels(Observation, observations_erased.values_list("pk", flat=True).iterator())
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
            _compact_sqlite_search_index(connection)
        counts = {"sessions": sessions, "observations": observations, "revisions": revisions, "vectors": vectors}
        if whole_user:
            send_on_commit(user_forgotten, Session, using=using, user_id=user_id, counts=counts)
        return counts

    if sqlite:
        with _secure_delete(connection):
            counts = atomic_with_retry(run, using=using)
    else:
        counts = atomic_with_retry(run, using=using)
    if sqlite:
        # Old page versions still sit in the write-ahead log until a checkpoint rewrites it.
        transaction.on_commit(lambda: _checkpoint_wal(using), using=using)
    return counts


@contextmanager
def _secure_delete(connection):
    """SQLite overwrites deleted cells with zeros while the erasure runs, instead of leaving
    them in free pages; the connection's own setting is put back afterwards."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        before = cursor.fetchone()[0]
        cursor.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA secure_delete = {int(before)}")


def _compact_sqlite_search_index(connection) -> None:
    """Rewrite the FTS5 index without the deleted entries.

    An FTS5 delete only records a tombstone; the words stay in the old index segments until
    they are merged. 'optimize' merges every segment now, and secure_delete zeroes the pages
    the old segments leave behind. Its cost grows with the whole index, which is acceptable
    for an erasure, a rare operation.
    """
    from .search import SQLITE_TABLE

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [SQLITE_TABLE])
        if cursor.fetchone():
            cursor.execute(f"INSERT INTO {SQLITE_TABLE} ({SQLITE_TABLE}) VALUES ('optimize')")


def _checkpoint_wal(using: str) -> None:
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
