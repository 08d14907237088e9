"""Rebuilding and repairing the full-text index, on whichever engine the connection is.

Used by the ``ilab_memory_rebuild_index`` command, the ``post_migrate`` receiver (``apps.py``)
and every SQLite search (``index_ensure``). Migrations 0002 and 0008 hold their own copy of the
statements, as they ran them; a test checks that both build the same index.
"""

from __future__ import annotations

from django.db import connections, transaction

from .postgresql import PG_CREATE, PG_REBUILD, pg_triggers_present
from .sqlite import (
    SQLITE_CREATE_TABLE,
    SQLITE_CREATE_TERMS,
    SQLITE_CREATE_TRIGGERS,
    SQLITE_REBUILD,
    SQLITE_TABLE,
    sqlite_index_state,
)
from .tables import OBSERVATION_TABLE


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


def index_ensure(*, using: str = "default") -> bool:
    """Repair the SQLite index when a table rebuild dropped its triggers; True if it did. Also
    give the connection its terms table (``sqlite.SQLITE_TERMS``) if it has none yet.

    Django rebuilds a SQLite table to alter a field (new table, copy, drop, rename), and the
    drop takes the triggers with it. Writes made since then are missing from the index, so a
    repair is a full rebuild, not just new triggers.
    """
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    triggers, terms = sqlite_index_state(connection)
    if not terms:
        _execute(connection, (SQLITE_CREATE_TERMS,))
    if triggers:
        return False
    index_rebuild(using=using)
    return True


def repair_after_migrate(*, using: str = "default", **kwargs) -> None:
    """``post_migrate`` receiver: a migration that rebuilt the observation table dropped the
    SQLite triggers; put them back and refill the index before anything else writes."""
    connection = connections[using]
    if connection.vendor != "sqlite" or SQLITE_TABLE not in connection.introspection.table_names():
        return  # not SQLite, or the search migration is not applied (yet, or any more)
    index_ensure(using=using)
