"""The MCP tools' saves and searches are timed under the ``mcp`` face, not the facade's."""

from prometheus_client import REGISTRY


def timed_count(operation: str, face: str) -> float:
    labels = {"operation": operation, "face": face}
    return REGISTRY.get_sample_value("ilab_memory_operation_seconds_count", labels) or 0.0


def test_tool_saves_and_searches_are_timed_under_mcp(as_alice):
    saves, searches, facade = timed_count("save", "mcp"), timed_count("search", "mcp"), timed_count("save", "facade")
    as_alice.ok("mem_save", title="Likes tea", content="Green, no sugar.")
    as_alice.ok("mem_search", query="tea")
    assert timed_count("save", "mcp") == saves + 1
    assert timed_count("search", "mcp") == searches + 1
    assert timed_count("save", "facade") == facade
