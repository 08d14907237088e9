"""Model rows turned into the frozen values of ``types`` (ISO 8601 UTC timestamps)."""

from __future__ import annotations

from datetime import datetime, timezone

from .types import (
    ObservationCompact,
    ObservationRecord,
    ObservationRevisionRecord,
    SessionRecord,
    SessionSummaryCompact,
)

ELLIPSIS = "…"


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat()


def preview(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters with ``…`` when something was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + ELLIPSIS


def session_record(session, observation_count: int) -> SessionRecord:
    return SessionRecord(
        id=str(session.id),
        user_id=session.user_id,
        status=str(session.status),  # a plain str, also when the service set the enum member
        started_at=iso(session.started_at),
        last_activity_at=iso(session.last_activity_at),
        ended_at=iso(session.ended_at),
        summary=session.summary,
        is_auto_generated=session.is_auto_generated,
        observation_count=observation_count,
    )


def session_summary_compact(session) -> SessionSummaryCompact:
    """From a session annotated with ``observation_count``."""
    return SessionSummaryCompact(
        session_id=str(session.id),
        started_at=iso(session.started_at),
        ended_at=iso(session.ended_at),
        summary=session.summary,
        is_auto_generated=session.is_auto_generated,
        observation_count=session.observation_count,
    )


def observation_record(observation) -> ObservationRecord:
    return ObservationRecord(
        id=str(observation.id),
        user_id=observation.user_id,
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
        last_seen_at=iso(observation.last_seen_at),
        deleted_at=iso(observation.deleted_at),
    )


def observation_record_from_row(row: tuple, values) -> ObservationRecord:
    """From a row in the order of ``statements.RECORD_COLUMNS`` (driver or Python values), via ``DbValues``."""
    (id_, user_id, session_id, type_, title, content, topic_key, metadata, revision_count,
     duplicate_count, redacted_blocks, created_at, updated_at, last_seen_at, deleted_at) = row
    return ObservationRecord(
        id=values.uuid_text(id_),
        user_id=user_id,
        session_id=values.uuid_text(session_id),
        type=type_,
        title=title,
        content=content,
        topic_key=topic_key,
        metadata=values.json(metadata),
        revision_count=revision_count,
        duplicate_count=duplicate_count,
        redacted_blocks=redacted_blocks,
        created_at=iso(values.datetime(created_at)),
        updated_at=iso(values.datetime(updated_at)),
        last_seen_at=iso(values.datetime(last_seen_at)),
        deleted_at=iso(values.datetime(deleted_at)),
    )


def observation_compact(row: dict, *, preview_chars: int, score=None) -> ObservationCompact:
    """From a ``values()`` row holding ``content_head`` (the first preview_chars+1 characters)."""
    return ObservationCompact(
        id=str(row["id"]),
        type=row["type"],
        title=row["title"],
        preview=preview(row["content_head"], preview_chars),
        topic_key=row["topic_key"],
        session_id=str(row["session_id"]),
        updated_at=iso(row["updated_at"]),
        score=score,
    )


def revision_record(revision) -> ObservationRevisionRecord:
    return ObservationRevisionRecord(
        revision=revision.revision,
        session_id=str(revision.session_id_at_write) if revision.session_id_at_write else None,
        type=revision.type,
        title=revision.title,
        content=revision.content,
        topic_key=revision.topic_key,
        metadata=revision.metadata,
        written_at=iso(revision.written_at),
        replaced_at=iso(revision.replaced_at),
    )
