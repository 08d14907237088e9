"""Reads, each scoped by user_id and composed from the queryset methods of ``models``.

The two reads every session start makes (the recent sessions, ``context_memories``) use the
fixed SQL of ``services.statements`` instead: measured, building their ORM queries cost more than
running them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from operator import itemgetter

from django.db.models import Count, Q
from django.db.models.functions import Substr
from django.utils import timezone

from . import records
from .conf import Config, get_config
from .exceptions import ObservationNotFound, SessionNotFound
from .models import Observation, ObservationRevision, Session, SessionStatus
from .services import scoring
from .services.statements import Statements
from .types import MemoryStats, ObservationCompact, SessionRecord, SessionSummaryCompact, Timeline

COMPACT_FIELDS = ("id", "type", "title", "topic_key", "session_id", "updated_at", "content_head")


def parse_uuid(value, error: type[LookupError]) -> uuid.UUID:
    """A UUID from a string or UUID; anything else is "not found", never a crash."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise error(f"No such {error.__name__.removesuffix('NotFound').lower()}.") from None


def compact_rows(queryset, *, preview_chars: int, extra: tuple[str, ...] = ()):
    """``values()`` rows with only the head of the content: enough for a preview, never 50 KB."""
    return queryset.annotate(content_head=Substr("content", 1, preview_chars + 1)).values(
        *COMPACT_FIELDS, *extra
    )


def session_summaries(rows, values) -> list[SessionSummaryCompact]:
    """From ``Statements.recent_sessions`` rows."""
    return [
        SessionSummaryCompact(
            session_id=values.uuid_text(session_id),
            started_at=records.iso(values.datetime(started_at)),
            ended_at=records.iso(values.datetime(ended_at)),
            summary=summary,
            is_auto_generated=bool(is_auto_generated),
            observation_count=count,
        )
        for session_id, started_at, ended_at, summary, is_auto_generated, count in rows
    ]


def _observation_counts(session_ids, *, using: str) -> dict:
    if not session_ids:
        return {}
    rows = (
        Observation.objects.using(using)
        .live()
        .filter(session_id__in=session_ids)
        .values("session_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {row["session_id"]: row["n"] for row in rows}


def session_observation_count(session_id, *, using: str = "default") -> int:
    return Observation.objects.using(using).live().filter(session_id=session_id).count()


def context_memories(
    *, user_id: str, limit: int, config: Config | None = None, using: str = "default", now: datetime | None = None,
    statements: Statements | None = None,
) -> list[ObservationCompact]:
    """The user's live observations ranked by ContextScore over the newest candidates."""
    config = config or get_config()
    now = now or timezone.now()
    statements = statements or Statements(using)
    weights = config.TYPE_WEIGHTS
    if statements.ranks_context_in_sql:
        # Hot path (every session start): the database ranks, only the winners come back.
        rows = statements.ranked_context(
            user_id, now=now, type_weights=weights, head_chars=config.PREVIEW_CHARS + 1,
            candidates=config.CONTEXT_CANDIDATES, limit=max(0, limit),
        )
    else:
        rows = _ranked_in_python(statements, user_id, now=now, limit=limit, config=config)
    return ranked_memories(rows, statements.values, now=now, config=config)


def ranked_memories(rows, values, *, now: datetime, config: Config) -> list[ObservationCompact]:
    """From ranked candidate rows (``Statements.ranked_context``), best first."""
    memories = []
    for observation_id, type_, title, topic_key, session_id, updated_at, content_head, revisions, duplicates, *_ in rows:
        updated_at = values.datetime(updated_at)
        signals = scoring.context_signals(
            now=now, updated_at=updated_at, type=type_, revision_count=revisions,
            duplicate_count=duplicates, type_weights=config.TYPE_WEIGHTS,
        )
        memories.append(ObservationCompact(
            id=values.uuid_text(observation_id),
            type=type_,
            title=title,
            preview=records.preview(content_head, config.PREVIEW_CHARS),
            topic_key=topic_key,
            session_id=values.uuid_text(session_id),
            updated_at=records.iso(updated_at),
            score=signals.score(),
        ))
    return memories


def _ranked_in_python(statements: Statements, user_id: str, *, now: datetime, limit: int, config: Config):
    """The same ranking over the candidate rows, for databases that store local times."""
    values = statements.values
    weights = config.TYPE_WEIGHTS
    ranked = []
    for row in statements.context_candidates(
        user_id, head_chars=config.PREVIEW_CHARS + 1, limit=config.CONTEXT_CANDIDATES
    ):
        updated_at = values.datetime(row[5])
        value = scoring.context_value(
            hours=scoring.hours_between(updated_at, now),
            type_weight=float(weights.get(row[1], 1.0)),
            extra=scoring.reinforcing_uses(row[7], row[8]),
        )
        # Deterministic: score, then newest update, then id (hex orders like the UUID string).
        ranked.append((value, updated_at, _uuid_hex(row[0]), row))
    ranked.sort(key=itemgetter(0, 1, 2), reverse=True)
    return [row for *_, row in ranked[: max(0, limit)]]


def _uuid_hex(value) -> str:
    # SQLite stores UUIDs as 32 hex digits; PostgreSQL hands back uuid.UUID.
    return value.hex if isinstance(value, uuid.UUID) else value


def observation_get(*, user_id: str, observation_id, using: str = "default") -> Observation:
    """The user's live observation; anything else raises ObservationNotFound."""
    pk = parse_uuid(observation_id, ObservationNotFound)
    try:
        return Observation.objects.using(using).for_user(user_id).live().get(pk=pk)
    except Observation.DoesNotExist:
        raise ObservationNotFound("No such observation.") from None


def observation_revisions(*, user_id: str, observation_id, using: str = "default"):
    observation = observation_get(user_id=user_id, observation_id=observation_id, using=using)
    revisions = ObservationRevision.objects.using(using).filter(observation=observation).order_by("-revision")
    return [records.revision_record(r) for r in revisions]


def observation_timeline(
    *, user_id: str, observation_id, before: int = 5, after: int = 5, config: Config | None = None, using: str = "default"
) -> Timeline:
    """The live observations of the anchor's session just before and after it, in creation order."""
    config = config or get_config()
    anchor = observation_get(user_id=user_id, observation_id=observation_id, using=using)
    same_session = Observation.objects.using(using).for_user(user_id).live().filter(session_id=anchor.session_id)
    earlier = Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at, id__lt=anchor.id)
    later = Q(created_at__gt=anchor.created_at) | Q(created_at=anchor.created_at, id__gt=anchor.id)
    before_rows = list(
        compact_rows(same_session.filter(earlier).order_by("-created_at", "-id")[: max(0, before)], preview_chars=config.PREVIEW_CHARS)
    )
    after_rows = compact_rows(
        same_session.filter(later).order_by("created_at", "id")[: max(0, after)], preview_chars=config.PREVIEW_CHARS
    )
    anchor_row = compact_rows(
        Observation.objects.using(using).filter(pk=anchor.pk), preview_chars=config.PREVIEW_CHARS
    ).get()

    def compact(row):
        return records.observation_compact(row, preview_chars=config.PREVIEW_CHARS)

    return Timeline(
        session_id=str(anchor.session_id),
        anchor=compact(anchor_row),
        before=[compact(r) for r in reversed(before_rows)],
        after=[compact(r) for r in after_rows],
    )


def session_get(*, user_id: str, session_id, using: str = "default") -> SessionRecord:
    pk = parse_uuid(session_id, SessionNotFound)
    try:
        session = Session.objects.using(using).for_user(user_id).get(pk=pk)
    except Session.DoesNotExist:
        raise SessionNotFound("No such session.") from None
    return records.session_record(session, session_observation_count(session.pk, using=using))


def sessions_list(
    *, user_id: str, status: str | None = None, is_auto_generated: bool | None = None, limit: int = 50, using: str = "default"
) -> list[SessionRecord]:
    """The user's sessions, newest started first."""
    sessions = Session.objects.using(using).for_user(user_id).order_by("-started_at", "-id")
    if status is not None:
        sessions = sessions.filter(status=status)
    if is_auto_generated is not None:
        sessions = sessions.filter(is_auto_generated=is_auto_generated)
    sessions = list(sessions[: max(0, limit)])
    counts = _observation_counts([s.id for s in sessions], using=using)
    return [records.session_record(s, counts.get(s.id, 0)) for s in sessions]


def stats(*, user_id: str, using: str = "default") -> MemoryStats:
    session_counts = Session.objects.using(using).for_user(user_id).aggregate(
        total=Count("id"),
        active=Count("id", filter=Q(status=SessionStatus.ACTIVE)),
        completed=Count("id", filter=Q(status=SessionStatus.COMPLETED)),
        auto=Count("id", filter=Q(summary__isnull=False, is_auto_generated=True)),
        human=Count("id", filter=Q(summary__isnull=False, is_auto_generated=False)),
    )
    observations = Observation.objects.using(using).for_user(user_id)
    observation_counts = observations.aggregate(
        live=Count("id", filter=Q(deleted_at__isnull=True)),
        deleted=Count("id", filter=Q(deleted_at__isnull=False)),
    )
    by_type = {
        row["type"]: row["n"]
        for row in observations.live().values("type").annotate(n=Count("id")).order_by("type")
    }
    revisions = ObservationRevision.objects.using(using).filter(user_id=user_id).count()
    return MemoryStats(
        user_id=user_id,
        sessions=session_counts["total"],
        active_sessions=session_counts["active"],
        completed_sessions=session_counts["completed"],
        auto_summaries=session_counts["auto"],
        human_summaries=session_counts["human"],
        observations=observation_counts["live"],
        deleted_observations=observation_counts["deleted"],
        revisions=revisions,
        observations_by_type=by_type,
    )
