"""Raw driver values turned into what the ORM would return, for the fixed-SQL read paths."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.conf import settings
from django.db import connections
from django.utils import timezone
from django.utils.dateparse import parse_datetime


def db_datetime(value, *, using: str) -> datetime | None:
    """A raw timestamp column as the ORM would return it: aware UTC with USE_TZ, naive without.

    SQLite hands back the stored text, naive in the connection's time zone (UTC unless the
    database sets ``TIME_ZONE``); PostgreSQL hands back an aware datetime.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_datetime(value)
    if not settings.USE_TZ:
        return timezone.make_naive(value) if timezone.is_aware(value) else value
    if timezone.is_naive(value):
        value = value.replace(tzinfo=connections[using].timezone)
    return value.astimezone(dt_timezone.utc)
