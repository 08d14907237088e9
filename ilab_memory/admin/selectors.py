"""Reads behind the operator console: the overview across users and one user's page.

Each is one bounded, indexed query, so the overview costs the same at a thousand rows and at
millions: windows of the last days through the (-started_at) and (-updated_at) indexes, the
sweep's partial index for idle sessions, the queue's partial index for the embedding backlog,
what expires in the next days through the (expires_at) and (-updated_at) indexes, and counts
capped like the admin's paginator. Nothing here counts a whole table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Min, Q
from django.db.models.functions import TruncDate

from ..conf import Config, get_config
from ..models import Observation, ObservationVector, Session, SessionStatus
from ..scopes import ALL, Reach
from ..visibility import live_q

WINDOW_DAYS = 30
# "Expires soon": within this many days, on the overview and in the observation list's filter.
EXPIRING_DAYS = 7
# A list's scope filter offers at most this many of a user's scopes (the box reaches the rest).
SCOPE_CHOICES = 50
# Counts past this read "10,000+": the database stops counting there.
COUNT_CAP = 10_000


@dataclass(frozen=True)
class Capped:
    """A count that stopped at ``cap``: ``value`` is exact when ``value < cap``."""

    value: int
    cap: int

    @property
    def more(self) -> bool:
        return self.value >= self.cap


@dataclass(frozen=True)
class DayOfSessions:
    day: date
    auto: int
    human: int
    none: int

    @property
    def total(self) -> int:
        return self.auto + self.human + self.none


@dataclass(frozen=True)
class Overview:
    since: datetime
    days: list[DayOfSessions]
    memories_by_type: list[tuple[str, int]]
    busiest_users: list[tuple[str, int]]
    idle_open: Capped
    oldest_idle_activity: datetime | None
    embedding_backlog: Capped
    oldest_queued: datetime | None
    expiring_days: int
    expiring_by_type: list[tuple[str, int]]


def capped_count(queryset, *, along: str, cap: int = COUNT_CAP) -> Capped:
    """``min(rows, cap)`` of ``queryset``, read in the order of ``along``: the column of the
    partial index meant to serve it (SQLite otherwise counted the queue through a covering
    index of the whole vector table)."""
    return Capped(queryset.order_by(along).values("pk")[:cap].count(), cap)


def sessions_per_day(*, since: datetime, days: int) -> list[DayOfSessions]:
    """Sessions started on each of ``days`` UTC days from ``since``, by summary kind."""
    rows = (
        Session.objects.filter(started_at__gte=since, started_at__lt=since + timedelta(days=days))
        .annotate(day=TruncDate("started_at"))
        .order_by()
        .values("day")
        .annotate(
            auto=Count("pk", filter=Q(is_auto_generated=True)),
            human=Count("pk", filter=Q(is_auto_generated=False, summary__isnull=False) & ~Q(summary="")),
            total=Count("pk"),
        )
    )
    found = {row["day"]: row for row in rows}
    empty = {"auto": 0, "human": 0, "total": 0}
    result = []
    for offset in range(days):
        day = since.date() + timedelta(days=offset)
        row = found.get(day, empty)
        result.append(DayOfSessions(day, row["auto"], row["human"], row["total"] - row["auto"] - row["human"]))
    return result


def written_since(field: str, *, since: datetime, limit: int) -> list[tuple[str, int]]:
    """Live memories written (created, revised, repeated or edited) since ``since``, counted per
    ``field`` ("type", "user_id"), most first."""
    rows = (
        Observation.objects.live()
        .filter(updated_at__gte=since)
        .order_by()
        .values(field)
        .annotate(n=Count("pk"))
        .order_by("-n", field)[:limit]
    )
    return [(row[field], row["n"]) for row in rows]


def expiring_q(config: Config, *, now: datetime, days: int = EXPIRING_DAYS) -> Q:
    """Memories live at ``now`` that expire within ``days``: at their own ``expires_at``, or when
    their type's ``RETENTION`` runs out (``visibility``). Each branch is a range of an index."""
    horizon = now + timedelta(days=days)
    soon = Q(expires_at__gt=now, expires_at__lte=horizon)
    for type_, period in sorted(config.RETENTION.items()):
        soon |= Q(type=type_, updated_at__gt=now - period, updated_at__lte=horizon - period)
    return live_q(config, now=now) & soon


def expiring_by_type(config: Config, *, now: datetime, days: int = EXPIRING_DAYS) -> list[tuple[str, int]]:
    """How many live memories of each type expire within ``days`` of ``now``, most first."""
    rows = (
        Observation.objects.filter(expiring_q(config, now=now, days=days))
        .order_by()
        .values("type")
        .annotate(n=Count("pk"))
        .order_by("-n", "type")
    )
    return [(row["type"], row["n"]) for row in rows]


def overview(*, now: datetime, timeout_hours: int, days: int = WINDOW_DAYS, config: Config | None = None) -> Overview:
    """The state of memory across users: the last ``days`` days, open work, the queue, and what
    expires in the next ``EXPIRING_DAYS``."""
    config = config or get_config()
    today = datetime.combine(now.date(), datetime.min.time(), tzinfo=now.tzinfo)
    since = today - timedelta(days=days - 1)
    idle = Session.objects.idle(now, timeout_hours)
    queued = ObservationVector.objects.filter(model_id__isnull=True)
    return Overview(
        since=since,
        days=sessions_per_day(since=since, days=days),
        memories_by_type=written_since("type", since=since, limit=12),
        busiest_users=written_since("user_id", since=since, limit=10),
        idle_open=capped_count(idle, along="last_activity_at"),
        oldest_idle_activity=idle.order_by().aggregate(at=Min("last_activity_at"))["at"],
        embedding_backlog=capped_count(queued, along="queued_at"),
        oldest_queued=queued.order_by().aggregate(at=Min("queued_at"))["at"],
        expiring_days=EXPIRING_DAYS,
        expiring_by_type=expiring_by_type(config, now=now),
    )


@dataclass(frozen=True)
class ScopeOfUser:
    """One scope of a user: its sessions (how many active) and live memories."""

    scope: str
    sessions: int
    active_sessions: int
    memories: int


def user_scopes(*, user_id: str, live_by_scope: dict[str, int]) -> list[ScopeOfUser]:
    """The scopes one user has sessions in, the shared space first; sessions are counted here
    (the user's rows only), live memories are ``live_by_scope`` (``stats``' count, not read twice).
    Every memory is in a session of its scope, so no scope has memories and no session."""
    rows = (
        Session.objects.for_user(user_id).order_by().values("scope")
        .annotate(n=Count("pk"), active=Count("pk", filter=Q(status=SessionStatus.ACTIVE)))
        .order_by("scope")
    )
    return [ScopeOfUser(row["scope"], row["n"], row["active"], live_by_scope.get(row["scope"], 0)) for row in rows]


def user_scope_names(*, user_id: str, limit: int | None = SCOPE_CHOICES) -> list[str]:
    """The first ``limit`` scopes (None: all) one user has sessions in, in order (the user's rows only)."""
    return list(
        Session.objects.for_user(user_id).order_by("scope").values_list("scope", flat=True).distinct()[:limit]
    )


def user_recent_sessions(*, user_id: str, limit: int):
    """One user's newest sessions (the (user_id, -started_at) index), summaries cut short."""
    return list(
        Session.objects.for_user(user_id).with_observation_count().order_by("-started_at", "-id")[:limit]
    )


def user_recent_observations(*, user_id: str, limit: int):
    """One user's most recently written live memories (the (user_id, -updated_at) index)."""
    return list(
        Observation.objects.for_user(user_id)
        .live()
        .only("id", "user_id", "scope", "type", "title", "revision_count", "duplicate_count", "updated_at",
              "session_id")
        .order_by("-updated_at", "-id")[:limit]
    )


def user_rows_for_audit(*, user_id: str, scope: str = ALL) -> tuple[list, list]:
    """(session (pk, label) pairs, observation pks) of one user, or of one scope of it (``ALL``:
    every scope), read before an erasure."""
    part = Reach.exactly(scope).q()
    sessions = [
        (s.pk, str(s))
        for s in Session.objects.for_user(user_id).filter(part).only("id", "user_id", "scope", "started_at", "status")
    ]
    observations = list(Observation.objects.for_user(user_id).filter(part).order_by().values_list("pk", flat=True))
    return sessions, observations


def service_accounts(*, limit: int = 20) -> list[str]:
    """The active accounts granted ``ilab_memory.act_for_any_user`` (directly or through a
    group): the ones whose tokens may act for any user_id. Superusers are among them only when
    granted it on purpose (``DefaultMemoryAdapter.may_act_for_any_user``)."""
    from django.apps import apps
    from django.contrib.auth import get_user_model

    if not apps.is_installed("django.contrib.auth"):
        return []
    from django.contrib.auth.models import Permission

    User = get_user_model()
    grant = Permission.objects.filter(content_type__app_label="ilab_memory", codename="act_for_any_user")
    accounts = User.objects.filter(Q(user_permissions__in=grant) | Q(groups__permissions__in=grant), is_active=True)
    return list(accounts.distinct().order_by(User.USERNAME_FIELD).values_list(User.USERNAME_FIELD, flat=True)[:limit])
