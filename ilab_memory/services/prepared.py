"""PostgreSQL: the hot statements run prepared, so the server plans each once per connection.

Django binds parameters on the client (psycopg's ``ClientCursor``): every call sends new text,
and PostgreSQL plans it again. Measured, planning the start statement took longer than running
it. A prepared statement is planned once per connection, and after five runs PostgreSQL keeps a
generic plan when it costs no more than the custom ones (``statements`` writes limits into the
SQL so that it does). The cursor is still Django's wrapper: errors are Django's, queries are
counted, execute wrappers run; while Django logs queries (DEBUG), they run unprepared.

Off (``PREPARED_STATEMENTS: False``) behind a pooler that hands a session's statements to
different server connections and does not track prepared statements (PgBouncer in transaction
mode before 1.21, or with ``max_prepared_statements = 0``); see docs/deploy.md.
"""

from __future__ import annotations

import sys
from functools import cache, partial


def cursor_opener(connection, *, prepare: bool):
    """``connection.cursor``, or on PostgreSQL with psycopg 3 a cursor that prepares what it runs."""
    if not prepare or connection.vendor != "postgresql":
        return connection.cursor
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return partial(_preparing_cursor, connection) if is_psycopg3 else connection.cursor


def _preparing_cursor(connection):
    if connection.queries_logged:
        # DEBUG, or a test capturing queries: Django's cursor, so the log shows each statement
        # with its values (psycopg keeps no text for a prepared execution).
        return connection.cursor()
    # What connection.cursor() does, with a server-binding cursor instead of the client one.
    connection.ensure_connection()
    connection.validate_thread_sharing()
    driver_connection = connection.connection
    if driver_connection.prepare_threshold is None:
        # Django turns psycopg's automatic preparing off with None, which also refuses an
        # explicit prepare=True. A threshold no count reaches lets the explicit request through
        # and keeps the automatic preparing off (Django's own cursors bind on the client and
        # never prepare either way).
        driver_connection.prepare_threshold = sys.maxsize
    return connection.make_cursor(_preparing_cursor_class()(driver_connection))


@cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        """Binds on the server and prepares every statement (Django's wrapper passes no flag)."""

        def execute(self, query, params=None, *, prepare=True, binary=None):
            return super().execute(query, params, prepare=prepare, binary=binary)

    return PreparingCursor
