"""The few statements the ORM cannot express, each with why. Everything else is the ORM.

Django 5.2 has no ``UPDATE … RETURNING``, no per-transaction advisory lock, and would rank the
context candidates only after fetching them all. Each function here runs one statement on the
connection ``using``, scoped by ``user_id`` (or by an id the caller already scoped), and
returns rows through ``fetch_rows``, each value converted exactly as the ORM converts it. The
engine-specific full-text SQL lives with search (``services/search/sqlite.py`` and
``postgresql.py``), whose rows ``services/search/lexical.py`` reads the same way.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import namedtuple
from datetime import datetime
from functools import cache, lru_cache

from django.db import connections

from . import scoring
from .models import Observation, ObservationRevision, ObservationVector, Session, SessionStatus

OBS = Observation._meta.db_table
REVISION = ObservationRevision._meta.db_table
VECTOR = ObservationVector._meta.db_table
SESSION = Session._meta.db_table
ACTIVE = SessionStatus.ACTIVE.value
OBSERVATION_COLUMNS = ", ".join(field.column for field in Observation._meta.concrete_fields)
OBSERVATION_FIELDS = tuple(field.attname for field in Observation._meta.concrete_fields)
INSERT_OBSERVATION = f"""
    INSERT INTO {OBS} ({OBSERVATION_COLUMNS})
    VALUES ({", ".join(["%s"] * len(OBSERVATION_FIELDS))})"""


@cache
def _row_type(model, columns: tuple[str, ...]):
    return namedtuple(f"{model.__name__}Row", columns)


@lru_cache(maxsize=64)
def _converters(model, columns: tuple[str, ...], connection) -> tuple:
    """Per column, the functions the ORM applies to a value of that field on this connection
    (the backend's, then the field's own); none for a computed column. Cached: the same few
    statements run on every write."""
    fields = {field.attname: field for field in model._meta.concrete_fields}
    converters = []
    for name in columns:
        field = fields.get(name)
        if field is None:  # a computed column: a count, a score factor, a text head
            converters.append(())
            continue
        column = field.get_col(model._meta.db_table)
        converters.append(tuple(connection.ops.get_db_converters(column)) + tuple(field.get_db_converters(connection)))
    return tuple(converters)


def fetch_rows(cursor, model, columns: tuple[str, ...], connection) -> list:
    """The cursor's rows as named tuples of ``columns``, each value converted as the ORM would.

    Building model instances (``Manager.raw``) for the few rows of a hot read cost more than
    running its SQL (measured: 4.2 against 1.4 ms for the ranked context on SQLite).
    """
    converters = _converters(model, columns, connection)
    row_type = _row_type(model, columns)
    expressions = [None] * len(columns)
    rows = []
    for raw in cursor.fetchall():
        values = []
        for value, functions, expression in zip(raw, converters, expressions):
            for convert in functions:
                value = convert(value, expression, connection)
            values.append(value)
        rows.append(row_type(*values))
    return rows


def _db(model, field: str, value, connection):
    """``value`` as the ORM would send it for ``model.field`` (UUID hex on SQLite, text times…)."""
    return _prepared(model._meta.get_field(field), value, connection)


def _prepared(field, value, connection):
    """``value`` as ``save`` sends it for ``field`` on ``connection``."""
    if isinstance(value, datetime):
        return _db_time(value, connection, connection.timezone_name)
    return field.get_db_prep_save(value, connection)


_TIME_FIELD = Observation._meta.get_field("created_at")


@lru_cache(maxsize=16)
def _db_time(value: datetime, connection, timezone_name: str):
    """A time as every ``DateTimeField`` sends it on ``connection`` (in ``timezone_name``, part
    of the key so a changed TIME_ZONE is not served stale). Cached: one save sends the same
    ``now`` to several statements and columns (six on a create)."""
    return _TIME_FIELD.get_db_prep_save(value, connection)


def lock_user(user_id: str, *, using: str) -> None:
    """PostgreSQL: hold a per-user lock until the transaction ends (other engines: nothing).

    ``SELECT … FOR UPDATE`` cannot lock a row that does not exist yet: when a user has no
    active session, every concurrent writer would open one, all but one would hit the
    one-active-session constraint, and under steady churn a writer could lose every retry.
    The advisory lock queues one user's session openers instead. SQLite needs none: its
    IMMEDIATE transaction already holds the database's write lock.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"ilab_memory.session:{user_id}".encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)])


BUMP_LIVE_SESSION = f"""
    UPDATE {SESSION} SET last_activity_at = %s
    WHERE user_id = %s AND status = '{ACTIVE}' AND last_activity_at >= %s
    RETURNING id"""


def bump_live_session(user_id: str, *, now: datetime, live_since: datetime, using: str) -> uuid.UUID | None:
    """The id of the user's active session last active at or after ``live_since``, bumped to ``now``.

    Why raw: every start and write begins here, and finding the session and keeping it alive is
    one statement with RETURNING (the ORM needs an UPDATE and a SELECT). The UPDATE also takes
    the session's row lock, which queues the user's writers on PostgreSQL. None: the user has
    no active session, or it expired (the caller decides).
    """
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(BUMP_LIVE_SESSION, [
            _db(Session, "last_activity_at", now, connection), user_id,
            _db(Session, "last_activity_at", live_since, connection),
        ])
        row = cursor.fetchone()
    return None if row is None else Session._meta.pk.to_python(row[0])


def insert_observation(observation: Observation, *, using: str) -> None:
    """Store a new ``Observation`` instance (every field set by the caller) as its row.

    Why raw: a create is the hot write, and ``save(force_insert=True)`` builds this same
    statement again on every call at about five times the cost of running it (measured on
    SQLite: 0.10 against 0.02 ms, a quarter of a save). The columns are the model's own, and
    each value is prepared by its field exactly as ``save`` prepares it.
    """
    connection = connections[using]
    params = [_prepared(field, getattr(observation, field.attname), connection)
              for field in Observation._meta.concrete_fields]
    with connection.cursor() as cursor:
        cursor.execute(INSERT_OBSERVATION, params)
    observation._state.adding = False
    observation._state.db = using


# ``deleted_at IS NULL`` again outside the subquery: PostgreSQL re-checks it after waiting for
# a concurrent soft delete, so a deleted row is never counted. ``coalesce(topic_key, %s)``: a
# repeat naming a topic the first save lacked keeps it (no live row holds that topic, or the
# save would have revised it), so the next save of the topic revises this row.
COUNT_DUPLICATE = f"""
    UPDATE {OBS} SET duplicate_count = duplicate_count + 1, redacted_blocks = redacted_blocks + %s,
        session_id = %s, last_seen_at = %s, topic_key = coalesce(topic_key, %s)
    WHERE id = (
        SELECT id FROM {OBS}
        WHERE user_id = %s AND dedupe_hash = %s AND created_at >= %s AND deleted_at IS NULL
        ORDER BY created_at DESC LIMIT 1
    ) AND deleted_at IS NULL
    RETURNING {OBSERVATION_COLUMNS}"""


def count_duplicate(*, user_id: str, digest: str, since: datetime, session_id: uuid.UUID, now: datetime,
                    blocks: int, topic_key: str | None, using: str):
    """Count a repeat on the user's newest live twin created at or after ``since``; None if none.

    Why raw: finding the twin, counting it, moving it to the session and reading it back is
    one statement (the ORM needs a locked read and an update). Returns its row (every field).
    """
    connection = connections[using]
    params = [
        blocks, _db(Observation, "session", session_id, connection), _db(Observation, "last_seen_at", now, connection),
        topic_key, user_id, digest, _db(Observation, "created_at", since, connection),
    ]
    with connection.cursor() as cursor:
        cursor.execute(COUNT_DUPLICATE, params)
        rows = fetch_rows(cursor, Observation, OBSERVATION_FIELDS, connection)
    return rows[0] if rows else None


# Each replace keeps the current version in the history, then writes the new one over it. The
# history row is copied by the database (INSERT … SELECT), which on PostgreSQL also locks the
# row (a concurrent soft delete waits, or has already won and the copy finds nothing).
KEEP_REVISION = {
    vendor: f"""
    INSERT INTO {REVISION} (observation_id, user_id, revision, session_id_at_write, type, title, content,
                            topic_key, metadata, written_at, replaced_at)
    SELECT id, user_id, revision_count, session_id, type, title, content, topic_key, metadata, updated_at, %s
    FROM {OBS} WHERE user_id = %s AND {{match}} = %s AND deleted_at IS NULL{lock}"""
    for vendor, lock in (("sqlite", ""), ("postgresql", " FOR UPDATE"))
}
REPLACE = f"""
    UPDATE {OBS} SET type = %s, title = %s, content = %s, topic_key = %s, metadata = %s, dedupe_hash = %s,
        revision_count = revision_count + 1, redacted_blocks = redacted_blocks + %s,
        session_id = %s, updated_at = %s, last_seen_at = %s
    WHERE user_id = %s AND {{match}} = %s AND deleted_at IS NULL
    RETURNING {OBSERVATION_COLUMNS}"""
MATCHES = {"id": "id", "topic_key": "topic_key"}


def replace_observation(*, user_id: str, match: str, key, values: dict, dedupe_hash: str, blocks: int,
                        session_id: uuid.UUID, now: datetime, using: str):
    """Replace the user's live observation whose ``match`` ("id" or "topic_key") is ``key`` with
    ``values`` (type, title, content, topic_key, metadata: all of them), its current version
    kept in the history first; it moves to ``session_id``. Returns its new row, or None when
    no live observation matches.

    Why raw: a revise is the hot write of an agent that keeps a topic up to date; copying the
    old version and writing the new one are two statements (the ORM needs a locked read, an
    INSERT of the copy and an UPDATE, each compiled on every call: measured, 4× the time).
    """
    connection = connections[using]
    column = MATCHES[match]
    key = _db(Observation, column, key, connection)
    at = _db(Observation, "updated_at", now, connection)  # every time column alike: replaced, updated, seen
    with connection.cursor() as cursor:
        cursor.execute(KEEP_REVISION[connection.vendor].format(match=column), [at, user_id, key])
        if cursor.rowcount == 0:
            return None
        cursor.execute(REPLACE.format(match=column), [
            values["type"], values["title"], values["content"], values["topic_key"],
            _db(Observation, "metadata", values["metadata"], connection), dedupe_hash, blocks,
            _db(Observation, "session", session_id, connection), at, at, user_id, key,
        ])
        rows = fetch_rows(cursor, Observation, OBSERVATION_FIELDS, connection)
    return rows[0]


# The vector queue, written with every create and revise. Why raw: each is one fixed statement
# that the ORM compiles again on every call, several times its cost to run (measured on SQLite:
# an insert 0.10 against 0.02 ms, the requeue's update 0.22 against 0.02 ms; a save costs about
# 0.4 ms in all). What a queued row holds is decided here only: no model, no vector, no lease.
FIRST_GENERATION = int(ObservationVector._meta.get_field("generation").default)
QUEUE_VECTOR = f"""
    INSERT INTO {VECTOR} (observation_id, user_id, generation, queued_at)
    VALUES (%s, %s, {FIRST_GENERATION}, %s)"""
REQUEUE_VECTOR = f"""
    UPDATE {VECTOR} SET model_id = NULL, dimensions = NULL, vector = NULL, generation = generation + 1,
        queued_at = %s, claimed_until = NULL, embedded_at = NULL
    WHERE observation_id = %s"""
DROP_VECTOR = f"DELETE FROM {VECTOR} WHERE observation_id = %s"


def queue_vectors(observations, *, now: datetime, using: str) -> None:
    """Put each of ``observations`` (instances or rows with ``id`` and ``user_id``, none queued
    yet) in the vector queue."""
    connection = connections[using]
    at = _db(ObservationVector, "queued_at", now, connection)
    params = [(_db(ObservationVector, "observation", o.id, connection), o.user_id, at) for o in observations]
    if not params:
        return
    with connection.cursor() as cursor:
        cursor.executemany(QUEUE_VECTOR, params)


def requeue_vector(observation_id: uuid.UUID, *, now: datetime, using: str) -> bool:
    """Put the observation's vector row back in the queue as a new generation (its text
    changed); False when it has none."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(REQUEUE_VECTOR, [
            _db(ObservationVector, "queued_at", now, connection),
            _db(ObservationVector, "observation", observation_id, connection),
        ])
        return cursor.rowcount > 0


def drop_vector(observation_id: uuid.UUID, *, using: str) -> None:
    """Remove the observation's vector row, if any."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(DROP_VECTOR, [_db(ObservationVector, "observation", observation_id, connection)])


# The user's rows in an order only the user's own index (ilab_mem_obs_user_updated) gives, so
# the planner cannot walk the all-users (updated_at, id) index and skip other users' newer rows
# one by one (unbounded as others write more). On PostgreSQL ``= ANY(ARRAY[x])`` is the same
# test as ``= x`` without letting the planner fold user_id into a constant and drop it from
# the ORDER BY. tests/test_sql.py checks the plan with a heavy and a light user.
OWN_ROWS = {"sqlite": "user_id = %s", "postgresql": "user_id = ANY(ARRAY[%s]::text[])"}


RANKED_COLUMNS = ("id", "type", "title", "topic_key", "session_id", "updated_at", "content_head", "hours",
                  "type_weight", "recency", "reinforcement", "score")


@cache
def ranked_context_sql(vendor: str, weighted_types: int, candidates: int, limit: int) -> str:
    # Limits are validated integer settings, written into the text (not parameters) so the
    # planner sees them. Rank, cut to the winners, and only then join for their text: a join
    # before the cut fetched every candidate's row on both engines.
    return f"""
    SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at,
           substr(o.content, 1, %s) AS content_head, w.hours, w.type_weight, w.recency, w.reinforcement, w.score
    FROM (
        SELECT id, updated_at, hours, type_weight, {scoring.SCORE_COLUMNS}
        FROM (
            SELECT id, updated_at, {scoring.factor_columns(vendor, weighted_types)}
            FROM {OBS}
            WHERE {OWN_ROWS[vendor]} AND deleted_at IS NULL
            ORDER BY user_id, updated_at DESC, id DESC
            LIMIT {int(candidates)}
        ) c
        ORDER BY score DESC, updated_at DESC, id DESC
        LIMIT {int(limit)}
    ) w JOIN {OBS} o ON o.id = w.id
    ORDER BY w.score DESC, w.updated_at DESC, w.id DESC"""


def ranked_context(user_id: str, *, now: datetime, type_weights: dict[str, float], head_chars: int,
                   candidates: int, limit: int, using: str) -> list:
    """The ``limit`` best by ContextScore of the user's newest ``candidates`` live observations.

    Why raw: the database scores the candidates and returns only the winners (with the ORM all
    candidates come back to be scored in Python: measured, several times slower on every start).
    Each row carries ``content_head`` and the score's factors (see ``scoring``); the order is
    score, then newest update, then id.
    """
    connection = connections[using]
    sql = ranked_context_sql(connection.vendor, len(type_weights), candidates, limit)
    now_param = _db(Observation, "updated_at", now, connection)
    params = [head_chars, *scoring.factor_params(now_param=now_param, type_weights=type_weights), user_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return fetch_rows(cursor, Observation, RANKED_COLUMNS, connection)


# The newest completed sessions of a user, each with its live observations counted by a
# subquery (per session returned, through the (session, created_at) index).
@cache
def recent_sessions_sql(limit: int) -> str:
    return f"""
    SELECT s.id, s.started_at, s.ended_at, s.summary, s.is_auto_generated,
           (SELECT count(*) FROM {OBS} o WHERE o.session_id = s.id AND o.deleted_at IS NULL) AS observation_count
    FROM {SESSION} s
    WHERE s.user_id = %s AND s.status = '{SessionStatus.COMPLETED.value}'
    ORDER BY s.ended_at DESC, s.id DESC
    LIMIT {int(limit)}"""


RECENT_COLUMNS = ("id", "started_at", "ended_at", "summary", "is_auto_generated", "observation_count")


def recent_sessions(user_id: str, *, limit: int, using: str) -> list:
    """The user's ``limit`` newest completed sessions with their live observation counts.

    Why raw: every start reads them, and compiling the ORM query with its count subquery cost
    several times running it (measured: 4.3 of 8.7 ms on SQLite)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(recent_sessions_sql(limit), [user_id])
        return fetch_rows(cursor, Session, RECENT_COLUMNS, connection)
