"""Deterministic histories written in bulk: executemany on SQLite, COPY on PostgreSQL.

Every user gets completed sessions of ``PER_SESSION`` observations spread over the past year,
and no active session. Text comes from a fixed pool of sentences (seeded), so the same run makes
the same rows. Two kinds of search term are planted:

* ``COMMON_TERM`` in ``COMMON_SHARE`` of all rows (a term in most rows);
* ``rare_term(i)``: row ``i`` of the table holds ``zr<i // RARE_SPAN>``, so each rare term is in
  ``RARE_SPAN`` rows, all of one user.

With ``vectors=VectorFill(model_id, dimensions)`` every observation also gets its
``ObservationVector`` row, already embedded: a random unit float32 vector (seeded) stored as
the library stores one (little-endian bytes) under that ``model_id``. The lookup's cost does
not depend on the values, and embedding a million memories for real would take a day here.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.db import connections, transaction

from ilab_memory.services.search.index import index_rebuild
from ilab_memory.services.search.postgresql import PG_CREATE_INDEX
from ilab_memory.services.search.sqlite import SQLITE_TRIGGERS
from ilab_memory.services.search.tables import OBSERVATION_TABLE

from .corpus import Corpus
from .perf_timing import Progress

SEED = 20260115
PER_SESSION = 50
COMMON_TERM = "service"
COMMON_SHARE = 0.9
RARE_SPAN = 4
TYPES = ("manual", "decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning")
BATCH = 5_000



def rare_term(row_index: int) -> str:
    return f"zr{row_index // RARE_SPAN:x}"


def _utc_naive_text(value: datetime) -> str:
    # How Django's SQLite backend stores an aware datetime: naive UTC, str().
    return str(value.astimezone(timezone.utc).replace(tzinfo=None))


@dataclass(frozen=True)
class VectorFill:
    """Vector rows written with each observation: ``model_id`` and ``dimensions`` of the embedder."""

    model_id: str
    dimensions: int
    seed: int = SEED + 2


VECTOR_COLUMNS = "observation_id, user_id, model_id, dimensions, vector, generation, queued_at, embedded_at"


class HistoryWriter:
    """Appends users with their histories to the observation table; counts rows as it goes."""

    def __init__(self, *, using: str = "default", seed: int = SEED):
        self.using = using
        self.connection = connections[using]
        self.vendor = self.connection.vendor
        self.corpus = Corpus(seed)
        self.rng = random.Random(seed + 1)
        self.next_row = self._count_rows()
        self.now = datetime.now(timezone.utc)
        self.vectors: VectorFill | None = None
        self._vector_rng = None

    def _count_rows(self) -> int:
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {OBSERVATION_TABLE}")
            return cursor.fetchone()[0]

    def _uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def _user_rows(self, user_id: str, count: int):
        """(sessions, observations) of one user as plain tuples in model column order."""
        corpus, rng = self.corpus, self.rng
        span = timedelta(days=365)
        first = self.now - span - timedelta(hours=1)
        step = span / max(count, 1)
        sessions, observations = [], []
        session_id = None
        for j in range(count):
            at = first + step * j
            if j % PER_SESSION == 0:
                session_id = self._uuid()
                last = first + step * min(j + PER_SESSION - 1, count - 1)
                sessions.append((session_id, user_id, "completed", at, last, last, "bench", False, 0))
            row = self.next_row
            self.next_row += 1
            content = f"{corpus.sentences[rng.randrange(len(corpus.sentences))]} {rare_term(row)}"
            if rng.random() < COMMON_SHARE:
                content += f" {COMMON_TERM}"
            title = corpus.titles[rng.randrange(len(corpus.titles))]
            digest = hashlib.sha256(f"{SEED}:{row}".encode()).hexdigest()
            observations.append(
                (self._uuid(), user_id, session_id, TYPES[row % len(TYPES)], title, content, None, "{}",
                 digest, 1, 1, 0, at, at, at, None)
            )
        return sessions, observations

    def add_users(self, users: list[tuple[str, int]], *, label: str, vectors: VectorFill | None = None) -> None:
        """Write ``users`` ([(user_id, observation count)]) in batches, with a progress line;
        with ``vectors``, each observation's embedded vector row too."""
        self.vectors = vectors
        if vectors is not None and self._vector_rng is None:
            import numpy as np

            self._vector_rng = np.random.default_rng(vectors.seed)
        total = sum(count for _, count in users)
        progress = Progress(label, total)
        pending_sessions, pending_observations = [], []
        with transaction.atomic(using=self.using):
            for user_id, count in users:
                sessions, observations = self._user_rows(user_id, count)
                pending_sessions += sessions
                pending_observations += observations
                if len(pending_observations) >= BATCH:
                    self._write(pending_sessions, pending_observations)
                    progress.advance(len(pending_observations))
                    pending_sessions, pending_observations = [], []
            if pending_observations or pending_sessions:
                self._write(pending_sessions, pending_observations)
                progress.advance(len(pending_observations))
            if vectors is not None:  # as a store of vectors would: their users' stamps
                from ilab_memory.models import VectorStamp

                VectorStamp.objects.using(self.using).bulk_create(
                    [VectorStamp(user_id=user_id) for user_id, _ in users], batch_size=1000, ignore_conflicts=True)
        progress.finish()

    def _vector_blobs(self, n: int) -> list[bytes]:
        import numpy as np

        matrix = self._vector_rng.standard_normal((n, self.vectors.dimensions), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.ascontiguousarray(matrix, dtype="<f4")
        return [row.tobytes() for row in matrix]

    def _write(self, sessions, observations) -> None:
        self.connection.ensure_connection()
        raw = self.connection.connection
        vectors = self.vectors
        blobs = self._vector_blobs(len(observations)) if vectors is not None else None
        if self.vendor == "sqlite":
            session_rows = [
                (s[0].hex, s[1], s[2], _utc_naive_text(s[3]), _utc_naive_text(s[4]), _utc_naive_text(s[5]), *s[6:])
                for s in sessions
            ]
            observation_rows = [
                (o[0].hex, o[1], o[2].hex, *o[3:12], _utc_naive_text(o[12]), _utc_naive_text(o[13]),
                 _utc_naive_text(o[14]), o[15])
                for o in observations
            ]
            raw.executemany(f"INSERT INTO ilab_memory_session ({SESSION_COLUMNS}) VALUES ({_marks(9)})", session_rows)
            raw.executemany(
                f"INSERT INTO {OBSERVATION_TABLE} ({OBSERVATION_COLUMNS}) VALUES ({_marks(16)})",
                observation_rows,
            )
            if blobs is not None:
                now = _utc_naive_text(self.now)
                raw.executemany(
                    f"INSERT INTO {VECTOR_TABLE} ({VECTOR_COLUMNS}) VALUES ({_marks(8)})",
                    [(o[0], o[1], vectors.model_id, vectors.dimensions, blob, 1, now, now)
                     for o, blob in zip(observation_rows, blobs)],
                )
            return
        with raw.cursor() as cursor:
            with cursor.copy(f"COPY ilab_memory_session ({SESSION_COLUMNS}) FROM STDIN") as copy:
                for row in sessions:
                    copy.write_row(row)
            with cursor.copy(f"COPY {OBSERVATION_TABLE} ({OBSERVATION_COLUMNS}) FROM STDIN") as copy:
                for row in observations:
                    copy.write_row(row)
            if blobs is not None:
                # Binary COPY: the vectors go as raw bytes, not as hex text twice their size.
                with cursor.copy(f"COPY {VECTOR_TABLE} ({VECTOR_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["uuid", "varchar", "varchar", "int4", "bytea", "int4", "timestamptz", "timestamptz"])
                    for o, blob in zip(observations, blobs):
                        copy.write_row((o[0], o[1], vectors.model_id, vectors.dimensions, blob, 1, self.now, self.now))


VECTOR_TABLE = "ilab_memory_observationvector"
SESSION_COLUMNS = "id, user_id, status, started_at, last_activity_at, ended_at, summary, is_auto_generated, redacted_blocks"
OBSERVATION_COLUMNS = (
    "id, user_id, session_id, type, title, content, topic_key, metadata, dedupe_hash, revision_count, "
    "duplicate_count, redacted_blocks, created_at, updated_at, last_seen_at, deleted_at"
)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class BulkLoad:
    """Suspend search-index upkeep for a bulk load; rebuild it once at the end (faster).

    SQLite: the FTS triggers are dropped, then ``index_rebuild`` recreates them and refills the
    index from the table. PostgreSQL: the row trigger stays (it computes the tsvector during
    COPY), only the GIN index is dropped and rebuilt in one pass.
    """

    def __init__(self, using: str = "default"):
        self.using = using
        self.connection = connections[using]

    def __enter__(self):
        with self.connection.cursor() as cursor:
            if self.connection.vendor == "sqlite":
                for name in SQLITE_TRIGGERS:
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            else:
                cursor.execute("DROP INDEX IF EXISTS ilab_mem_obs_search")
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        progress = Progress("search index rebuild", 1)
        if self.connection.vendor == "sqlite":
            index_rebuild(using=self.using)
        else:
            with self.connection.cursor() as cursor:
                cursor.execute(PG_CREATE_INDEX)
                cursor.execute("VACUUM ANALYZE")  # the state autovacuum would reach; it then stays idle during the run
        progress.advance(1)
        progress.finish()
        return False
