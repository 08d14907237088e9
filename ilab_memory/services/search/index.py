"""Rebuilding and repairing the full-text index, on whichever engine the connection is.

Used by the ``ilab_memory_rebuild_index`` command and the ``post_migrate`` receiver (``apps.py``),
the one repair: only a migration rebuilds the observation table. Migrations 0002 and 0008 hold
their own copy of the statements, as they ran them; a test checks that both build the same index.
"""

from __future__ import annotations

from django.db import connections, transaction

from ...models import OBSERVATION_TABLE
from .postgresql import PG_CREATE, PG_REBUILD, pg_triggers_present
from .sqlite import (
    SQLITE_CREATE_TABLE,
    SQLITE_CREATE_TERMS,
    SQLITE_CREATE_TRIGGERS,
    SQLITE_REBUILD,
    SQLITE_TABLE,
    sqlite_triggers_present,
)


def _execute(connection, statements) -> None:
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def index_rebuild(*, using: str = "default") -> int:
    """Recreate the triggers and refill the index from the observation table; returns the rows."""
    connection = connections[using]
    with transaction.atomic(using=using):
        if connection.vendor == "sqlite":
            _execute(connection, (SQLITE_CREATE_TABLE, *SQLITE_CREATE_TRIGGERS, *SQLITE_REBUILD))
        elif connection.vendor == "postgresql":
            # ALTER TABLE refuses to run in a transaction with pending trigger events, so the
            # structures are only recreated when something is missing.
            _execute(connection, PG_REBUILD if pg_triggers_present(connection) else (*PG_CREATE, *PG_REBUILD))
        else:
            raise NotImplementedError(f"ilab_memory search supports SQLite and PostgreSQL, not {connection.vendor}.")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {OBSERVATION_TABLE}")
            return cursor.fetchone()[0]


def repair_after_migrate(*, using: str = "default", **kwargs) -> None:
    """``post_migrate`` receiver: put back the SQLite triggers a migration dropped, and refill the index.

    Django rebuilds a SQLite table to alter a field (new table, copy, drop, rename), and the
    drop takes the triggers with it. Rows the migrations wrote since then are missing from the
    index, so a repair is a full rebuild, not just new triggers. ``migrate`` sends the signal on
    every run, also the embedded mode's on opening its file.
    """
    connection = connections[using]
    if connection.vendor != "sqlite" or SQLITE_TABLE not in connection.introspection.table_names():
        return  # not SQLite, or the search migration is not applied (yet, or any more)
    if not sqlite_triggers_present(connection):
        index_rebuild(using=using)


def add_terms_table(*, connection, **kwargs) -> None:
    """``connection_created`` receiver: give a new SQLite connection the index's terms table
    (``sqlite.SQLITE_TERMS``), so no search has to ask whether it is there.

    A table of the connection's temp schema: the database file gains no object. Created before
    the index exists (a new database), it reads the index once a migration has made it.
    """
    if connection.vendor == "sqlite":
        _execute(connection, (SQLITE_CREATE_TERMS,))
