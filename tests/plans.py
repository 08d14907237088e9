"""PostgreSQL's plans of a statement: for its values, and the generic one a prepared run keeps."""

import re

from django.db import connection


def custom_and_generic_plans(sql: str, params: list) -> tuple[str, str]:
    """EXPLAIN of ``sql`` with ``params``, and of its generic plan (services/prepared.py runs the
    hot statements prepared with ``plan_cache_mode = force_generic_plan``), each as one string."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("EXPLAIN " + sql, params)
        custom_plan = " ".join(str(part) for row in cursor.fetchall() for part in row)
        numbered = iter(range(1, len(params) + 1))
        cursor.execute("PREPARE planned AS " + re.sub(r"(?<!%)%s", lambda _: f"${next(numbered)}", sql))
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            cursor.execute(f"EXPLAIN EXECUTE planned({', '.join(['%s'] * len(params))})", params)
            generic_plan = " ".join(str(part) for row in cursor.fetchall() for part in row)
        finally:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("DEALLOCATE planned")
    return custom_plan, generic_plan
