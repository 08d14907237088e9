"""The fixed SQL of the hot paths (start, save, context), in the fewest statements.

Measured (benchmarks/perf.py, cProfile): building an ORM query and its model instances cost
several times running the SQL, and an agent calls these on every turn. So these statements run
on the connection's cursor, with plain values in and out (``DbValues`` converts them as the ORM
would); the session slow path (open, auto-close) gets model instances built by ``from_db``.
The decisions stay in ``sessions`` and ``observations``; every statement here is scoped by
``user_id`` or by an id the caller already scoped.

Row limits are written into the SQL, not passed as parameters: with ``LIMIT $n`` a prepared
statement's generic plan cannot know how many rows come back, so PostgreSQL kept planning anew
(measured: the recent-sessions read never got a generic plan). They come from validated
integer settings, and each text is built once per value.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from functools import cache

from ..conf import get_config
from ..dbvalues import DbValues
from ..models import Observation, ObservationRevision, Session, SessionStatus
from . import scoring
from .prepared import cursor_opener
from .transactions import RaceLost

OBS = Observation._meta.db_table
SESSION = Session._meta.db_table
REVISION = ObservationRevision._meta.db_table
ACTIVE, COMPLETED = SessionStatus.ACTIVE.value, SessionStatus.COMPLETED.value

# Every column of an ObservationRecord, in the order ``records.observation_record_from_row`` reads.
RECORD_COLUMNS = (
    "id, user_id, session_id, type, title, content, topic_key, metadata, revision_count, "
    "duplicate_count, redacted_blocks, created_at, updated_at, last_seen_at, deleted_at"
)

# Finding the live session and keeping it alive is one statement: the UPDATE also takes the
# session's row lock, which queues the user's writers on PostgreSQL (SQLite's IMMEDIATE
# transaction already holds the write lock). No row: none, or expired (the ORM path decides).
BUMP_LIVE_SESSION = f"""
    UPDATE {SESSION} SET last_activity_at = %s
    WHERE user_id = %s AND status = '{ACTIVE}' AND last_activity_at >= %s
    RETURNING id"""

SESSION_FIELDS = [field.attname for field in Session._meta.concrete_fields]
SESSION_COLUMNS = ", ".join(field.column for field in Session._meta.concrete_fields)
ACTIVE_SESSION = f"SELECT {SESSION_COLUMNS} FROM {SESSION} WHERE user_id = %s AND status = '{ACTIVE}'"
INSERT_SESSION = f"""
    INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, redacted_blocks)
    VALUES (%s, %s, '{ACTIVE}', %s, %s, %s, 0)"""



# A session's live observations in creation order (the synthetic summary), and their number.
@cache
def summary_items_sql(limit: int) -> str:
    return f"""
    SELECT type, title FROM {OBS} WHERE session_id = %s AND deleted_at IS NULL
    ORDER BY created_at, id LIMIT {int(limit)}"""


LIVE_IN_SESSION = f"SELECT count(*) FROM {OBS} WHERE session_id = %s AND deleted_at IS NULL"
CLOSE_SESSION = f"""
    UPDATE {SESSION} SET status = '{COMPLETED}', ended_at = %s, summary = %s, is_auto_generated = %s,
        redacted_blocks = %s
    WHERE id = %s"""

# Keeping an observation's current version in the history before a write replaces it; it
# returns the id of the row copied, or nothing. By topic, finding the live observation of the
# topic and keeping its version is one statement.
_KEEP_REVISION = f"""
    INSERT INTO {REVISION} (observation_id, user_id, revision, session_id_at_write, type, title,
                            content, topic_key, metadata, written_at, replaced_at)
    SELECT id, user_id, revision_count, session_id, type, title, content, topic_key, metadata,
           updated_at, %s
    FROM {OBS} WHERE user_id = %s AND {{where}}
    RETURNING observation_id"""
KEEP_TOPIC_REVISION = _KEEP_REVISION.format(where="topic_key = %s AND deleted_at IS NULL")
KEEP_REVISION = _KEEP_REVISION.format(where="id = %s")

# ``deleted_at IS NULL`` again in the outer WHERE: PostgreSQL re-checks it after waiting for a
# concurrent soft delete, so a deleted row is never revised or counted.
_REVISE = f"""
    UPDATE {OBS} SET type = %s, title = %s, content = %s, metadata = %s, dedupe_hash = %s,
        revision_count = revision_count + 1, redacted_blocks = redacted_blocks + %s,
        session_id = %s, updated_at = %s, last_seen_at = %s
    WHERE id = {{which}} AND user_id = %s AND deleted_at IS NULL
    RETURNING {RECORD_COLUMNS}"""
REVISE = _REVISE.format(which="%s")

# PostgreSQL: keep the topic's version and replace it in one statement (one round trip less).
# One snapshot is safe here because the caller's bump holds the session's row lock: no other
# save or update of the user runs in between, and a concurrent soft delete is re-checked by
# the UPDATE after its wait. The first column tells "no such topic" (0 kept) from "deleted
# meanwhile" (kept, but nothing revised).
REVISE_TOPIC_IN_ONE = f"""
    WITH kept AS ({KEEP_TOPIC_REVISION}),
    revised AS ({_REVISE.format(which="(SELECT observation_id FROM kept)")})
    SELECT (SELECT count(*) FROM kept), revised.* FROM (SELECT 1) AS one LEFT JOIN revised ON true"""

_DUPLICATE = """
    UPDATE {obs} SET duplicate_count = duplicate_count + 1, redacted_blocks = redacted_blocks + %s,
        session_id = %s, last_seen_at = %s{adopt_topic}
    WHERE id = (
        SELECT id FROM {obs}
        WHERE user_id = %s AND dedupe_hash = %s AND created_at >= %s AND deleted_at IS NULL
        ORDER BY created_at DESC LIMIT 1
    ) AND deleted_at IS NULL
    RETURNING {columns}"""
COUNT_DUPLICATE = _DUPLICATE.format(obs=OBS, adopt_topic="", columns=RECORD_COLUMNS)
# The repeat names a topic the first save lacked (no live row holds it, or the save would have
# revised): keep it, so the next save revises this row.
COUNT_DUPLICATE_ADOPT_TOPIC = _DUPLICATE.format(
    obs=OBS, adopt_topic=", topic_key = coalesce(topic_key, %s)", columns=RECORD_COLUMNS
)

_NEW_OBSERVATION = "%s, %s, %s, %s, %s, %s, %s, %s, 1, 1, %s, %s, %s, %s, NULL::timestamptz, %s"
INSERT_OBSERVATION = f"""
    INSERT INTO {OBS} ({RECORD_COLUMNS}, dedupe_hash)
    VALUES ({_NEW_OBSERVATION.replace("::timestamptz", "")})"""

# PostgreSQL: count the repeat, or insert when there is none, in one statement after the bump
# (one round trip less). Safe for the same reason as the revise: the bump's row lock keeps the
# user's other saves out, so the twin this snapshot misses does not exist. The first column
# tells a created row (1) from a counted twin (0, then the twin's columns).
_COUNT_DUPLICATE_OR_INSERT = f"""
    WITH twin AS ({{duplicate}}),
    created AS (
        INSERT INTO {OBS} ({RECORD_COLUMNS}, dedupe_hash)
        SELECT {_NEW_OBSERVATION} WHERE NOT EXISTS (SELECT 1 FROM twin)
        RETURNING id
    )
    SELECT (SELECT count(*) FROM created), twin.* FROM (SELECT 1) AS one LEFT JOIN twin ON true"""
COUNT_DUPLICATE_OR_INSERT = {
    adopt: _COUNT_DUPLICATE_OR_INSERT.format(duplicate=COUNT_DUPLICATE_ADOPT_TOPIC if adopt else COUNT_DUPLICATE)
    for adopt in (False, True)
}



# The newest completed sessions with their live observation counts (sessions_context).
@cache
def recent_sessions_sql(limit: int, *, also: str = "") -> str:
    """``also``: a SELECT of more candidate sessions (the start adds the one it just closed)."""
    newest_completed = f"""
        SELECT id, started_at, ended_at, summary, is_auto_generated FROM {SESSION}
        WHERE user_id = %s AND status = '{COMPLETED}'
        ORDER BY ended_at DESC, id DESC LIMIT {int(limit)}"""
    candidates = f"{also} UNION ALL ({newest_completed})" if also else newest_completed
    return f"""
    SELECT s.id, s.started_at, s.ended_at, s.summary, s.is_auto_generated,
           (SELECT count(*) FROM {OBS} o WHERE o.session_id = s.id AND o.deleted_at IS NULL) AS n
    FROM ({candidates}) s
    ORDER BY s.ended_at DESC, s.id DESC
    LIMIT {int(limit)}"""


# A user's newest live observations (the ContextScore candidates) through ilab_mem_obs_user_updated.
@cache
def context_candidates_sql(limit: int) -> str:
    return f"""
    SELECT id, type, title, topic_key, session_id, updated_at, substr(content, 1, %s),
           revision_count, duplicate_count
    FROM {OBS}
    WHERE user_id = %s AND deleted_at IS NULL
    ORDER BY updated_at DESC, id DESC
    LIMIT {int(limit)}"""


# updated_at in exact microseconds since the epoch. SQLite stores Django's UTC text
# "YYYY-MM-DD HH:MM:SS[.ffffff]": whole seconds from the first 19 characters (strftime would
# round the fraction to milliseconds, and .9995 s up to the next second), then the digits.
# PostgreSQL 14+ returns EXTRACT(EPOCH ...) as exact numeric.
EPOCH_MICROS = {
    "sqlite": "(CAST(strftime('%%s', substr(updated_at, 1, 19)) AS INTEGER) * 1000000"
              " + CAST(substr(updated_at || '.000000', 21, 6) AS INTEGER))",
    "postgresql": "(EXTRACT(EPOCH FROM updated_at) * 1000000)",
}
GREATEST = {"sqlite": "max", "postgresql": "greatest"}

# The user's candidates, in an order only the user's own index (ilab_mem_obs_user_updated)
# gives, so no planner reads them through another one. One parameter: user_id.
# PostgreSQL: with ``user_id = x`` the planner treats user_id as a constant and may walk the
# all-users (updated_at, id) index, skipping other users' newer rows one by one (measured:
# 4,238 skipped, 2.6 ms, for a user with 45 % of the table), unbounded as others write more.
# ``= ANY(ARRAY[x])`` is the same test without that shortcut, and the generic plan (prepared
# statements) estimates its rows like ``=``. The earlier ``BETWEEN x AND x`` had the order but
# a range's fixed guess of 0.5 % of the table: on a small table with one heavy user the generic
# plan then sorted all of that user's rows (measured: 13.8 ms instead of 0.4 at 10,000 rows,
# growing with the history). tests/test_context_sql.py checks both plans in both situations.
OWN_ROWS = {"sqlite": "user_id = %s", "postgresql": "user_id = ANY(ARRAY[%s]::text[])"}


@cache
def ranked_context_sql(vendor: str, weighted_types: int, candidates: int, limit: int) -> str:
    """The newest candidates ranked by ContextScore in the database: only the winners come back.

    Same order as ranking in Python: score, then newest update, then id (the 32 hex digits on
    SQLite sort like the UUID bytes on PostgreSQL).
    """
    score = scoring.context_value_sql(
        epoch_micros=EPOCH_MICROS[vendor], greatest=GREATEST[vendor], weighted_types=weighted_types
    )
    # Rank, cut to the winners, and only then join for their text: a join before the cut
    # would fetch every candidate's row (both planners did, measured).
    return f"""
    SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at, substr(o.content, 1, %s)
           AS content_head, o.revision_count, o.duplicate_count, w.score
    FROM (
        SELECT id, updated_at, score FROM (
            SELECT id, updated_at, {score} AS score
            FROM {OBS}
            WHERE {OWN_ROWS[vendor]} AND deleted_at IS NULL
            ORDER BY user_id, updated_at DESC, id DESC
            LIMIT {int(candidates)}
        ) c
        ORDER BY score DESC, updated_at DESC, id DESC
        LIMIT {int(limit)}
    ) w JOIN {OBS} o ON o.id = w.id
    ORDER BY w.score DESC, w.updated_at DESC, w.id DESC"""


# PostgreSQL: a start in one statement, so one round trip, committed on its own (or part of the
# caller's transaction). It bumps the user's live session; or auto-closes an expired one and
# opens the next; or opens one when the user has no active session at all. ON CONFLICT DO
# NOTHING waits for a concurrent opener and then yields to it. Only when a session was claimed
# does it read the context (a one-time filter, so PostgreSQL skips the reads otherwise).
# Claimed nothing: a concurrent writer changed the active session after this statement's
# snapshot (closed it, or opened one first); the caller runs the statement again.
# Each part of the result keeps its order through ``ord``; columns a part does not use are NULL.
#   part 0, the claimed session: id, flag is_new
#   part 1, a recent session:    id, at1 started_at, at2 ended_at, text1 summary, flag, n1 count
#   part 2, a ranked memory:     id, at1 updated_at, text1 title, text2 content head, text3
#                                topic_key, text4 type, ref session_id, n1 revisions, n2 duplicates
OPEN_IF_NONE_ACTIVE = f"""
    INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, redacted_blocks)
    SELECT %s, %s, '{ACTIVE}', %s, %s, false, 0
    WHERE NOT EXISTS (SELECT 1 FROM {SESSION} WHERE user_id = %s AND status = '{ACTIVE}'){{or_closed}}
    ON CONFLICT (user_id) WHERE status = '{ACTIVE}' DO NOTHING
    RETURNING id"""
# The statement's snapshot still shows the session it closed as active: it also opens when it
# closed one. Reading ``closed`` runs that UPDATE first, and the unique index does not count
# a row this transaction has already replaced, so the INSERT cannot conflict with it.
OPEN_IF_NONE_ACTIVE_OR_CLOSED = OPEN_IF_NONE_ACTIVE.format(or_closed=" OR EXISTS (SELECT 1 FROM closed)")
OPEN_IF_NONE_ACTIVE = OPEN_IF_NONE_ACTIVE.format(or_closed="")

# The fixed words of the synthetic summary (SPEC §2), shared by ``sessions.build_auto_summary``.
SUMMARY_NONE = "(ninguna)"
SUMMARY_MORE = (", … (+", ")")  # around the number of items not listed


def _text_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _compact(sql: str) -> str:
    """``sql`` with each run of white space as one space (no literal here holds two in a row).

    psycopg re-parses a query longer than 4,096 characters on every run instead of caching its
    placeholders (measured: 0.28 ms of a 2.5 ms start); the start statement must stay under
    that (tests/test_start_statement.py).
    """
    return " ".join(sql.split())


@cache
def close_expired_sql(max_items: int) -> str:
    """PostgreSQL: ``sessions.auto_close`` as one UPDATE of the user's expired active session.

    The same fields as the Python version: ended when it expired, a narrative summary kept,
    else the synthetic one over the live observations in creation order (tests/test_auto_close_sql.py
    holds the two to the same text). Parameters: the timeout (an interval), the summary prefix,
    user_id, the oldest live last_activity_at. Returns the closed session as ``recent`` reads it.
    """
    narrative = "(coalesce(s.summary <> '', false) AND NOT s.is_auto_generated)"
    more_open, more_close = map(_text_literal, SUMMARY_MORE)
    n = int(max_items)
    return f"""
    UPDATE {SESSION} s SET status = '{COMPLETED}', ended_at = s.last_activity_at + CAST(%s AS interval),
        summary = CASE WHEN {narrative} THEN s.summary ELSE (
            SELECT CAST(%s AS text) || ' '
                || coalesce(string_agg('[' || type || '] ' || title, ', ' ORDER BY k) FILTER (WHERE k <= {n}),
                            {_text_literal(SUMMARY_NONE)})
                || CASE WHEN count(*) > {n} THEN {more_open} || (count(*) - {n}) || {more_close} ELSE '' END
            FROM (SELECT type, title, row_number() OVER (ORDER BY created_at, id) AS k
                  FROM {OBS} WHERE session_id = s.id AND deleted_at IS NULL) i
        ) END,
        is_auto_generated = NOT {narrative},
        redacted_blocks = CASE WHEN {narrative} THEN s.redacted_blocks ELSE 0 END
    WHERE s.user_id = %s AND s.status = '{ACTIVE}' AND s.last_activity_at < %s
    RETURNING s.id, s.started_at, s.ended_at, s.summary, s.is_auto_generated"""


# When the start only moved last_activity_at forward and commits on its own, that commit does
# not wait for the WAL flush (synchronous_commit off for this one transaction, set where the
# bump returns its row). A server crash within a fraction of a second may lose that bump: the
# session then looks last active at the user's previous call. It never loses an observation,
# an opened session or anything of a caller's transaction (never set inside one), and never
# corrupts; measured, the flush was ~0.9 ms of a ~2.4 ms start.
RELAXED_COMMIT = ", set_config('synchronous_commit', 'off', true) AS relaxed_commit"


@cache
def claim_start_sql(weighted_types: int, sessions: int, candidates: int, limit: int, summary_items: int, *,
                    relax_commit: bool) -> str:
    bump = BUMP_LIVE_SESSION + (RELAXED_COMMIT if relax_commit else "")
    # The session it closed is completed now, but not in the snapshot the reads see: add it.
    return _compact(f"""
    WITH bumped AS ({bump}),
    closed AS ({close_expired_sql(summary_items)}),
    opened AS ({OPEN_IF_NONE_ACTIVE_OR_CLOSED}),
    claimed AS (SELECT id, false AS is_new FROM bumped UNION ALL SELECT id, true FROM opened),
    recent AS ({recent_sessions_sql(sessions, also="SELECT * FROM closed")}),
    ranked AS ({ranked_context_sql("postgresql", weighted_types, candidates, limit)})
    SELECT 0 AS part, 0 AS ord, id, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::text,
           NULL::text, NULL::uuid, is_new, NULL::bigint, NULL::bigint
    FROM claimed
    UNION ALL
    SELECT 1, row_number() OVER (ORDER BY ended_at DESC, id DESC), id, started_at, ended_at,
           summary, NULL, NULL, NULL, NULL, is_auto_generated, n, NULL
    FROM recent WHERE EXISTS (SELECT 1 FROM claimed)
    UNION ALL
    SELECT 2, row_number() OVER (ORDER BY score DESC, updated_at DESC, id DESC), id, updated_at, NULL,
           title, content_head, topic_key, type, session_id, NULL, revision_count, duplicate_count
    FROM ranked WHERE EXISTS (SELECT 1 FROM claimed)
    ORDER BY part, ord""")


def claim_start_statement(user_id: str, *, now: datetime, timeout: timedelta, sessions: int,
                          type_weights: dict[str, float], head_chars: int, candidates: int, limit: int,
                          summary_prefix: str, summary_items: int, relax_commit: bool) -> tuple[str, list]:
    """The start statement and its parameters, as psycopg takes them (also the benchmark's floor)."""
    live_since = now - timeout
    sql = claim_start_sql(len(type_weights), sessions, candidates, limit, summary_items, relax_commit=relax_commit)
    return sql, [
        now, user_id, live_since,
        timeout, summary_prefix, user_id, live_since,
        uuid.uuid4(), user_id, now, now, user_id,
        user_id,
        head_chars, *scoring.context_value_params(now=now, type_weights=type_weights), user_id,
    ]


class Statements:
    """The statements above on one connection; ``values`` converts what goes in and out."""

    def __init__(self, using: str):
        self.values = DbValues(using)
        self._connection = self.values.connection
        self._cursor = cursor_opener(self._connection, prepare=get_config().PREPARED_STATEMENTS)

    def _run(self, sql: str, params: list):
        with self._cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def bump_live_session(self, user_id: str, *, now: datetime, live_since: datetime):
        """The id of the user's active session with activity at or after ``live_since``, bumped to ``now``."""
        at = self.values.datetime_param
        rows = self._run(BUMP_LIVE_SESSION, [at(now), user_id, at(live_since)])
        return rows[0][0] if rows else None

    def active_session(self, user_id: str, *, for_update: bool) -> Session | None:
        """The user's active session as a model instance (the partial unique index: one lookup)."""
        lock = " FOR UPDATE" if for_update and self._connection.features.has_select_for_update else ""
        rows = self._run(ACTIVE_SESSION + lock, [user_id])
        return self._session(rows[0]) if rows else None

    def open_if_none_active(self, user_id: str, *, now: datetime):
        """Open the user's session when the user has no active one; its id as stored, or None.

        None: an active session exists (expired, since the caller's bump found none live), or a
        concurrent writer just opened one (PostgreSQL waits for it, then inserts nothing).
        """
        at = self.values.datetime_param(now)
        rows = self._run(OPEN_IF_NONE_ACTIVE, [self.values.uuid_param(uuid.uuid4()), user_id, at, at, user_id])
        return rows[0][0] if rows else None

    def insert_session(self, user_id: str, *, now: datetime) -> Session:
        """Open an active session for the user (the one-active-session index refuses a second)."""
        session_id, at = uuid.uuid4(), self.values.datetime_param(now)
        self._run_write(INSERT_SESSION, [self.values.uuid_param(session_id), user_id, at, at, False])
        return Session.from_db(self._connection.alias, SESSION_FIELDS, [
            session_id, user_id, ACTIVE, now, now, None, None, False, 0,
        ])

    def summary_items(self, session_id: uuid.UUID, limit: int) -> list[tuple[str, str]]:
        """(type, title) of the session's first ``limit`` live observations, in creation order."""
        return self._run(summary_items_sql(limit), [self.values.uuid_param(session_id)])

    def live_in_session(self, session_id: uuid.UUID) -> int:
        return self._run(LIVE_IN_SESSION, [self.values.uuid_param(session_id)])[0][0]

    def close_session(self, session: Session) -> None:
        """Store the closing fields of ``session`` (status, ended_at, summary and its kind)."""
        self._run_write(CLOSE_SESSION, [
            self.values.datetime_param(session.ended_at), session.summary, session.is_auto_generated,
            session.redacted_blocks, self.values.uuid_param(session.pk),
        ])

    def _session(self, row: tuple) -> Session:
        values = self.values
        converted = dict(zip(SESSION_FIELDS, row))
        converted["id"] = values.uuid(converted["id"])
        for name in ("started_at", "last_activity_at", "ended_at"):
            converted[name] = values.datetime(converted[name])
        converted["is_auto_generated"] = bool(converted["is_auto_generated"])
        return Session.from_db(self._connection.alias, SESSION_FIELDS, [converted[name] for name in SESSION_FIELDS])

    def keep_revision(self, observation_id: uuid.UUID, *, user_id: str, now: datetime) -> None:
        """Copy the observation's current version into the history (the caller holds its lock)."""
        self._run(KEEP_REVISION, [self.values.datetime_param(now), user_id, self.values.uuid_param(observation_id)])

    def revise_topic(self, *, user_id: str, topic_key: str, fields: dict, digest: str, blocks: int,
                     session_id, now: datetime) -> tuple | None:
        """Revise the user's live observation of ``topic_key``, its old version kept in the history.

        None when no live observation has the topic. Raises RaceLost when a concurrent writer
        soft-deleted it between the copy and the replace (PostgreSQL; the retry sees the delete).
        """
        at = self.values.datetime_param(now)
        new_values = [
            fields["type"], fields["title"], fields["content"], self.values.json_param(fields["metadata"]),
            digest, blocks, session_id, at, at,
        ]
        if self._connection.vendor == "postgresql":
            kept, *row = self._run(REVISE_TOPIC_IN_ONE, [at, user_id, topic_key, *new_values, user_id])[0]
            revised = [tuple(row)] if row[0] is not None else []
        else:
            copied = self._run(KEEP_TOPIC_REVISION, [at, user_id, topic_key])
            kept = len(copied)
            revised = self._run(REVISE, [*new_values, copied[0][0], user_id]) if copied else []
        if not kept:
            return None
        if not revised:
            raise RaceLost("the observation to revise was deleted meanwhile")
        return revised[0]

    def count_duplicate_or_insert(self, *, observation_id: uuid.UUID, user_id: str, digest: str, since: datetime,
                                  fields: dict, blocks: int, session_id, now: datetime) -> tuple | None:
        """Count a repeat on the newest live twin created at or after ``since`` and return its
        row; with no twin, insert the observation and return None."""
        at = self.values.datetime_param
        adopt = fields["topic_key"] is not None  # the repeat keeps a topic the first save lacked
        twin = [blocks, session_id, at(now), *([fields["topic_key"]] if adopt else []), user_id, digest, at(since)]
        new = [
            self.values.uuid_param(observation_id), user_id, session_id, fields["type"], fields["title"],
            fields["content"], fields["topic_key"], self.values.json_param(fields["metadata"]),
            blocks, at(now), at(now), at(now), digest,
        ]
        if self._connection.vendor == "postgresql":
            created, *row = self._run(COUNT_DUPLICATE_OR_INSERT[adopt], [*twin, *new])[0]
            return None if created else tuple(row)
        rows = self._run(COUNT_DUPLICATE_ADOPT_TOPIC if adopt else COUNT_DUPLICATE, twin)
        if rows:
            return rows[0]
        self._run_write(INSERT_OBSERVATION, new)
        return None

    def _run_write(self, sql: str, params: list) -> None:
        with self._cursor() as cursor:
            cursor.execute(sql, params)

    def recent_sessions(self, user_id: str, limit: int) -> list[tuple]:
        """(id, started_at, ended_at, summary, is_auto_generated, live observation count) rows."""
        return self._run(recent_sessions_sql(limit), [user_id])

    @property
    def ranks_context_in_sql(self) -> bool:
        """Whether the database can rank: it reads stored times as absolute UTC instants.

        Not when USE_TZ is off, or SQLite stores local times (a database TIME_ZONE): there the
        hours since an update depend on the zone's rules, and Python ranks instead.
        """
        return self.values.absolute_times and self._connection.vendor in EPOCH_MICROS

    def ranked_context(self, user_id: str, *, now: datetime, type_weights: dict[str, float],
                       head_chars: int, candidates: int, limit: int) -> list[tuple]:
        """The ``limit`` best of the newest ``candidates``: candidate columns plus the score."""
        sql = ranked_context_sql(self._connection.vendor, len(type_weights), candidates, limit)
        params = scoring.context_value_params(now=now, type_weights=type_weights)
        return self._run(sql, [head_chars, *params, user_id])

    @property
    def starts_in_one_statement(self) -> bool:
        return self._connection.vendor == "postgresql" and self.ranks_context_in_sql

    def claim_start(self, user_id: str, **settings):
        """Bump the live session, or open one (auto-closing an expired one first), and read what
        a start returns (PostgreSQL). ``settings``: the keywords of ``claim_start_statement``.

        Returns (session id, is_new, recent session rows, ranked memory rows) in the row shapes
        of ``recent_sessions`` and ``ranked_context``; None when it claimed nothing (see
        ``claim_start_sql``), and then nothing was written.
        """
        relax_commit = self._connection.get_autocommit()  # it is its own transaction
        sql, params = claim_start_statement(user_id, relax_commit=relax_commit, **settings)
        claimed, recent, ranked = None, [], []
        for part, _, id_, at1, at2, text1, text2, text3, text4, ref, flag, n1, n2 in self._run(sql, params):
            if part == 0:
                claimed = (id_, flag)
            elif part == 1:
                recent.append((id_, at1, at2, text1, flag, n1))
            else:
                ranked.append((id_, text4, text1, text3, ref, at1, text2, n1, n2))
        return None if claimed is None else (*claimed, recent, ranked)

    def context_candidates(self, user_id: str, *, head_chars: int, limit: int) -> list[tuple]:
        """(id, type, title, topic_key, session_id, updated_at, content head, revision_count,
        duplicate_count) rows, newest update first."""
        return self._run(context_candidates_sql(limit), [head_chars, user_id])
