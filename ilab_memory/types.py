"""Frozen values returned to callers, and the one place rows become them. No Django import.

Timestamps are ISO 8601 strings in UTC. Scores come in two kinds that refuse to be compared
with each other (Braess #5). The builders at the end take model instances (or anything with
the same attributes) and are the only code that turns stored rows into these values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard, overload


@dataclass(frozen=True)
class _Score:
    """A ranking value plus the signals that produced it, so a ranking can be explained."""

    value: float
    breakdown: dict[str, Any] = field(default_factory=dict, compare=False)

    def _check(self, other: object) -> TypeGuard[_Score]:
        if isinstance(other, _Score) and type(other) is not type(self):
            raise TypeError(
                f"{type(self).__name__} and {type(other).__name__} rank different things "
                "and cannot be compared."
            )
        return type(other) is type(self)

    def __eq__(self, other: object) -> bool:
        if not self._check(other):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.value))

    def __lt__(self, other: object) -> bool:
        if not self._check(other):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other: object) -> bool:
        if not self._check(other):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other: object) -> bool:
        if not self._check(other):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other: object) -> bool:
        if not self._check(other):
            return NotImplemented
        return self.value >= other.value


@dataclass(frozen=True, eq=False)
class ContextScore(_Score):
    """Ranks memories at session start: recency × type weight × reinforcement."""


@dataclass(frozen=True, eq=False)
class SearchScore(_Score):
    """Ranks search results: words and meaning on one scale, [0, 1] (services/search/fusion.py)."""


@dataclass(frozen=True)
class ObservationCompact:
    id: str
    type: str
    title: str
    preview: str
    topic_key: str | None
    session_id: str
    updated_at: str
    happened_at: str  # when what it says happened (the save time unless the caller said)
    scope: str
    score: ContextScore | SearchScore | None


@dataclass(frozen=True)
class ObservationRecord:
    id: str
    user_id: str
    scope: str
    session_id: str
    type: str
    title: str
    content: str
    topic_key: str | None
    metadata: dict[str, Any]
    revision_count: int
    duplicate_count: int
    redacted_blocks: int
    created_at: str
    updated_at: str
    happened_at: str
    last_seen_at: str
    deleted_at: str | None
    expires_at: str | None  # None: never by itself (its type's RETENTION may still apply)


@dataclass(frozen=True)
class ObservationRevisionRecord:
    revision: int
    session_id: str | None
    type: str
    title: str
    content: str
    topic_key: str | None
    metadata: dict[str, Any]
    happened_at: str
    written_at: str
    replaced_at: str


@dataclass(frozen=True)
class SaveResult:
    action: str  # "created" | "revised" | "duplicate"
    observation: ObservationRecord


@dataclass(frozen=True)
class SessionSummaryCompact:
    session_id: str
    started_at: str
    ended_at: str | None
    summary: str | None
    is_auto_generated: bool
    observation_count: int
    scope: str


@dataclass(frozen=True)
class SessionRecord:
    id: str
    user_id: str
    scope: str
    status: str
    started_at: str
    last_activity_at: str
    ended_at: str | None
    summary: str | None
    is_auto_generated: bool
    observation_count: int


@dataclass(frozen=True)
class SessionStartResponse:
    session_id: str
    is_new: bool
    sessions_context: list[SessionSummaryCompact]
    memories: list[ObservationCompact]


@dataclass(frozen=True)
class Timeline:
    """The observations written by the same session around an anchor, in creation order."""

    session_id: str
    anchor: ObservationCompact
    before: list[ObservationCompact]
    after: list[ObservationCompact]


@dataclass(frozen=True)
class DeleteResult:
    id: str
    hard: bool


@dataclass(frozen=True)
class MemoryStats:
    user_id: str
    scope: str  # what was counted: a scope and the shared space, "*", or a list joined by ","
    sessions: int
    active_sessions: int
    completed_sessions: int
    auto_summaries: int
    human_summaries: int
    observations: int
    deleted_observations: int
    revisions: int
    observations_by_type: dict[str, int]
    observations_by_scope: dict[str, int]
    waiting_for_vector: int = 0  # live memories without a vector of the current model (hybrid search)


# -- builders: stored rows -> the values above ---------------------------------------------

ELLIPSIS = "…"


@overload
def iso(value: datetime) -> str: ...
@overload
def iso(value: None) -> None: ...
@overload
def iso(value: datetime | None) -> str | None: ...
def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat()


def preview(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters with ``…`` when something was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + ELLIPSIS


def session_record(session: Any, observation_count: int) -> SessionRecord:
    return SessionRecord(
        id=str(session.id),
        user_id=session.user_id,
        scope=session.scope,
        status=str(session.status),  # a plain str, also when the service set the enum member
        started_at=iso(session.started_at),
        last_activity_at=iso(session.last_activity_at),
        ended_at=iso(session.ended_at),
        summary=session.summary,
        is_auto_generated=session.is_auto_generated,
        observation_count=observation_count,
    )


def session_summary_compact(session: Any) -> SessionSummaryCompact:
    """From a completed session annotated with ``observation_count``."""
    return SessionSummaryCompact(
        session_id=str(session.id),
        scope=session.scope,
        started_at=iso(session.started_at),
        ended_at=iso(session.ended_at),
        summary=session.summary,
        is_auto_generated=session.is_auto_generated,
        observation_count=session.observation_count,
    )


def observation_record(observation: Any) -> ObservationRecord:
    return ObservationRecord(
        id=str(observation.id),
        user_id=observation.user_id,
        scope=observation.scope,
        session_id=str(observation.session_id),
        type=observation.type,
        title=observation.title,
        content=observation.content,
        topic_key=observation.topic_key,
        metadata=observation.metadata,
        revision_count=observation.revision_count,
        duplicate_count=observation.duplicate_count,
        redacted_blocks=observation.redacted_blocks,
        created_at=iso(observation.created_at),
        updated_at=iso(observation.updated_at),
        happened_at=iso(observation.happened_at),
        last_seen_at=iso(observation.last_seen_at),
        deleted_at=iso(observation.deleted_at),
        expires_at=iso(observation.expires_at),
    )


def observation_compact(
    observation: Any, *, preview_chars: int, score: ContextScore | SearchScore | None = None
) -> ObservationCompact:
    """From an observation read with ``content_head`` (its first preview_chars+1 characters)."""
    return ObservationCompact(
        id=str(observation.id),
        scope=observation.scope,
        type=observation.type,
        title=observation.title,
        preview=preview(observation.content_head, preview_chars),
        topic_key=observation.topic_key,
        session_id=str(observation.session_id),
        updated_at=iso(observation.updated_at),
        happened_at=iso(observation.happened_at),
        score=score,
    )


def revision_record(revision: Any) -> ObservationRevisionRecord:
    return ObservationRevisionRecord(
        revision=revision.revision,
        session_id=str(revision.session_id_at_write) if revision.session_id_at_write else None,
        type=revision.type,
        title=revision.title,
        content=revision.content,
        topic_key=revision.topic_key,
        metadata=revision.metadata,
        happened_at=iso(revision.happened_at),
        written_at=iso(revision.written_at),
        replaced_at=iso(revision.replaced_at),
    )
