"""What a read sees in time: rows not deleted and not expired, and the period it asks for.

An observation expires at its ``expires_at``, or once the ``RETENTION`` of its type has passed
since its last write (``updated_at``), whichever comes first. From then on no read sees it and no
write by id finds it, before the sweep (``services.expiry``) erases it. Both are judged at read
time against the clock, so a changed ``RETENTION`` takes effect at once.

``Window`` is a read's ``since`` / ``until`` on ``happened_at``: since inclusive, until exclusive,
so consecutive windows neither overlap nor leave a gap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import DateTimeField, Expression, Q
from django.utils import timezone

from .exceptions import ValidationError
from .validation import clean_moment


def _retention(config) -> dict:
    if config is None:
        from .conf import get_config

        config = get_config()
    return config.RETENTION


def _retained(retention: dict, now: datetime) -> list[tuple[str, datetime]]:
    """(type, the oldest last write still kept) for each type under a retention."""
    return [(type_, now - period) for type_, period in sorted(retention.items())]


def expiry_clauses(config=None, *, now: datetime | None = None, prefix: str = "") -> list[tuple[Q, str]]:
    """The ways a row is expired at ``now``, each with the column its index orders it by: past its
    ``expires_at``; then, per type under a retention, last written before the oldest kept."""
    now = now or timezone.now()
    clauses = [(Q(**{f"{prefix}expires_at__lte": now}), "expires_at")]
    for type_, oldest in _retained(_retention(config), now):
        clauses.append((Q(**{f"{prefix}type": type_, f"{prefix}updated_at__lte": oldest}), "updated_at"))
    return clauses


def expired_q(config=None, *, now: datetime | None = None, prefix: str = "") -> Q:
    """Rows expired at ``now`` (deleted or not): past their ``expires_at`` or their type's retention."""
    expired = Q()
    for clause, _ in expiry_clauses(config, now=now, prefix=prefix):
        expired |= clause
    return expired


def is_expired(observation, config=None, *, now: datetime | None = None) -> bool:
    """``expired_q`` for one row in hand."""
    now = now or timezone.now()
    if observation.expires_at is not None and observation.expires_at <= now:
        return True
    period = _retention(config).get(observation.type)
    return period is not None and observation.updated_at <= now - period


class Clock(Expression):
    """``timezone.now()``, less ``ago``, read when the statement is compiled: a filter built once
    still compares with the time of each query, by the clock every write uses (never the
    database's, so tests that move the clock move it here too)."""

    def __init__(self, ago: timedelta = timedelta(0)):
        super().__init__(output_field=DateTimeField())
        self.ago = ago

    def as_sql(self, compiler, connection):
        return "%s", [connection.ops.adapt_datetimefield_value(timezone.now() - self.ago)]


def live_q(config=None, *, now: datetime | None = None, prefix: str = "") -> Q:
    """Rows a read sees at ``now`` (None: the time of each query that uses it): not deleted, not
    expired."""
    retention = tuple(sorted(_retention(config).items()))
    if now is None:
        return _live_by_the_clock(retention, prefix)
    return _live(retention, prefix, now=lambda ago: now - ago)


@functools.cache
def _live_by_the_clock(retention: tuple, prefix: str) -> Q:
    # Built once per retention: every read filters by it, and building it cost more than its SQL.
    return _live(retention, prefix, now=Clock)


def _live(retention: tuple, prefix: str, *, now) -> Q:
    """``now(ago)``: the moment ``ago`` before now, a datetime or an expression."""
    live = Q(**{f"{prefix}deleted_at__isnull": True}) & (
        Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now(timedelta(0))}))
    for type_, period in retention:
        # NOT (type = t AND updated_at <= the oldest kept): neither column is ever NULL.
        live &= ~Q(**{f"{prefix}type": type_, f"{prefix}updated_at__lte": now(period)})
    return live


def live_sql(alias: str, connection, config=None, *, now: datetime | None = None) -> tuple[str, list]:
    """``live_q`` for a raw statement over ``alias`` (an observation table's alias): an
    ``AND …`` clause and its parameters."""
    now = now or timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    clause = f" AND {alias}.deleted_at IS NULL AND ({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"
    params: list[Any] = [adapt(now)]
    for type_, oldest in _retained(_retention(config), now):
        clause += f" AND NOT ({alias}.type = %s AND {alias}.updated_at <= %s)"
        params += [type_, adapt(oldest)]
    return clause, params


@dataclass(frozen=True)
class Window:
    """A read's period on ``happened_at``: ``since`` inclusive, ``until`` exclusive (None: open)."""

    since: datetime | None = None
    until: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.since is None and self.until is None

    def __contains__(self, moment: datetime) -> bool:
        return (self.since is None or moment >= self.since) and (self.until is None or moment < self.until)

    def q(self) -> Q:
        window = Q()
        if self.since is not None:
            window &= Q(happened_at__gte=self.since)
        if self.until is not None:
            window &= Q(happened_at__lt=self.until)
        return window

    def sql(self, alias: str, connection) -> tuple[str, list]:
        """An ``AND …`` clause over ``alias``'s happened_at, and its parameters ("" when open)."""
        adapt = connection.ops.adapt_datetimefield_value
        clause, params = "", []
        if self.since is not None:
            clause += f" AND {alias}.happened_at >= %s"
            params.append(adapt(self.since))
        if self.until is not None:
            clause += f" AND {alias}.happened_at < %s"
            params.append(adapt(self.until))
        return clause, params


OPEN = Window()


def clean_window(since: Any = None, until: Any = None) -> Window:
    """``since`` / ``until`` as a Window (each a moment ``validation.clean_moment`` reads, or
    None); ValidationError when one is unreadable or ``until`` is not after ``since``. A Window
    passes as it is."""
    if isinstance(since, Window) and until is None:
        return since
    window = Window(clean_moment("since", since), clean_moment("until", until))
    if window.since is not None and window.until is not None and window.until <= window.since:
        raise ValidationError("until", "must be later than since.", code="empty_period")
    return window
