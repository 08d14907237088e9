"""PostgreSQL: the hot statements run prepared, each planned once per connection.

Django binds parameters on the client (psycopg's ``ClientCursor``): every call sends new text,
and PostgreSQL plans it again. Measured, planning the start statement took longer than running
it. So ``Statements`` runs its SQL through a cursor that binds on the server and prepares.

A prepared statement is still planned anew on every run whenever PostgreSQL estimates its
generic plan (made without the values) to cost more than the plans made for the values, and
it did so for the start statement: the estimate of the user's rows is a guess without the
value. Our statements are written to have one good plan for every user (the user's own
index, limits written into the text; tests/test_context_sql.py checks the generic plan), so
on a connection where nothing else prepares, the session is set to keep generic plans.

The cursor is still Django's wrapper: errors are Django's, queries are counted, execute
wrappers run. While Django logs queries (DEBUG), they run unprepared so the log has their SQL.

Off (``PREPARED_STATEMENTS: False``) behind a pooler that hands one client's statements to
several server connections without tracking prepared statements (PgBouncer in transaction
mode before 1.21, or with ``max_prepared_statements = 0``); see docs/deploy.md.
"""

from __future__ import annotations

import sys
import weakref
from functools import cache, partial

# Driver connections on which only ilab_memory prepares (Django left psycopg's preparing off),
# and those of them whose session already keeps generic plans.
_ours = weakref.WeakSet()
_generic_plans = weakref.WeakSet()


def cursor_opener(connection, *, prepare: bool):
    """``connection.cursor``, or on PostgreSQL with psycopg 3 a cursor that prepares what it runs."""
    if not prepare or connection.vendor != "postgresql":
        return connection.cursor
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return partial(_preparing_cursor, connection) if is_psycopg3 else connection.cursor


def _preparing_cursor(connection):
    if connection.queries_logged:
        return connection.cursor()
    # What connection.cursor() does, with a server-binding cursor instead of the client one.
    connection.ensure_connection()
    connection.validate_thread_sharing()
    driver_connection = connection.connection
    if driver_connection not in _generic_plans:
        _set_up(driver_connection)
    return connection.make_cursor(_preparing_cursor_class()(driver_connection))


def _set_up(driver_connection) -> None:
    if driver_connection.prepare_threshold is None:
        # Django turns psycopg's automatic preparing off with None, which also refuses an
        # explicit prepare=True. A threshold no count reaches lets the explicit request through
        # and keeps the automatic preparing off (Django's cursors bind on the client and never
        # prepare anyway).
        driver_connection.prepare_threshold = sys.maxsize
        _ours.add(driver_connection)
    if driver_connection not in _ours:
        return  # the site prepares its own queries too: their plans are not ours to choose
    from psycopg.pq import TransactionStatus

    # Only outside a transaction: a rollback would undo the setting, unseen.
    if driver_connection.autocommit and driver_connection.info.transaction_status == TransactionStatus.IDLE:
        driver_connection.execute("SET plan_cache_mode = force_generic_plan")
        _generic_plans.add(driver_connection)


@cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        """Binds on the server and prepares every statement (Django's wrapper passes no flag)."""

        def execute(self, query, params=None, *, prepare=True, binary=None):
            return super().execute(query, params, prepare=prepare, binary=binary)

    return PreparingCursor
