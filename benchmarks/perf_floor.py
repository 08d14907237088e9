"""The floor: the least SQL each operation needs, run with the database's own Python driver.

Same process, same database file or server, same tables, indexes and search-index triggers as
the app, so the ratio ``ours / floor`` is the cost of everything ilab_memory adds (validation,
redaction, the ORM, building the returned values, extra statements).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from ilab_memory.services import search as search_index

from .perf_data import OBSERVATION_COLUMNS, _utc_naive_text

OBS = search_index.OBSERVATION_TABLE
SESSION = "ilab_memory_session"
CANDIDATES = f"""
    SELECT id, type, title, topic_key, session_id, updated_at, substr(content, 1, %s), revision_count, duplicate_count
    FROM {OBS} WHERE user_id = %s AND deleted_at IS NULL ORDER BY updated_at DESC, id DESC LIMIT %s"""
COMPLETED_SESSIONS = f"""
    SELECT s.id, s.started_at, s.ended_at, s.summary, s.is_auto_generated,
           (SELECT count(*) FROM {OBS} o WHERE o.session_id = s.id AND o.deleted_at IS NULL)
    FROM {SESSION} s WHERE s.user_id = %s AND s.status = 'completed' ORDER BY s.ended_at DESC, s.id DESC LIMIT %s"""


class Floor:
    """Raw-SQL versions of start, save, context and search for one user."""

    def __init__(self, raw, vendor: str, *, context_candidates: int, preview_chars: int = 300):
        self.raw, self.vendor = raw, vendor
        self.candidates = context_candidates
        self.preview = preview_chars + 1

    # -- plumbing ------------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql.replace("%s", "?") if self.vendor == "sqlite" else sql

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

    def start_write(self, user_id: str) -> None:
        """What the brief calls the floor of a reuse: select the active session, bump it."""
        now = self._at(self.now())

        def work():
            row = self.active_session(user_id)
            self._run(f"UPDATE {SESSION} SET last_activity_at = %s WHERE id = %s", (now, row[0]))
        self._transaction(work)

    def start_reuse(self, user_id: str):
        """Reuse plus the reads that make the same answer (5 sessions with counts, candidates)."""
        now = self._at(self.now())

        def work():
            row = self.active_session(user_id)
            self._run(f"UPDATE {SESSION} SET last_activity_at = %s WHERE id = %s", (now, row[0]))
            return self.context_reads(user_id)
        return self._transaction(work)

    def _insert_session(self, user_id: str, now) -> None:
        self._run(
            f"INSERT INTO {SESSION} (id, user_id, status, started_at, last_activity_at, is_auto_generated, "
            "redacted_blocks) VALUES (%s, %s, 'active', %s, %s, %s, 0)",
            (self._id(uuid.uuid4()), user_id, now, now, False),
        )

    def start_new(self, user_id: str):
        now = self._at(self.now())

        def work():
            self.active_session(user_id)
            self._insert_session(user_id, now)
            return self.context_reads(user_id)
        return self._transaction(work)

    def start_auto_close(self, user_id: str):
        moment = self.now()
        now = self._at(moment)

        def work():
            session_id, _ = self.active_session(user_id)
            items = self._run(
                f"SELECT type, title FROM {OBS} WHERE session_id = %s AND deleted_at IS NULL "
                "ORDER BY created_at, id LIMIT 21",
                (session_id,),
            ).fetchall()
            summary = "Memorias registradas: " + (", ".join(f"[{t}] {x}" for t, x in items) or "(ninguna)")
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
                    topic_key: str | None = None) -> None:
        """One INSERT; the search-index trigger writes the index entry."""
        now = self._at(self.now())
        row = (self._id(uuid.uuid4()), user_id, session_id, "manual", title, content, topic_key, "{}", digest,
               1, 1, 0, now, now, now, None)
        self._transaction(lambda: self._run(
            f"INSERT INTO {OBS} ({OBSERVATION_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})", row
        ))

    def save_duplicate(self, user_id: str, *, digest: str) -> None:
        """One UPDATE that finds the recent twin through the dedupe index and counts it."""
        moment = self.now()
        params = (self._at(moment), user_id, digest, self._at(moment - timedelta(minutes=15)))
        self._transaction(lambda: self._run(
            f"UPDATE {OBS} SET duplicate_count = duplicate_count + 1, last_seen_at = %s "
            "WHERE user_id = %s AND dedupe_hash = %s AND deleted_at IS NULL AND topic_key IS NULL "
            "AND created_at >= %s",
            params,
        ))

    def save_revise(self, user_id: str, *, topic_key: str, content: str) -> None:
        """Copy the current version to the history, then replace it (the trigger re-indexes)."""
        now = self._at(self.now())

        def work():
            self._run(
                "INSERT INTO ilab_memory_observationrevision (observation_id, user_id, revision, "
                "session_id_at_write, type, title, content, topic_key, metadata, written_at, replaced_at) "
                f"SELECT id, user_id, revision_count, session_id, type, title, content, topic_key, metadata, "
                f"updated_at, %s FROM {OBS} WHERE user_id = %s AND topic_key = %s AND deleted_at IS NULL",
                (now, user_id, topic_key),
            )
            self._run(
                f"UPDATE {OBS} SET content = %s, revision_count = revision_count + 1, updated_at = %s, "
                "last_seen_at = %s WHERE user_id = %s AND topic_key = %s AND deleted_at IS NULL",
                (content, now, now, user_id, topic_key),
            )
        self._transaction(work)

    # -- reads ---------------------------------------------------------------------------

    def context(self, user_id: str):
        """The candidate SELECT: the user's newest live observations through the index."""
        return self._run(CANDIDATES, (self.preview, user_id, self.candidates)).fetchall()

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
