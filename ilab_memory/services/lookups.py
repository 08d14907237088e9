"""The row lookups every write runs, in fixed SQL.

Measured (benchmarks/perf.py, cProfile): building these ORM queries cost several times running
them (~0.3 ms of Python each against ~0.08 ms through ``raw()``), and a save runs three of them.
``raw()`` still builds model instances through the backend's converters, so callers get the
same objects the ORM would give; parameters are adapted by the fields themselves.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache

from django.db import connections

from ..models import Observation, Session, SessionStatus


@cache
def _select(model) -> str:
    # Explicit columns: PostgreSQL's observation table also holds the search tsvector.
    columns = ", ".join(field.column for field in model._meta.concrete_fields)
    return f"SELECT {columns} FROM {model._meta.db_table}"


def _first(model, sql: str, params: list, *, using: str):
    rows = list(model.objects.db_manager(using).raw(sql, params))
    return rows[0] if rows else None


def _datetime_param(value: datetime, *, using: str):
    return connections[using].ops.adapt_datetimefield_value(value)


def active_session(user_id: str, *, using: str, for_update: bool) -> Session | None:
    """The user's active session (the partial unique index makes it one lookup)."""
    lock = " FOR UPDATE" if for_update and connections[using].features.has_select_for_update else ""
    sql = f"{_select(Session)} WHERE user_id = %s AND status = %s{lock}"
    return _first(Session, sql, [user_id, SessionStatus.ACTIVE.value], using=using)


def live_observation_by_topic(user_id: str, topic_key: str, *, using: str) -> Observation | None:
    sql = f"{_select(Observation)} WHERE user_id = %s AND topic_key = %s AND deleted_at IS NULL"
    return _first(Observation, sql, [user_id, topic_key], using=using)


def recent_duplicate(user_id: str, digest: str, since: datetime, *, using: str) -> Observation | None:
    """The newest live observation with this dedupe hash created at or after ``since``."""
    sql = (
        f"{_select(Observation)} WHERE user_id = %s AND dedupe_hash = %s AND created_at >= %s"
        " AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 1"
    )
    return _first(Observation, sql, [user_id, digest, _datetime_param(since, using=using)], using=using)


def set_last_activity(session: Session, now: datetime, *, using: str) -> None:
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Session._meta.db_table} SET last_activity_at = %s WHERE id = %s",
            [_datetime_param(now, using=using), Session._meta.pk.get_db_prep_value(session.pk, connection)],
        )
