"""The response builders answer exactly what the output serializers (the schema's shapes) render."""

import json

import pytest

from ilab_memory import ILabMemory
from ilab_memory.api import responses
from ilab_memory.api import serializers as s


def rendered(value) -> str:
    """JSON text, keys in the order they come: equal texts mean equal bodies, field order too."""
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture
def records(db):
    memory = ILabMemory()
    memory.mem_session_start("u1")
    first = memory.mem_save("u1", "Deploy notes", "We deploy with <private>k</private> blue-green", metadata={"a": [1]})
    memory.mem_save("u1", "Topic", "first version", topic_key="deploy/plan")
    revised = memory.mem_save("u1", "Topic", "second version", topic_key="deploy/plan")
    memory.mem_session_end("u1", "a summary")
    start = memory.mem_session_start("u1")
    return {
        "start": start,
        "save": first,
        "revised": revised,
        "session": memory.mem_session_end("u1"),
        "search": memory.mem_search("u1", "deploy"),
        "context": memory.mem_context("u1"),
        "timeline": memory.mem_timeline("u1", first.observation.id),
    }


def test_every_builder_renders_what_its_serializer_renders(records):
    assert records["start"].sessions_context and records["start"].memories
    assert records["search"] and records["context"]
    pairs = [
        (responses.session_start(records["start"]), s.SessionStartSerializer(records["start"]).data),
        (responses.save_result(records["save"]), s.SaveResultSerializer(records["save"]).data),
        (responses.save_result(records["revised"]), s.SaveResultSerializer(records["revised"]).data),
        (responses.observation_record(records["save"].observation),
         s.ObservationRecordSerializer(records["save"].observation).data),
        (responses.session_record(records["session"]), s.SessionRecordSerializer(records["session"]).data),
        (responses.compacts(records["search"]), s.ObservationCompactSerializer(records["search"], many=True).data),
        (responses.compacts(records["context"]), s.ObservationCompactSerializer(records["context"], many=True).data),
        (responses.timeline(records["timeline"]), s.TimelineSerializer(records["timeline"]).data),
    ]
    for built, serialized in pairs:
        assert rendered(built) == rendered(serialized)


def test_a_compact_without_a_score_renders_null(records):
    compact = records["timeline"].anchor
    assert compact.score is None
    assert rendered(responses.observation_compact(compact)) == rendered(s.ObservationCompactSerializer(compact).data)
