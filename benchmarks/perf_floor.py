"""The floor: the least SQL each operation needs, run with the database's own Python driver.

Same process, same database file or server, same tables, indexes and search-index triggers as
the app, so the ratio ``ours / floor`` is the cost of everything ilab_memory adds (validation,
redaction, Django, building the returned values, extra statements).

Self-contained on purpose: nothing here imports ilab_memory (its SQL, its scoring, its
settings). The statements are written out below, from the table layout and the documented
formulas (docs/scoring.md), so a change in the library's SQL cannot move the floor with it.
Values the floor needs from the settings (type weights, limits, the session timeout) are
passed in by the caller.

Each operation has two floors. The *full* floor is every statement the SPEC makes the operation
run, in the simplest form we know:

* start: find-and-bump the live session (one ``UPDATE … RETURNING``), then two reads: the 5
  newest completed sessions with their live counts, and the memories ranked by ContextScore;
  a new start also INSERTs the session; an auto-close also reads the active row and its summary
  items and closes it;
* save: find-and-bump, the duplicate UPDATE (finds none on a create), the INSERT (the trigger
  writes the search index), and, when an embedder is configured, the INSERT that queues the
  observation's vector row; a revise copies the row to the history (``INSERT … SELECT``),
  replaces it and re-queues its vector (an UPDATE);
* context: the newest candidates ranked by ContextScore in one SELECT;
* search: one engine query for the word, scoped to the user, ranked by the engine.

The *write-only* floor is the bare write the issue names ("one INSERT plus the index write"):
what a store without sessions, dedupe or vectors would pay.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

from .perf_data import OBSERVATION_COLUMNS, _utc_naive_text

OBS = "ilab_memory_observation"
SESSION = "ilab_memory_session"
REVISION = "ilab_memory_observationrevision"
VECTOR = "ilab_memory_observationvector"
FTS = "ilab_memory_search"  # SQLite's FTS5 table: title, topic_key, content, owner, observation_id
SUMMARY_NONE = "(ninguna)"

COMPLETED_SESSIONS = f"""
    SELECT s.id, s.started_at, s.ended_at, s.summary, s.is_auto_generated,
           (SELECT count(*) FROM {OBS} o WHERE o.session_id = s.id AND o.deleted_at IS NULL)
    FROM {SESSION} s WHERE s.user_id = %s AND s.status = 'completed' ORDER BY s.ended_at DESC, s.id DESC LIMIT %s"""
BUMP = f"""
    UPDATE {SESSION} SET last_activity_at = %s
    WHERE user_id = %s AND status = 'active' AND last_activity_at >= %s RETURNING id"""
DUPLICATE = f"""
    UPDATE {OBS} SET duplicate_count = duplicate_count + 1, last_seen_at = %s, session_id = %s
    WHERE id = (SELECT id FROM {OBS} WHERE user_id = %s AND dedupe_hash = %s AND created_at >= %s
                AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 1)
    RETURNING id"""
INSERT_SESSION = f"""
    INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, redacted_blocks)
    VALUES (%s, %s, 'active', %s, %s, %s, 0)"""
INSERT_OBSERVATION = f"INSERT INTO {OBS} ({OBSERVATION_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})"
QUEUE_VECTOR = f"INSERT INTO {VECTOR} (observation_id, user_id, generation, queued_at) VALUES (%s, %s, 1, %s)"
REQUEUE_VECTOR = f"""
    UPDATE {VECTOR} SET model_id = NULL, dimensions = NULL, vector = NULL, generation = generation + 1,
        queued_at = %s, claimed_until = NULL, embedded_at = NULL
    WHERE observation_id = %s"""

# ContextScore (docs/scoring.md): 0.995 ** hours since the update × the type's weight ×
# (1 + 0.5 × extra / (extra + 4)), extra = (revisions − 1) + (duplicates − 1), over the newest
# CONTEXT_CANDIDATES live rows of the user; the best CONTEXT_MEMORIES come back.
HOURS = {
    "sqlite": "max(0.0, (julianday(%s) - julianday(updated_at)) * 24.0)",
    # float8: extract() gives numeric, and power() over numeric cost 1.7 ms more per 200 candidates (measured).
    "postgresql": "greatest(0.0, extract(epoch from (%s::timestamptz - updated_at))::float8 / 3600.0)",
}
GREATEST = {"sqlite": "max", "postgresql": "greatest"}


def _literal(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def context_sql(vendor: str, type_weights: dict[str, float], candidates: int, limit: int) -> str:
    """One SELECT: the user's newest ``candidates`` live rows, scored, the best ``limit``.

    Parameters: the preview length, now, the user. Weights and limits are written in (they are
    settings, not input).
    """
    weight = " ".join(f"WHEN {_literal(name)} THEN {float(w)!r}" for name, w in type_weights.items())
    weight = f"CASE type {weight} ELSE 1.0 END" if weight else "1.0"
    g = GREATEST[vendor]
    extra = f"({g}(0, revision_count - 1) + {g}(0, duplicate_count - 1))"
    return f"""
    SELECT id, type, title, topic_key, session_id, updated_at, head, score FROM (
        SELECT id, type, title, topic_key, session_id, updated_at, substr(content, 1, %s) AS head,
               power(0.995, {HOURS[vendor]}) * {weight} * (1.0 + 0.5 * {extra} / ({extra} + 4.0)) AS score
        FROM {OBS} WHERE user_id = %s AND deleted_at IS NULL
        ORDER BY updated_at DESC, id DESC LIMIT {int(candidates)}
    ) c ORDER BY score DESC, updated_at DESC, id DESC LIMIT {int(limit)}"""


class Floor:
    """Raw-SQL versions of start, save, context and search for one user."""

    def __init__(self, raw, vendor: str, *, context_candidates: int = 200, context_memories: int = 10,
                 context_sessions: int = 5, type_weights: dict[str, float] | None = None,
                 preview_chars: int = 300, session_timeout_hours: int = 24, dedupe_window_minutes: int = 15,
                 summary_prefix: str = "Memorias registradas:", summary_items: int = 20, vectors: bool = False):
        self.raw, self.vendor = raw, vendor
        self.sessions = context_sessions
        self.preview = preview_chars + 1
        self.timeout = timedelta(hours=session_timeout_hours)
        self.dedupe_window = timedelta(minutes=dedupe_window_minutes)
        self.summary_prefix, self.summary_items = summary_prefix, summary_items
        self.vectors = vectors  # an embedder is configured: writes queue the vector row
        self.context_sql = context_sql(vendor, type_weights or {}, context_candidates, context_memories)

    # -- plumbing ------------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        # sqlite3 takes "?" and a literal "%"; psycopg takes "%s" and "%%", as Django writes them.
        return re.sub(r"(?<!%)%s", "?", sql).replace("%%", "%") if self.vendor == "sqlite" else sql

    def _run(self, sql: str, params=()):
        return self.raw.execute(self._sql(sql), params)

    def _transaction(self, work):
        if self.vendor == "sqlite":
            self.raw.execute("BEGIN IMMEDIATE")
            try:
                result = work()
                self.raw.execute("COMMIT")
            except BaseException:
                self.raw.execute("ROLLBACK")
                raise
            return result
        with self.raw.transaction():
            return work()

    def _id(self, value: uuid.UUID):
        return value.hex if self.vendor == "sqlite" else value

    def _at(self, value: datetime):
        return _utc_naive_text(value) if self.vendor == "sqlite" else value

    @staticmethod
    def now() -> datetime:
        return datetime.now(timezone.utc)

    def _lock(self) -> str:
        return "" if self.vendor == "sqlite" else " FOR UPDATE"

    # -- sessions ------------------------------------------------------------------------

    def active_session(self, user_id: str):
        return self._run(
            f"SELECT id, last_activity_at FROM {SESSION} WHERE user_id = %s AND status = 'active'{self._lock()}",
            (user_id,),
        ).fetchone()

    def open_session(self, user_id: str):
        """Untimed setup: make sure the user has an active session; returns its id."""
        def work():
            row = self.active_session(user_id)
            if row is not None:
                return row[0]
            session_id, now = uuid.uuid4(), self._at(self.now())
            self._run(INSERT_SESSION, (self._id(session_id), user_id, now, now, False))
            return self._id(session_id)
        return self._transaction(work)

    def close_session(self, user_id: str) -> None:
        """Untimed setup for a "new" start: no active session left."""
        now = self._at(self.now())
        self._transaction(lambda: self._run(
            f"UPDATE {SESSION} SET status = 'completed', ended_at = %s WHERE user_id = %s AND status = 'active'",
            (now, user_id),
        ))

    def expire_session(self, user_id: str) -> None:
        """Untimed setup for an auto-close start: the active session went quiet a day ago."""
        past = self._at(self.now() - self.timeout - timedelta(hours=1))
        self._transaction(lambda: self._run(
            f"UPDATE {SESSION} SET last_activity_at = %s WHERE user_id = %s AND status = 'active'", (past, user_id)
        ))

    def bump(self, user_id: str, moment: datetime):
        """Find the live session and bump it: one UPDATE … RETURNING (None: none live)."""
        row = self._run(BUMP, (self._at(moment), user_id, self._at(moment - self.timeout))).fetchone()
        return row[0] if row else None

    def context_reads(self, user_id: str, moment: datetime):
        """What a start returns: the recent completed sessions with counts, the ranked memories."""
        sessions = self._run(COMPLETED_SESSIONS, (user_id, self.sessions)).fetchall()
        return sessions, self._context(user_id, moment)

    def start_write(self, user_id: str) -> None:
        """The write-only floor of a reuse: find the active session and bump it."""
        moment = self.now()
        self._transaction(lambda: self.bump(user_id, moment))

    def start_reuse(self, user_id: str):
        """Find-and-bump, then the two reads, in one transaction."""
        moment = self.now()

        def work():
            self.bump(user_id, moment)
            return self.context_reads(user_id, moment)
        return self._transaction(work)

    def start_new(self, user_id: str):
        """No active session: find-and-bump (finds none), INSERT the session, the two reads."""
        moment = self.now()
        now = self._at(moment)

        def work():
            self.bump(user_id, moment)
            self._run(INSERT_SESSION, (self._id(uuid.uuid4()), user_id, now, now, False))
            return self.context_reads(user_id, moment)
        return self._transaction(work)

    def start_auto_close(self, user_id: str):
        """The expired session closed with its synthetic summary, a new one opened, the reads."""
        moment = self.now()
        now = self._at(moment)

        def work():
            self.bump(user_id, moment)
            session_id, last_activity = self.active_session(user_id)
            items = self._run(
                f"SELECT type, title FROM {OBS} WHERE session_id = %s AND deleted_at IS NULL "
                f"ORDER BY created_at, id LIMIT {self.summary_items + 1}",
                (session_id,),
            ).fetchall()
            summary = f"{self.summary_prefix} " + (", ".join(f"[{t}] {x}" for t, x in items) or SUMMARY_NONE)
            self._run(
                f"UPDATE {SESSION} SET status = 'completed', ended_at = %s, summary = %s, is_auto_generated = %s "
                "WHERE id = %s",
                (self._at(moment - timedelta(hours=1)), summary, True, session_id),
            )
            self._run(INSERT_SESSION, (self._id(uuid.uuid4()), user_id, now, now, False))
            return self.context_reads(user_id, moment)
        return self._transaction(work)

    # -- observations --------------------------------------------------------------------

    def save_create(self, user_id: str, session_id, *, title: str, content: str, digest: str,
                    topic_key: str | None = None, write_only: bool = False) -> None:
        """Bump the session, look for a duplicate (none), INSERT (the trigger writes the index
        entry), queue the vector row; write-only: the INSERT alone."""
        moment = self.now()
        now = self._at(moment)
        observation_id = self._id(uuid.uuid4())
        row = (observation_id, user_id, session_id, "manual", title, content, topic_key, "{}", digest,
               1, 1, 0, now, now, now, None)

        def work():
            if not write_only:
                self.bump(user_id, moment)
                self._duplicate(user_id, session_id, digest, moment)
            self._run(INSERT_OBSERVATION, row)
            if self.vectors and not write_only:
                self._run(QUEUE_VECTOR, (observation_id, user_id, now))
        self._transaction(work)

    def _duplicate(self, user_id: str, session_id, digest: str, moment: datetime):
        since = self._at(moment - self.dedupe_window)
        return self._run(DUPLICATE, (self._at(moment), session_id, user_id, digest, since)).fetchone()

    def save_duplicate(self, user_id: str, session_id, *, digest: str, write_only: bool = False) -> None:
        """Bump the session, then one UPDATE that finds the recent twin through the dedupe index
        and counts it (its vector stays: the text did not change)."""
        moment = self.now()

        def work():
            if not write_only:
                self.bump(user_id, moment)
            self._duplicate(user_id, session_id, digest, moment)
        self._transaction(work)

    def save_revise(self, user_id: str, session_id, *, topic_key: str, content: str, write_only: bool = False) -> None:
        """Bump the session, copy the topic's row to the history, replace it (re-indexed by the
        trigger), queue its vector again; write-only: the copy and the replace."""
        moment = self.now()
        now = self._at(moment)

        def work():
            where = "user_id = %s AND topic_key = %s AND deleted_at IS NULL"
            if not write_only:
                self.bump(user_id, moment)
            self._run(
                f"INSERT INTO {REVISION} (observation_id, user_id, revision, session_id_at_write, type, title, "
                "content, topic_key, metadata, written_at, replaced_at) "
                f"SELECT id, user_id, revision_count, session_id, type, title, content, topic_key, metadata, "
                f"updated_at, %s FROM {OBS} WHERE {where}",
                (now, user_id, topic_key),
            )
            (observation_id,) = self._run(
                f"UPDATE {OBS} SET content = %s, dedupe_hash = %s, revision_count = revision_count + 1, "
                f"updated_at = %s, last_seen_at = %s, session_id = %s WHERE {where} RETURNING id",
                (content, f"revise-{moment.timestamp()}", now, now, session_id, user_id, topic_key),
            ).fetchone()
            if self.vectors and not write_only:
                self._run(REQUEUE_VECTOR, (now, observation_id))
        self._transaction(work)

    # -- reads ---------------------------------------------------------------------------

    def _context(self, user_id: str, moment: datetime):
        return self._run(self.context_sql, (self.preview, self._at(moment), user_id)).fetchall()

    def context(self, user_id: str):
        """The newest candidates ranked by ContextScore in the database; the winners come back."""
        return self._context(user_id, self.now())

    def search(self, user_id: str, word: str, limit: int = 10):
        """One engine query for one word, ranked by the engine, scoped to the user."""
        if self.vendor == "sqlite":
            owner = "u" + user_id.encode().hex()  # the index's owner column: 'u' || hex(user_id)
            return self._run(
                f"""SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at, substr(o.content, 1, 301)
                    FROM {FTS} JOIN {OBS} o ON o.id = {FTS}.observation_id
                    WHERE {FTS} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL
                    ORDER BY bm25({FTS}, 10.0, 4.0, 1.0, 0.0, 0.0) LIMIT %s""",
                (f'owner : "{owner}" AND "{word}"', user_id, limit),
            ).fetchall()
        return self._run(
            f"""SELECT id, type, title, topic_key, session_id, updated_at, substr(content, 1, 301)
                FROM {OBS}, to_tsquery('simple', %s) q
                WHERE user_id = %s AND deleted_at IS NULL AND search_vector @@ q
                ORDER BY ts_rank(search_vector, q) DESC LIMIT %s""",
            (word, user_id, limit),
        ).fetchall()
