"""The outermost transaction of a service call, retried when a concurrent writer won a race."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from django.db import IntegrityError, OperationalError, connections, transaction

T = TypeVar("T")

ATTEMPTS = 4


class RaceLost(Exception):
    """A row this transaction read was changed by a concurrent writer before it could write it."""


def atomic_with_retry(fn: Callable[[], T], *, using: str) -> T:
    """Run ``fn`` in ``transaction.atomic``; rerun it when a concurrent writer won a race.

    Races end in the database's own rules: a unique violation (two callers opened the same
    user's first session, PostgreSQL), SQLite's "database is locked" on a site whose SQLite
    connection is not in IMMEDIATE mode, or ``RaceLost`` from a service that found its row
    changed under it. The rerun sees the winner's committed row. Inside an
    outer transaction there is nothing safe to retry, so the error propagates.
    """
    connection = connections[using]
    retry_allowed = not connection.in_atomic_block
    for attempt in range(ATTEMPTS):
        try:
            with transaction.atomic(using=using):
                return fn()
        except (IntegrityError, RaceLost):
            if not retry_allowed or attempt == ATTEMPTS - 1:
                raise
        except OperationalError as exc:
            locked = connection.vendor == "sqlite" and "locked" in str(exc)
            if not (retry_allowed and locked) or attempt == ATTEMPTS - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover
