"""types.py: the frozen values returned to callers, and the builders that turn stored rows into them."""

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ilab_memory.models import Observation, ObservationRevision, Session
from ilab_memory.types import (
    ContextScore,
    ObservationRecord,
    SearchScore,
    iso,
    observation_compact,
    observation_record,
    preview,
    revision_record,
    session_record,
)


def test_scores_of_one_kind_order_by_value_whatever_their_breakdown():
    assert SearchScore(0.2, {"why": "a"}) < SearchScore(0.3) <= SearchScore(0.3, {"why": "b"})
    assert SearchScore(0.3, {"why": "a"}) == SearchScore(0.3)
    assert max([ContextScore(0.1), ContextScore(0.9), ContextScore(0.5)]) == ContextScore(0.9)


@pytest.mark.parametrize("compare", [
    lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a == b,
])
def test_scores_of_two_kinds_refuse_to_be_compared(compare):
    with pytest.raises(TypeError, match="rank different things"):
        compare(ContextScore(0.5), SearchScore(0.5))


def test_a_score_is_not_equal_to_a_bare_number():
    assert SearchScore(0.5) != 0.5
    with pytest.raises(TypeError):
        assert SearchScore(0.5) < 0.6


def test_iso_is_utc_and_none_stays_none():
    assert iso(datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))) == "2026-05-01T10:00:00+00:00"
    assert iso(None) is None


def test_preview_marks_a_cut_and_leaves_a_short_text_whole():
    assert preview("abcdef", 3) == "abc…"
    assert preview("abc", 3) == "abc"


def test_the_records_of_stored_rows_say_what_the_rows_hold(mem, clock):
    saved = mem.mem_save("ana", "Editor", "vim", topic_key="editor", metadata={"k": 1}, scope="coder")
    mem.mem_save("ana", "Editor", "helix now", topic_key="editor", scope="coder")
    row = Observation.objects.get(pk=saved.observation.id)
    record = observation_record(row)
    assert isinstance(record, ObservationRecord)
    assert (record.id, record.user_id, record.scope, record.title, record.content, record.topic_key) == (
        str(row.id), "ana", "coder", "Editor", "helix now", "editor")
    assert record.revision_count == 2 and record.deleted_at is None
    assert datetime.fromisoformat(record.updated_at) == row.updated_at.astimezone(UTC)
    assert [field.name for field in dataclasses.fields(record)] == [
        field.name for field in dataclasses.fields(ObservationRecord)]

    revision = revision_record(ObservationRevision.objects.get(observation=row, revision=1))
    assert (revision.revision, revision.content, revision.session_id) == (1, "vim", str(row.session_id))

    session = session_record(Session.objects.get(pk=row.session_id), observation_count=1)
    assert (session.user_id, session.scope, session.status, session.ended_at) == ("ana", "coder", "active", None)


def test_a_compact_row_previews_its_content_head(mem, clock):
    saved = mem.mem_save("ana", "Long", "x" * 50).observation
    row = Observation.objects.get(pk=saved.id)
    row.content_head = row.content[:11]
    compact = observation_compact(row, preview_chars=10, score=SearchScore(0.7))
    assert (compact.preview, compact.score, compact.session_id) == ("x" * 10 + "…", SearchScore(0.7),
                                                                    str(row.session_id))
