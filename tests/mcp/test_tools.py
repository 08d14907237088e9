"""The tools' schemas: snapshot-tested, valid JSON Schema, limits from the settings.

A change to a tool's name, description, annotations, input or output schema fails
``test_tool_listing_matches_the_snapshot`` until the snapshot is regenerated on purpose:

    ILAB_MEMORY_UPDATE_MCP_SNAPSHOT=1 .venv/bin/python -m pytest tests/mcp/test_tools.py

and the diff of ``tests/mcp/tools.snapshot.json`` is reviewed like code (agents read it).
"""

from pathlib import Path

from django.test import override_settings
from jsonschema.validators import Draft202012Validator

from ilab_memory.conf import get_config
from ilab_memory.mcp import tools
from tests.mcp.conftest import assert_matches_snapshot, mcp_client

SNAPSHOT = Path(__file__).with_name("tools.snapshot.json")


def listing(client) -> dict:
    return {
        "instructions": client.instructions,
        "tools": [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in client.list_tools().tools],
    }


def test_tool_listing_matches_the_snapshot(mcp_url, alice):
    with mcp_client(mcp_url, alice.token) as client:
        served = listing(client)
    assert_matches_snapshot(served, SNAPSHOT, "The MCP tool listing")


def test_every_schema_is_valid_json_schema():
    for spec in tools.tool_specs(get_config()):
        Draft202012Validator.check_schema(spec.input_schema)
        Draft202012Validator.check_schema(spec.output_schema)


def keys_outside(schema: dict, value, path: str = "") -> list[str]:
    """The paths of ``value``'s keys that ``schema`` does not declare, at every depth."""
    if "anyOf" in schema:
        if value is None:
            return []
        schema = next(member for member in schema["anyOf"] if member.get("type") != "null")
    if isinstance(value, list):
        return [key for i, item in enumerate(value) for key in keys_outside(schema["items"], item, f"{path}[{i}]")]
    if isinstance(value, dict) and "properties" in schema:
        outside = [f"{path}.{key}" for key in value if key not in schema["properties"]]
        return outside + [
            key for name, item in value.items() if name in schema["properties"]
            for key in keys_outside(schema["properties"][name], item, f"{path}.{name}")
        ]
    return []


def test_every_tools_real_result_is_what_its_schema_says(mcp_url, alice):
    """Each tool called for real, over the SDK's client: its structured result validates against its
    output schema, and every key in it, at every depth, is one the schema declares."""
    with mcp_client(mcp_url, alice.token) as client:
        client.ok("mem_save", title="Earlier", content="Written first about deploys.")
        saved = client.ok("mem_save", title="Deploy", content="We deploy on Fridays.", topic_key="deploy",
                          metadata={"files": ["a.py"]})
        observation_id = saved["observation"]["id"]
        client.ok("mem_session_end", summary="The first session.")
        results = {
            "mem_session_start": client.ok("mem_session_start"),
            "mem_save": client.ok("mem_save", title="Deploy", content="We deploy on Mondays.", topic_key="deploy"),
            "mem_session_summary": client.ok("mem_session_summary", summary="So far."),
            "mem_search": client.ok("mem_search", query="deploy"),
            "mem_context": client.ok("mem_context"),
            "mem_get_observation": client.ok("mem_get_observation", observation_id=observation_id),
            "mem_update": client.ok("mem_update", observation_id=observation_id, title="Deploys"),
            "mem_timeline": client.ok("mem_timeline", observation_id=observation_id),
            "mem_stats": client.ok("mem_stats"),
            "mem_delete": client.ok("mem_delete", observation_id=observation_id),
            "mem_session_end": client.ok("mem_session_end"),
        }
    specs = {spec.name: spec for spec in tools.tool_specs(get_config())}
    assert set(results) == set(specs)
    assert results["mem_search"]["results"] and results["mem_session_start"]["sessions_context"]
    assert "waiting_for_vector" in results["mem_stats"]
    for name, result in results.items():
        Draft202012Validator(specs[name].output_schema).validate(result)
        assert keys_outside(specs[name].output_schema, result) == [], name


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
