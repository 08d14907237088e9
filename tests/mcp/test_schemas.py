"""The tools' schemas: snapshot-tested, valid JSON Schema, limits from the settings.

A change to a tool's name, description, annotations, input or output schema fails
``test_tool_listing_matches_the_snapshot`` until the snapshot is regenerated on purpose:

    ILAB_MEMORY_UPDATE_MCP_SNAPSHOT=1 .venv/bin/python -m pytest tests/mcp/test_schemas.py

and the diff of ``tests/mcp/tools.snapshot.json`` is reviewed like code (agents read it).
"""

import json
import os
from pathlib import Path

import pytest
from django.test import override_settings
from jsonschema.validators import Draft202012Validator

from ilab_memory.api import serializers as s
from ilab_memory.conf import get_config
from ilab_memory.mcp import shapes, tools
from tests.mcp.conftest import mcp_client

SNAPSHOT = Path(__file__).with_name("tools.snapshot.json")


def listing(client) -> dict:
    return {
        "instructions": client.instructions,
        "tools": [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in client.list_tools().tools],
    }


def test_tool_listing_matches_the_snapshot(mcp_url, alice):
    with mcp_client(mcp_url, alice.token) as client:
        served = listing(client)
    if os.environ.get("ILAB_MEMORY_UPDATE_MCP_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(served, indent=2, ensure_ascii=False) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert served == expected, (
        "The MCP tool listing changed. If that is on purpose, regenerate the snapshot with "
        "ILAB_MEMORY_UPDATE_MCP_SNAPSHOT=1 and review its diff."
    )


def test_every_schema_is_valid_json_schema():
    for spec in tools.tool_specs(get_config()):
        Draft202012Validator.check_schema(spec.input_schema)
        Draft202012Validator.check_schema(shapes.output_schemas()[spec.name])


@pytest.mark.parametrize(
    ("serializer", "tool"),
    [
        (s.SessionStartSerializer, "mem_session_start"),
        (s.SaveResultSerializer, "mem_save"),
        (s.SessionRecordSerializer, "mem_session_end"),
        (s.ObservationRecordSerializer, "mem_get_observation"),
        (s.TimelineSerializer, "mem_timeline"),
    ],
)
def test_output_schemas_follow_the_apis_serializers(serializer, tool):
    assert set(shapes.output_schemas()[tool]["properties"]) == set(serializer().fields)


def test_input_schemas_carry_the_limits_of_the_settings():
    limits = {"MAX_TITLE_CHARS": 120, "MAX_CONTENT_CHARS": 900, "MAX_TOPIC_KEY_CHARS": 30, "MAX_QUERY_CHARS": 40,
              "MAX_SUMMARY_CHARS": 700, "SEARCH_MAX_LIMIT": 25, "OBSERVATION_TYPES": ["manual", "decision"]}
    with override_settings(ILAB_MEMORY=limits):
        specs = {spec.name: spec.input_schema["properties"] for spec in tools.tool_specs(get_config())}
    save = specs["mem_save"]
    assert (save["title"]["maxLength"], save["content"]["maxLength"], save["topic_key"]["maxLength"]) == (120, 900, 30)
    assert save["type"]["enum"] == ["manual", "decision"] and save["type"]["default"] == "manual"
    assert specs["mem_search"]["query"]["maxLength"] == 40
    assert specs["mem_search"]["limit"]["maximum"] == 25
    assert specs["mem_session_summary"]["summary"]["maxLength"] == 700
    assert specs["mem_update"]["title"]["maxLength"] == 120


def test_annotations_say_what_each_tool_may_do():
    annotations = {spec.name: spec.annotations for spec in tools.tool_specs(get_config())}
    read_only = {name for name, a in annotations.items() if a.read_only_hint}
    assert read_only == {"mem_search", "mem_context", "mem_get_observation", "mem_timeline", "mem_stats"}
    assert {name for name, a in annotations.items() if a.destructive_hint} == {"mem_delete"}
    assert all(a.open_world_hint is False for a in annotations.values())
