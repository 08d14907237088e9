"""Values in and out of the fixed-SQL hot paths, converted exactly as the ORM would."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone as dt_timezone

from django.conf import settings
from django.db import connections
from django.utils import timezone
from django.utils.dateparse import parse_datetime


class DbValues:
    """Parameters for, and raw driver values from, one connection.

    Built once per call: the per-connection facts (native UUIDs, the connection's time zone)
    are read here, so converting each row costs a method call, not a settings lookup.
    """

    def __init__(self, using: str):
        self.connection = connection = connections[using]
        self._native_uuid = connection.features.has_native_uuid_field
        self._use_tz = settings.USE_TZ
        # Naive values from the driver are in the connection's zone (SQLite with TIME_ZONE).
        self._zone = connection.timezone if self._use_tz else None
        # Stored times are absolute instants: aware columns, or naive ones kept in UTC.
        self.absolute_times = self._use_tz and (
            connection.features.supports_timezones or str(self._zone) in ("UTC", "Etc/UTC")
        )

    # -- parameters ------------------------------------------------------------------------

    def uuid_param(self, value: uuid.UUID):
        # SQLite stores UUIDs as 32 hex digits, PostgreSQL natively.
        return value if self._native_uuid else value.hex

    def datetime_param(self, value: datetime):
        return self.connection.ops.adapt_datetimefield_value(value)

    def json_param(self, value):
        return self.connection.ops.adapt_json_value(value, None)

    # -- results ---------------------------------------------------------------------------

    def datetime(self, value) -> datetime | None:
        """A timestamp column: aware with USE_TZ (in the connection's zone), naive without."""
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                value = parse_datetime(value)
        if not self._use_tz:
            return timezone.make_naive(value) if value.tzinfo is not None else value
        if value.tzinfo is None:
            value = value.replace(tzinfo=self._zone)
        return value

    @staticmethod
    def uuid(value) -> uuid.UUID:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(value)

    @staticmethod
    def uuid_text(value) -> str:
        """A UUID column as its canonical string."""
        if isinstance(value, str) and len(value) == 32:
            # SQLite's 32 hex digits: dashed by slicing, several times cheaper than parsing a
            # UUID to print it (a start prints 25 of them).
            value = value.lower()
            return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
        return str(DbValues.uuid(value))

    @staticmethod
    def json(value):
        # Django reads jsonb as text on PostgreSQL too, and decodes it itself.
        return json.loads(value) if isinstance(value, (str, bytes)) else value


def db_datetime(value, *, using: str) -> datetime | None:
    """A raw timestamp column as the ORM would return it, in UTC (naive without USE_TZ)."""
    value = DbValues(using).datetime(value)
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt_timezone.utc)
