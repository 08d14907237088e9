"""Frozen values returned to callers, and the one place rows become them. No Django import.

Timestamps are ISO 8601 strings in UTC. Scores come in two kinds that refuse to be compared
with each other (Braess #5). The builders at the end take model instances (or anything with
the same attributes) and are the only code that turns stored rows into these values.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar, overload

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def described(text: str) -> dict[str, str]:
    """A field's metadata giving the description every face shows (the API's schema, the MCP tools'
    output schemas): ``happened_at: str = field(metadata=described("..."))``."""
    return {"description": text}


HAPPENED_AT = "When what it says happened (UTC): the time it was saved unless the writer said."


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
    happened_at: str = field(metadata=described(HAPPENED_AT))
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
    happened_at: str = field(metadata=described(HAPPENED_AT))
    last_seen_at: str
    deleted_at: str | None
    expires_at: str | None = field(metadata=described(
        "When it expires by itself (UTC), or null: never (its type's RETENTION setting may still end it). "
        "From then on no read sees it."
    ))


@dataclass(frozen=True)
class ObservationRevisionRecord:
    revision: int
    session_id: str | None
    type: str
    title: str
    content: str
    topic_key: str | None
    metadata: dict[str, Any]
    happened_at: str = field(metadata=described("When what this version says happened."))
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
    scope: str = field(metadata=described(
        "What was counted: '*' (every scope), or the scopes read joined by ',' (\"\": shared)."
    ))
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

_Value = TypeVar("_Value", bound="DataclassInstance")


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


@functools.cache
def field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    """The names of a record's fields, in order (read once per class)."""
    return tuple(field.name for field in dataclasses.fields(cls))


def from_row(cls: type[_Value], row: Any, **given: Any) -> _Value:
    """``cls`` filled from ``row``'s attributes of the same names, except those ``given``: ids
    (UUIDs) become strings, moments ISO strings in UTC, choices their plain values. The one place
    a row's columns become a record's fields, so a field added to a record needs no code here."""
    values = {name: _plain(getattr(row, name)) for name in field_names(cls) if name not in given}
    return cls(**values, **given)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):  # a choice the service set as its enum member
        return value.value
    return value


def session_record(session: Any, observation_count: int) -> SessionRecord:
    return from_row(SessionRecord, session, observation_count=observation_count)


def session_summary_compact(session: Any) -> SessionSummaryCompact:
    """From a completed session annotated with ``observation_count``."""
    return from_row(SessionSummaryCompact, session, session_id=str(session.id))


def observation_record(observation: Any) -> ObservationRecord:
    return from_row(ObservationRecord, observation)


def observation_compact(
    observation: Any, *, preview_chars: int, score: ContextScore | SearchScore | None = None
) -> ObservationCompact:
    """From an observation read with ``content_head`` (its first preview_chars+1 characters)."""
    return from_row(ObservationCompact, observation, preview=preview(observation.content_head, preview_chars),
                    score=score)


def revision_record(revision: Any) -> ObservationRevisionRecord:
    session = revision.session_id_at_write
    return from_row(ObservationRevisionRecord, revision, session_id=str(session) if session else None)
