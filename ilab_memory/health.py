"""What a load balancer's or an orchestrator's probe asks: can this process serve memory?

Four parts, each a few indexed reads and none about any user: the database answers, every
migration is applied, the embedding backlog is not too old, and when memories wait, a runner
is at work on them. The backlog's reads serve the metrics too (``ilab_memory.metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from .conf import Config, get_config
from .models import ObservationVector, Session

# Counts stop here (the console's cap): a probe never counts a whole table.
BACKLOG_CAP = 10_000


@dataclass(frozen=True)
class Backlog:
    """Memories waiting for a vector: how many (at most ``BACKLOG_CAP``) and the oldest's wait."""

    size: int
    oldest_seconds: float | None

    @property
    def capped(self) -> bool:
        return self.size >= BACKLOG_CAP


@dataclass(frozen=True)
class Part:
    """One part of the answer: whether it holds, and what the operator reads about it."""

    name: str
    ok: bool
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Health:
    parts: list[Part]

    @property
    def ok(self) -> bool:
        return all(part.ok for part in self.parts)

    @property
    def failing(self) -> list[str]:
        return [part.name for part in self.parts if not part.ok]


def backlog(*, now: datetime, using: str = "default") -> Backlog:
    """The embedding queue's size and its oldest row's wait, through the queue's partial index."""
    queued = ObservationVector.objects.using(using).filter(model_id__isnull=True).order_by("queued_at")
    size = queued.values("pk")[:BACKLOG_CAP].count()
    oldest = queued.values_list("queued_at", flat=True).first() if size else None
    return Backlog(size, None if oldest is None else max(0.0, (now - oldest).total_seconds()))


def expired_open(*, now: datetime, config: Config, using: str = "default") -> int:
    """Sessions idle past the timeout that no sweep has closed yet (at most ``BACKLOG_CAP``),
    through the sweep's partial index: what a sweep that stopped running leaves growing."""
    expired = Session.objects.using(using).expired(now, config.SESSION_TIMEOUT_HOURS).order_by("last_activity_at")
    return expired.values("pk")[:BACKLOG_CAP].count()


def migrations_applied(using: str = "default") -> list[str]:
    """The migrations on disk that the database lacks (``app.name``), empty when all are applied."""
    # Every node, not the plan to the leaves: a plan skips a gap below an applied migration.
    loader = MigrationLoader(connections[using], ignore_no_migrations=True)
    return sorted(f"{app}.{name}" for app, name in loader.graph.nodes if (app, name) not in loader.applied_migrations)


def runner_seen(*, since: datetime, now: datetime, using: str = "default") -> bool:
    """Whether a runner is at work: it holds a lease on a waiting memory now, or stored a vector
    since ``since`` (between two batches it holds none)."""
    vectors = ObservationVector.objects.using(using)
    # The lease through the queue's partial index; the stored vector only when no lease is held
    # (embedded_at has no index of its own: this read runs only when health is in doubt).
    return (vectors.filter(model_id__isnull=True, claimed_until__gte=now).exists()
            or vectors.filter(embedded_at__gte=since).exists())


def check(*, now: datetime | None = None, config: Config | None = None, using: str = "default") -> Health:
    """Each part's state; a database that does not answer fails the first part and skips the rest."""
    config, now = config or get_config(), now or timezone.now()
    try:
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        # The error's class only: its message may name a host or an account.
        return Health([Part("database", False, {"error": type(error).__name__})])
    parts = [Part("database", True)]
    missing = migrations_applied(using)
    parts.append(Part("migrations", not missing, {"unapplied": len(missing)}))
    waiting = backlog(now=now, using=using)
    limit = config.HEALTH_BACKLOG_SECONDS
    parts.append(Part("backlog", waiting.oldest_seconds is None or waiting.oldest_seconds <= limit, {
        "size": waiting.size, "capped": waiting.capped, "oldest_seconds": _round(waiting.oldest_seconds),
        "limit_seconds": limit,
    }))
    parts.append(_runner(waiting, config=config, using=using, now=now))
    return Health(parts)


def _runner(waiting: Backlog, *, config: Config, using: str, now: datetime) -> Part:
    # A runner leaves no trace but its work: with nothing waiting there is nothing to see; with
    # rows waiting past the grace period, one of them is under a runner's lease, or none runs.
    configured = config.EMBEDDING_RUNNER is not None
    grace = config.HEALTH_RUNNER_SECONDS
    if not configured or waiting.oldest_seconds is None or waiting.oldest_seconds <= grace:
        return Part("runner", True, {"configured": configured})
    seen = runner_seen(since=now - timedelta(seconds=grace), now=now, using=using)
    return Part("runner", seen, {"configured": configured, "grace_seconds": grace})


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
