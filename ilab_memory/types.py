"""Frozen values returned to callers. No Django import, so they can be used anywhere.

Timestamps are ISO 8601 strings in UTC. Scores come in two kinds that refuse to be compared
with each other (Braess #5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class _Score:
    """A ranking value plus the signals that produced it, so a ranking can be explained."""

    value: float
    breakdown: dict[str, Any] = field(default_factory=dict, compare=False)

    def _check(self, other):
        if isinstance(other, _Score) and type(other) is not type(self):
            raise TypeError(
                f"{type(self).__name__} and {type(other).__name__} rank different things "
                "and cannot be compared."
            )
        return type(other) is type(self)

    def __eq__(self, other):
        if not self._check(other):
            return NotImplemented
        return self.value == other.value

    def __hash__(self):
        return hash((type(self).__name__, self.value))

    def __lt__(self, other):
        if not self._check(other):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other):
        if not self._check(other):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other):
        if not self._check(other):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other):
        if not self._check(other):
            return NotImplemented
        return self.value >= other.value


@dataclass(frozen=True, eq=False)
class ContextScore(_Score):
    """Ranks memories at session start: recency × type weight × reinforcement."""


@dataclass(frozen=True, eq=False)
class SearchScore(_Score):
    """Ranks search results: full-text relevance normalized to (0, 1]."""


@dataclass(frozen=True)
class ObservationCompact:
    id: str
    type: str
    title: str
    preview: str
    topic_key: str | None
    session_id: str
    updated_at: str
    score: ContextScore | SearchScore | None


@dataclass(frozen=True)
class ObservationRecord:
    id: str
    user_id: str
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
    last_seen_at: str
    deleted_at: str | None


@dataclass(frozen=True)
class ObservationRevisionRecord:
    revision: int
    session_id: str | None
    type: str
    title: str
    content: str
    topic_key: str | None
    metadata: dict[str, Any]
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


@dataclass(frozen=True)
class SessionRecord:
    id: str
    user_id: str
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
    sessions: int
    active_sessions: int
    completed_sessions: int
    auto_summaries: int
    human_summaries: int
    observations: int
    deleted_observations: int
    revisions: int
    observations_by_type: dict[str, int]
