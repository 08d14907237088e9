"""Reads, each scoped by user_id and by what its ``scope`` reaches, composed from the queryset
methods of ``models``.

Each public read cleans its user_id, its scope (``scopes.clean_read_reach``: a scope and the
shared space, ``"*"``, or a list) and its counts itself (``validation``), as the services do for
writes, so no face needs to.

The ranked context is the one read in ``sql`` (the database ranks the candidates). Selectors
never write and never import services.
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, IntegerField, Q, Value
from django.db.models.functions import Substr
from django.utils import timezone

from . import scoring, sql
from .conf import Config, get_config
from .embeddings import configured_embedder
from .exceptions import ObservationNotFound, SessionNotFound
from .models import Observation, ObservationRevision, ObservationVector, Session, SessionStatus
from .scopes import Reach, clean_read_reach
from .types import (
    MemoryStats,
    ObservationCompact,
    SessionRecord,
    SessionSummaryCompact,
    Timeline,
    observation_compact,
    revision_record,
    session_record,
    session_summary_compact,
)
from .validation import (
    CONTEXT_LIMIT,
    OBSERVATIONS_LIMIT,
    SESSIONS_LIMIT,
    TIMELINE_AFTER,
    TIMELINE_BEFORE,
    check_text,
    clean_choice,
    clean_type,
    clean_user_id,
    normalize_topic_key,
    parse_uuid,
)
from .visibility import clean_window

COMPACT_FIELDS = ("id", "scope", "type", "title", "topic_key", "session_id", "updated_at", "happened_at")
SUMMARY_FIELDS = ("id", "scope", "started_at", "ended_at", "summary", "is_auto_generated", "observation_count")
_POSITION = IntegerField()


def with_content_head(queryset, *, preview_chars: int):
    """Observations with only the head of their content: enough for a preview, never 50 KB."""
    # The positions as typed values: Django otherwise infers (builds) an IntegerField for each
    # on every compile of the page's query.
    head = Substr("content", Value(1, output_field=_POSITION), Value(preview_chars + 1, output_field=_POSITION))
    return queryset.only(*COMPACT_FIELDS).annotate(content_head=head)


def _user(user_id, config: Config | None) -> str:
    """``user_id`` cleaned as every service cleans it: each read checks it once, here."""
    return clean_user_id(user_id, limit=(config or get_config()).MAX_USER_ID_CHARS)


def recent_sessions(*, user_id: str, reach: Reach, limit: int, config: Config | None = None,
                    using: str = "default") -> list[SessionSummaryCompact]:
    """The user's newest completed sessions in ``reach`` (newest ``ended_at`` first) with live
    observation counts."""
    sessions = (
        Session.objects.using(using).for_user(user_id).completed().filter(reach.q())
        .with_observation_count(config).order_by("-ended_at", "-id").values_list(*SUMMARY_FIELDS, named=True)
    )
    return [session_summary_compact(session) for session in sessions[: max(0, limit)]]


def context_memories(
    *, user_id: str, limit: int, scope="", since=None, until=None, config: Config | None = None,
    using: str = "default", now: datetime | None = None,
) -> list[ObservationCompact]:
    """The user's live observations in what ``scope`` reaches (that happened from ``since`` to
    before ``until``, when given), ranked by ContextScore over the newest candidates (the
    scope's own first on equal scores)."""
    config = config or get_config()
    user_id, limit = _user(user_id, config), CONTEXT_LIMIT.clean(limit, config)
    window = clean_window(since, until)
    ranked = sql.ranked_context(
        user_id, clean_read_reach(scope, config=config), now=now or timezone.now(), type_weights=config.TYPE_WEIGHTS,
        head_chars=config.PREVIEW_CHARS + 1, candidates=config.CONTEXT_CANDIDATES, limit=limit, window=window,
        config=config, using=using,
    )
    return [
        observation_compact(row, preview_chars=config.PREVIEW_CHARS, score=scoring.context_score(row)) for row in ranked
    ]


def session_observation_count(session_id, *, config: Config | None = None, using: str = "default") -> int:
    return Observation.objects.using(using).live(config).filter(session_id=session_id).count()


def observation_get(*, user_id: str, observation_id, scope="", config: Config | None = None,
                    using: str = "default") -> Observation:
    """The user's live observation in what ``scope`` reaches; anything else raises ObservationNotFound."""
    config = config or get_config()
    return _one_in_reach(lambda user: Observation.objects.using(using).live_for_user(user, config), user_id=user_id,
                         pk=observation_id, scope=scope, config=config,
                         missing=ObservationNotFound("No such observation."))


def _one_in_reach(rows_of, *, user_id: str, pk, scope, config: Config, missing: LookupError):
    """The row ``pk`` of ``rows_of(user_id)`` in what ``scope`` reaches; else raises ``missing``
    (a malformed id too: nothing says whether it exists)."""
    user_id, seen = _user(user_id, config), clean_read_reach(scope, config=config)
    try:
        return rows_of(user_id).filter(seen.q()).get(pk=parse_uuid(pk, type(missing)))
    except ObjectDoesNotExist:
        raise missing from None


def observation_revisions(*, user_id: str, observation_id, scope="", config: Config | None = None,
                          using: str = "default"):
    observation = observation_get(user_id=user_id, observation_id=observation_id, scope=scope, config=config,
                                  using=using)
    revisions = ObservationRevision.objects.using(using).filter(observation=observation).order_by("-revision")
    return [revision_record(r) for r in revisions]


def observation_timeline(
    *, user_id: str, observation_id, before: int = 5, after: int = 5, scope="", config: Config | None = None,
    using: str = "default",
) -> Timeline:
    """The live observations of the anchor's session just before and after it, in creation
    order (a session's observations are all of its scope)."""
    config = config or get_config()
    before, after = TIMELINE_BEFORE.clean(before, config), TIMELINE_AFTER.clean(after, config)
    preview_chars = config.PREVIEW_CHARS
    anchor = observation_get(user_id=user_id, observation_id=observation_id, scope=scope, config=config,
                             using=using)
    user_id = anchor.user_id
    same_session = with_content_head(
        Observation.objects.using(using).live_for_user(user_id, config).filter(session_id=anchor.session_id),
        preview_chars=preview_chars,
    )
    earlier = Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at, id__lt=anchor.id)
    later = Q(created_at__gt=anchor.created_at) | Q(created_at=anchor.created_at, id__gt=anchor.id)
    before_rows = list(same_session.filter(earlier).order_by("-created_at", "-id")[:before])
    after_rows = same_session.filter(later).order_by("created_at", "id")[:after]
    # The head the other rows get from with_content_head, cut here from the content already read.
    anchor.content_head = anchor.content[: preview_chars + 1]  # type: ignore[attr-defined]

    def compact(row):
        return observation_compact(row, preview_chars=preview_chars)

    return Timeline(
        session_id=str(anchor.session_id),
        anchor=compact(anchor),
        before=[compact(r) for r in reversed(before_rows)],
        after=[compact(r) for r in after_rows],
    )


def session_get(*, user_id: str, session_id, scope="", config: Config | None = None,
                using: str = "default") -> SessionRecord:
    config = config or get_config()
    session = _one_in_reach(lambda user: Session.objects.using(using).for_user(user).with_observation_count(config),
                            user_id=user_id, pk=session_id, scope=scope, config=config,
                            missing=SessionNotFound("No such session."))
    return session_record(session, session.observation_count)


def sessions_list(
    *, user_id: str, status: str | None = None, is_auto_generated: bool | None = None, limit: int = 50,
    scope="", config: Config | None = None, using: str = "default",
) -> list[SessionRecord]:
    """The user's sessions in what ``scope`` reaches, newest started first."""
    config = config or get_config()
    limit = SESSIONS_LIMIT.clean(limit, config)
    seen = clean_read_reach(scope, config=config)
    sessions = (Session.objects.using(using).for_user(_user(user_id, config)).filter(seen.q())
                .order_by("-started_at", "-id"))
    if status is not None:
        sessions = sessions.filter(status=clean_choice("status", status, allowed=SessionStatus.values))
    if is_auto_generated is not None:
        sessions = sessions.filter(is_auto_generated=is_auto_generated)
    return [session_record(s, s.observation_count) for s in sessions.with_observation_count(config)[:limit]]


def observations_list(
    *, user_id: str, type: str | None = None, topic_key: str | None = None, limit: int = 50, scope="",
    since=None, until=None, config: Config | None = None, using: str = "default",
) -> list[ObservationCompact]:
    """The user's live observations in what ``scope`` reaches (that happened from ``since`` to
    before ``until``, when given), newest update first; ``topic_key`` is normalized as on save,
    so ``Database choice`` finds ``database-choice``."""
    config = config or get_config()
    limit = OBSERVATIONS_LIMIT.clean(limit, config)
    seen = clean_read_reach(scope, config=config)
    window = clean_window(since, until)
    observations = (Observation.objects.using(using).live_for_user(_user(user_id, config), config)
                    .filter(seen.q(), window.q()).order_by("-updated_at", "-id"))
    if type is not None:
        observations = observations.filter(type=clean_type(type, allowed=None))
    if topic_key is not None:
        observations = observations.filter(topic_key=normalize_topic_key(check_text("topic_key", topic_key)))
    rows = with_content_head(observations, preview_chars=config.PREVIEW_CHARS)[:limit]
    return [observation_compact(row, preview_chars=config.PREVIEW_CHARS) for row in rows]


def stats(*, user_id: str, scope="", config: Config | None = None, using: str = "default") -> MemoryStats:
    """Counts of the user's rows in what ``scope`` reaches, and its live observations per scope."""
    config = config or get_config()
    user_id, seen = _user(user_id, config), clean_read_reach(scope, config=config)
    session_counts = Session.objects.using(using).for_user(user_id).filter(seen.q()).aggregate(
        total=Count("id"),
        active=Count("id", filter=Q(status=SessionStatus.ACTIVE)),
        completed=Count("id", filter=Q(status=SessionStatus.COMPLETED)),
        auto=Count("id", filter=Q(summary__isnull=False, is_auto_generated=True)),
        human=Count("id", filter=Q(summary__isnull=False, is_auto_generated=False)),
    )
    observations = Observation.objects.using(using).for_user(user_id).filter(seen.q())
    # Two counts, each through its partial index (one aggregate over both would read every row).
    deleted = observations.deleted().count()
    live_by = list(observations.live(config).values("scope", "type").annotate(n=Count("id")).order_by("scope", "type"))
    by_type: dict[str, int] = {}
    by_scope: dict[str, int] = {}
    for row in live_by:
        by_type[row["type"]] = by_type.get(row["type"], 0) + row["n"]
        by_scope[row["scope"]] = by_scope.get(row["scope"], 0) + row["n"]
    revisions = ObservationRevision.objects.using(using).filter(seen.q("observation__"), user_id=user_id).count()
    embedder = configured_embedder(config.EMBEDDER)
    waiting = 0 if embedder is None else (
        ObservationVector.objects.using(using).filter(seen.q(), user_id=user_id)
        .waiting(embedder.model_id).count()
    )
    return MemoryStats(
        user_id=user_id,
        scope=seen.key,
        sessions=session_counts["total"],
        active_sessions=session_counts["active"],
        completed_sessions=session_counts["completed"],
        auto_summaries=session_counts["auto"],
        human_summaries=session_counts["human"],
        observations=sum(by_type.values()),
        deleted_observations=deleted,
        revisions=revisions,
        observations_by_type=dict(sorted(by_type.items())),
        observations_by_scope=by_scope,
        waiting_for_vector=waiting,
    )
