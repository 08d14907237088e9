"""The floor: the least SQL each operation needs, run with the database's own Python driver.

Same process, same database file or server, same tables, indexes and search-index triggers as
the app, so the ratio ``ours / floor`` is the cost of everything ilab_memory adds (validation,
redaction, Django, building the returned values, extra statements).

Each operation has two floors. The *full* floor is every statement the SPEC makes the operation
run (a save finds and bumps the active session and looks for a duplicate before it inserts;
a start reads the context it returns). The *write-only* floor is the bare write the issue names
("one INSERT plus the index write"): what a store without sessions or dedupe would pay.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

from ilab_memory.conf import DEFAULTS
from ilab_memory.services import scoring
from ilab_memory.services import search as search_index
from ilab_memory.services import statements as ours

from .perf_data import OBSERVATION_COLUMNS, _utc_naive_text

OBS = search_index.OBSERVATION_TABLE
SUMMARY_PREFIX, SUMMARY_ITEMS = DEFAULTS["AUTO_SUMMARY_PREFIX"], DEFAULTS["AUTO_SUMMARY_MAX_ITEMS"]
SESSION = "ilab_memory_session"
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


class Floor:
    """Raw-SQL versions of start, save, context and search for one user."""

    def __init__(self, raw, vendor: str, *, context_candidates: int, context_memories: int,
                 type_weights: dict[str, float], preview_chars: int = 300):
        self.raw, self.vendor = raw, vendor
        self.candidates, self.memories = context_candidates, context_memories
        self.weights = type_weights
        self.preview = preview_chars + 1

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
        row = self._run(
            f"SELECT id, last_activity_at FROM {SESSION} WHERE user_id = %s AND status = 'active'{self._lock()}",
            (user_id,),
        ).fetchone()
        return row

    def open_session(self, user_id: str):
        """Untimed setup: make sure the user has an active session; returns its id."""
        def work():
            row = self.active_session(user_id)
            if row is not None:
                return row[0]
            session_id, now = uuid.uuid4(), self._at(self.now())
            self._run(
                f"INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, "
                "redacted_blocks) VALUES (%s, %s, 'active', %s, %s, %s, 0)",
                (self._id(session_id), user_id, now, now, False),
            )
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
        past = self._at(self.now() - timedelta(hours=25))
        self._transaction(lambda: self._run(
            f"UPDATE {SESSION} SET last_activity_at = %s WHERE user_id = %s AND status = 'active'", (past, user_id)
        ))

    def context_reads(self, user_id: str):
        sessions = self._run(COMPLETED_SESSIONS, (user_id, 5)).fetchall()
        return sessions, self.context(user_id)

    def bump(self, user_id: str, moment: datetime):
        """Find the live session and bump it: one UPDATE … RETURNING (None: none live)."""
        row = self._run(BUMP, (self._at(moment), user_id, self._at(moment - timedelta(hours=24)))).fetchone()
        return row[0] if row else None

    def start_write(self, user_id: str) -> None:
        """The write-only floor of a reuse: find the active session and bump it."""
        moment = self.now()
        self._transaction(lambda: self.bump(user_id, moment))

    def _claim(self, user_id: str, moment: datetime):
        """PostgreSQL: ilab_memory's one start statement (bump, or close and open, or open; the reads)."""
        relaxed = self.raw.info.transaction_status == 0  # idle: it commits on its own, as ours does
        sql, params = ours.claim_start_statement(
            user_id, now=moment, timeout=timedelta(hours=24), sessions=5, type_weights=self.weights,
            head_chars=self.preview, candidates=self.candidates, limit=self.memories,
            summary_prefix=SUMMARY_PREFIX, summary_items=SUMMARY_ITEMS, relax_commit=relaxed,
        )
        return self._run(sql, params).fetchall()

    def start_reuse(self, user_id: str):
        """Reuse plus the reads that make the same answer (5 sessions with counts, ranked memories).

        PostgreSQL: one statement (a data-modifying WITH), committed on its own, as ilab_memory does.
        """
        moment = self.now()
        if self.vendor == "postgresql":
            return self._claim(user_id, moment)

        def work():
            self.bump(user_id, moment)
            return self.context_reads(user_id)
        return self._transaction(work)

    def _insert_session(self, user_id: str, now) -> None:
        self._run(
            f"INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, "
            "redacted_blocks) VALUES (%s, %s, 'active', %s, %s, %s, 0)",
            (self._id(uuid.uuid4()), user_id, now, now, False),
        )

    def start_new(self, user_id: str):
        """No active session: open one and read. PostgreSQL: the same one statement as a reuse."""
        if self.vendor == "postgresql":
            return self._claim(user_id, self.now())
        now = self._at(self.now())

        def work():
            self.bump(user_id, self.now())
            self._insert_session(user_id, now)
            return self.context_reads(user_id)
        return self._transaction(work)

    def start_auto_close(self, user_id: str):
        """The expired session closed with its synthetic summary, a new one opened, the reads.

        PostgreSQL: the one start statement, which does all of it, as ilab_memory does.
        """
        moment = self.now()
        if self.vendor == "postgresql":
            return self._claim(user_id, moment)
        now = self._at(moment)

        def work():
            self.bump(user_id, moment)
            session_id, _ = self.active_session(user_id)
            items = self._run(
                f"SELECT type, title FROM {OBS} WHERE session_id = %s AND deleted_at IS NULL "
                f"ORDER BY created_at, id LIMIT {SUMMARY_ITEMS + 1}",
                (session_id,),
            ).fetchall()
            summary = f"{SUMMARY_PREFIX} " + (", ".join(f"[{t}] {x}" for t, x in items) or ours.SUMMARY_NONE)
            self._run(
                f"UPDATE {SESSION} SET status = 'completed', ended_at = %s, summary = %s, is_auto_generated = %s "
                "WHERE id = %s",
                (self._at(moment - timedelta(hours=1)), summary, True, session_id),
            )
            self._insert_session(user_id, now)
            return self.context_reads(user_id)
        return self._transaction(work)

    # -- observations --------------------------------------------------------------------

    def save_create(self, user_id: str, session_id, *, title: str, content: str, digest: str,
                    topic_key: str | None = None, write_only: bool = False) -> None:
        """Bump the session, look for a duplicate (none), INSERT; the trigger writes the index entry."""
        moment = self.now()
        now = self._at(moment)
        row = (self._id(uuid.uuid4()), user_id, session_id, "manual", title, content, topic_key, "{}", digest,
               1, 1, 0, now, now, now, None)

        def work():
            if not write_only:
                self.bump(user_id, moment)
                if self.vendor == "postgresql":  # the duplicate check and the insert in one, as ours
                    return self._duplicate_or_insert(user_id, session_id, digest, moment, row)
                self._duplicate(user_id, session_id, digest, moment)
            self._run(f"INSERT INTO {OBS} ({OBSERVATION_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})", row)
        self._transaction(work)

    def _duplicate(self, user_id: str, session_id, digest: str, moment: datetime):
        since = self._at(moment - timedelta(minutes=15))
        return self._run(DUPLICATE, (self._at(moment), session_id, user_id, digest, since)).fetchone()

    def _duplicate_or_insert(self, user_id: str, session_id, digest: str, moment: datetime, row=None):
        """PostgreSQL: ilab_memory's statement that counts the twin or inserts (``row``, or a stub)."""
        since = moment - timedelta(minutes=15)
        observation_id, _, _, type_, title, content, topic_key = (row or (uuid.uuid4(), 0, 0, "manual", "-", "-", None))[:7]
        params = (0, session_id, moment, user_id, digest, since,
                  observation_id, user_id, session_id, type_, title, content, topic_key, "{}", 0,
                  moment, moment, moment, digest)
        return self._run(ours.COUNT_DUPLICATE_OR_INSERT[False], params).fetchone()

    def save_duplicate(self, user_id: str, session_id, *, digest: str, write_only: bool = False) -> None:
        """Bump the session, then one UPDATE that finds the recent twin through the dedupe index."""
        moment = self.now()

        def work():
            if not write_only:
                self.bump(user_id, moment)
                if self.vendor == "postgresql":  # the statement ours runs (it finds the twin)
                    return self._duplicate_or_insert(user_id, session_id, digest, moment)
            self._duplicate(user_id, session_id, digest, moment)
        self._transaction(work)

    def save_revise(self, user_id: str, session_id, *, topic_key: str, content: str, write_only: bool = False) -> None:
        """Bump the session, copy the topic's row to the history, replace it (re-indexed by the trigger)."""
        moment = self.now()
        now = self._at(moment)

        def work():
            where = "user_id = %s AND topic_key = %s AND deleted_at IS NULL"
            if not write_only:
                self.bump(user_id, moment)
            if self.vendor == "postgresql":  # the copy and the replace in one statement, as ours
                self._run(ours.REVISE_TOPIC_IN_ONE, (now, user_id, topic_key, "manual", "topic", content, "{}",
                                                     "revise", 0, session_id, now, now, user_id)).fetchone()
                return
            self._run(
                "INSERT INTO ilab_memory_observationrevision (observation_id, user_id, revision, "
                "session_id_at_write, type, title, content, topic_key, metadata, written_at, replaced_at) "
                f"SELECT id, user_id, revision_count, session_id, type, title, content, topic_key, metadata, "
                f"updated_at, %s FROM {OBS} WHERE {where}",
                (now, user_id, topic_key),
            )
            self._run(
                f"UPDATE {OBS} SET content = %s, revision_count = revision_count + 1, updated_at = %s, "
                f"last_seen_at = %s, session_id = %s WHERE {where} RETURNING id",
                (content, now, now, session_id, user_id, topic_key),
            ).fetchone()
        self._transaction(work)

    # -- reads ---------------------------------------------------------------------------

    def context(self, user_id: str):
        """The newest candidates ranked by ContextScore in the database; the winners come back."""
        moment = self.now()
        params = scoring.context_value_params(now=moment, type_weights=self.weights)
        sql = ours.ranked_context_sql(self.vendor, len(self.weights), self.candidates, self.memories)
        return self._run(sql, (self.preview, *params, user_id)).fetchall()

    def search(self, user_id: str, word: str, limit: int = 10):
        """One engine query for one word, ranked by the engine, scoped to the user."""
        if self.vendor == "sqlite":
            owner = "u" + user_id.encode().hex()
            table = search_index.SQLITE_TABLE
            return self._run(
                f"""SELECT o.id, o.type, o.title, o.topic_key, o.session_id, o.updated_at, substr(o.content, 1, 301)
                    FROM {table} JOIN {OBS} o ON o.id = {table}.observation_id
                    WHERE {table} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL
                    ORDER BY bm25({table}, 10.0, 4.0, 1.0, 0.0, 0.0) LIMIT %s""",
                (f'owner : "{owner}" AND "{word}"', user_id, limit),
            ).fetchall()
        return self._run(
            f"""SELECT id, type, title, topic_key, session_id, updated_at, substr(content, 1, 301)
                FROM {OBS}, to_tsquery('simple', %s) q
                WHERE user_id = %s AND deleted_at IS NULL AND search_vector @@ q
                ORDER BY ts_rank(search_vector, q) DESC LIMIT %s""",
            (word, user_id, limit),
        ).fetchall()
