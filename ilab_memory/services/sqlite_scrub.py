"""What an erasure does on SQLite so no erased text stays in the database file: deleted cells
zeroed, the search index compacted, the write-ahead log truncated (docs/reliability.md)."""

from __future__ import annotations

from contextlib import contextmanager

from django.db import connections

from .search import SQLITE_TABLE


@contextmanager
def secure_delete(connection):
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


def compact_search_index(connection) -> None:
    """Rewrite the FTS5 index without the deleted entries.

    An FTS5 delete only records a tombstone; the words stay in the old index segments until
    they are merged. 'optimize' merges every segment now, and secure_delete zeroes the pages
    the old segments leave behind. Its cost grows with the whole index, which is acceptable
    for an erasure, a rare operation.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [SQLITE_TABLE])
        if cursor.fetchone():
            cursor.execute(f"INSERT INTO {SQLITE_TABLE} ({SQLITE_TABLE}) VALUES ('optimize')")


def merge_search_index_step(connection, pages: int) -> bool:
    """One step of an incremental 'optimize': merge about ``pages`` pages of the FTS5 index,
    dropping deleted entries' words as it goes. Returns True while there is more to merge.

    For a sweep that must not hold the database lock for long: each step is a short write of
    its own, where 'optimize' rewrites the whole index at once. A negative page count merges
    segments of every level, as 'optimize' does (FTS5's documentation: "The 'merge' command").
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [SQLITE_TABLE])
        if not cursor.fetchone():
            return False
        cursor.execute("SELECT total_changes()")
        before = cursor.fetchone()[0]
        cursor.execute(f"INSERT INTO {SQLITE_TABLE} ({SQLITE_TABLE}, rank) VALUES ('merge', %s)", [-pages])
        cursor.execute("SELECT total_changes()")
        # FTS5's documentation: fewer than two changes means the merge had nothing left to do.
        return cursor.fetchone()[0] - before >= 2


def search_index_pages(connection) -> int:
    """How many pages the FTS5 index has now (rows of its ``_data`` table; 0 without one)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [SQLITE_TABLE + "_data"])
        if not cursor.fetchone():
            return 0
        cursor.execute(f"SELECT COUNT(*) FROM {SQLITE_TABLE}_data")
        return cursor.fetchone()[0]


def checkpoint_wal(using: str) -> None:
    """Rewrite the database from the write-ahead log and empty it: older versions of the erased
    pages are still in the log until a checkpoint."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
