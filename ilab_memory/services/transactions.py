"""The outermost transaction of a service call, retried when a concurrent writer won a race."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from django.db import IntegrityError, OperationalError, connections, transaction

from ..exceptions import Conflict

T = TypeVar("T")

ATTEMPTS = 4
# PostgreSQL's answers to a race it settled by cancelling one transaction: a deadlock, or a
# serialization failure. Its documentation asks the application to retry them.
POSTGRESQL_RACES = {"40P01", "40001"}


class RaceLost(Exception):
    """A row this transaction read was changed by a concurrent writer before it could write it."""


def atomic_with_retry(fn: Callable[[], T], *, using: str) -> T:
    """Run ``fn`` in ``transaction.atomic``; rerun it when a concurrent writer won a race.

    Races end in the database's own rules: a unique violation (two callers opened the same
    user's first session, PostgreSQL), a deadlock or serialization failure PostgreSQL settled
    by cancelling this transaction, SQLite's "database is locked" on a site whose SQLite
    connection is not in IMMEDIATE mode, or ``RaceLost`` from a service that found its row
    changed under it. The rerun sees the winner's committed row; a race lost on every attempt
    raises ``Conflict`` (HTTP 409), never the database's error. Inside an outer transaction
    there is nothing safe to retry, so the error propagates.
    """
    connection = connections[using]
    retry_allowed = not connection.in_atomic_block
    for attempt in range(ATTEMPTS):
        try:
            with transaction.atomic(using=using):
                return fn()
        except (IntegrityError, RaceLost, OperationalError) as exc:
            if not (retry_allowed and is_race(exc, connection.vendor)):
                raise
            if attempt == ATTEMPTS - 1:
                raise Conflict("Concurrent writes to the same rows won every retry; nothing was written.") from exc
            if isinstance(exc, OperationalError):
                time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def is_race(exc: Exception, vendor: str) -> bool:
    """Whether ``exc`` is a race the database settled against this transaction (worth a rerun)."""
    if not isinstance(exc, OperationalError):
        return True
    if vendor == "sqlite":
        return "locked" in str(exc)
    return getattr(exc.__cause__, "sqlstate", None) in POSTGRESQL_RACES
