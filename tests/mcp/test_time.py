"""Time over MCP: happened_at, expires_at and ttl on saves and updates, since / until and the
time zone of date phrases on search and context, expired memories gone from every tool, and
bad time values answered as tool errors naming the field. Real server, the SDK's own client.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from django.test import override_settings
from django.utils import timezone
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from ilab_memory.models import Observation
from tests.mcp.conftest import snapshot
from tests.mcp.test_stdio import ROOT


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def shown(moment: datetime) -> str:
    """A moment as the tools' texts show it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def test_a_save_keeps_when_it_happened_and_when_it_expires_and_the_texts_say_both(as_alice):
    before = timezone.now()
    result = as_alice.call("mem_save", title="Moved to Berlin", content="The user moved to Berlin.",
                           happened_at="2025-03-10T09:30:00+01:00", ttl=86_400)
    record = result.structured_content["observation"]
    assert record["happened_at"] == "2025-03-10T08:30:00+00:00"
    row = Observation.objects.get(pk=record["id"])
    assert row.happened_at == datetime(2025, 3, 10, 8, 30, tzinfo=UTC)
    assert before + timedelta(days=1) <= row.expires_at <= timezone.now() + timedelta(days=1)
    assert record["expires_at"] == stamp(row.expires_at)
    assert "happened 2025-03-10 08:30 UTC — expires " + shown(row.expires_at) in result.content[0].text

    text = as_alice.call("mem_get_observation", observation_id=record["id"]).content[0].text
    assert "happened 2025-03-10 08:30 UTC — expires " + shown(row.expires_at) in text
    listed = as_alice.call("mem_context").content[0].text
    assert "— happened 2025-03-10 08:30 UTC" in listed and "expires" not in listed


def test_a_save_without_times_happened_now_and_never_expires(as_alice):
    before = timezone.now()
    result = as_alice.call("mem_save", title="Plain", content="A plain note.")
    row = Observation.objects.get(pk=result.structured_content["observation"]["id"])
    assert before <= row.happened_at <= timezone.now() and row.expires_at is None
    assert "expires" not in result.content[0].text and "happened " + shown(row.happened_at) in result.content[0].text


def test_an_update_moves_when_it_happened_sets_and_clears_its_expiry(as_alice):
    saved = as_alice.ok("mem_save", title="Trip", content="Remind me during the trip.")["observation"]
    later = timezone.now() + timedelta(days=3)
    updated = as_alice.call("mem_update", observation_id=saved["id"], happened_at="2026-01-02",
                            expires_at=stamp(later))
    assert not updated.is_error, updated.content[0].text
    row = Observation.objects.get(pk=saved["id"])
    assert (row.happened_at, row.expires_at) == (datetime(2026, 1, 2, tzinfo=UTC), later)
    assert f"happened 2026-01-02 00:00 UTC — expires {shown(later)}" in updated.content[0].text

    cleared = as_alice.ok("mem_update", observation_id=saved["id"], expires_at=None)
    row.refresh_from_db()
    assert row.expires_at is None and cleared["expires_at"] is None
    assert row.happened_at == datetime(2026, 1, 2, tzinfo=UTC)  # an expiry change leaves the rest

    as_alice.ok("mem_update", observation_id=saved["id"], ttl=3600)
    row.refresh_from_db()
    assert timedelta(minutes=59) < row.expires_at - timezone.now() <= timedelta(hours=1)


def test_since_and_until_keep_exactly_the_period_on_search_and_context(as_alice, as_bob):
    edge = datetime(2026, 3, 1, tzinfo=UTC)
    for title, at in (("Before", edge - timedelta(seconds=1)), ("At since", edge),
                      ("Last inside", edge + timedelta(days=1) - timedelta(microseconds=1)),
                      ("At until", edge + timedelta(days=1))):
        as_alice.ok("mem_save", title=f"{title} deploy", content="A deploy note.", happened_at=stamp(at))
    as_bob.ok("mem_save", title="Bob deploy", content="A deploy note of Bob's.", happened_at=stamp(edge))

    # The same period written in another offset: 2026-03-01T01:00+01:00 is the edge itself.
    period = {"since": "2026-03-01T01:00:00+01:00", "until": "2026-03-02"}
    found = as_alice.ok("mem_search", query="deploy", **period)["results"]
    assert {r["title"] for r in found} == {"At since deploy", "Last inside deploy"}
    context = as_alice.ok("mem_context", **period)["memories"]
    assert {m["title"] for m in context} == {"At since deploy", "Last inside deploy"}
    assert {m["title"] for m in as_alice.ok("mem_context", until="2026-03-01")["memories"]} == {"Before deploy"}
    assert {r["title"] for r in as_alice.ok("mem_search", query="deploy", since="2026-03-02")["results"]} == {
        "At until deploy"}

    empty = as_alice.call("mem_search", query="deploy", since="2030-01-01")
    assert empty.structured_content == {"results": []}
    assert empty.content[0].text.startswith("No memories matched in that period.")
    assert as_alice.call("mem_context", since="2030-01-01").content[0].text == "No memories happened in that period."


def test_a_date_phrase_is_read_in_the_time_zone_given_and_the_text_names_the_period(as_alice):
    now = timezone.now()
    as_alice.ok("mem_save", title="Chose the database", content="We decided on PostgreSQL.",
                happened_at=stamp(now - timedelta(days=7)))
    as_alice.ok("mem_save", title="Chose the cache", content="We decided on Redis.",
                happened_at=stamp(now - timedelta(days=60)))
    result = as_alice.call("mem_search", query="what did we decide last week", time_zone="Pacific/Kiritimati")
    assert not result.is_error, result.content[0].text
    results = result.structured_content["results"]
    period = results[0]["score"]["breakdown"]["period"]
    start, end = datetime.fromisoformat(period["start"]), datetime.fromisoformat(period["end"])
    assert end - start == timedelta(days=7) and start.astimezone(UTC).hour == 10  # Monday 00:00 at UTC+14
    assert f'Read "{period["phrase"]}" as {shown(start)} to {shown(end)}' in result.content[0].text
    for item in results:
        inside = start <= datetime.fromisoformat(item["happened_at"]) < end
        assert item["score"]["breakdown"]["in_period"] == inside, item["title"]
    assert results[0]["title"] == "Chose the database"


def test_an_expired_memory_is_missing_from_every_tool_before_the_sweep(as_alice):
    gone = as_alice.ok("mem_save", title="Short-lived deploy note", content="During the trip.",
                       ttl=3600)["observation"]
    kept = as_alice.ok("mem_save", title="Lasting deploy note", content="For good.")["observation"]
    Observation.objects.filter(pk=gone["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert as_alice.error("mem_get_observation", observation_id=gone["id"])["code"] == "observation_not_found"
    for tool, arguments in (("mem_update", {"title": "Back"}), ("mem_timeline", {}), ("mem_delete", {})):
        body = as_alice.error(tool, observation_id=gone["id"], **arguments)
        assert body["code"] == "observation_not_found", tool
    assert [r["id"] for r in as_alice.ok("mem_search", query="deploy note")["results"]] == [kept["id"]]
    assert [m["id"] for m in as_alice.ok("mem_context")["memories"]] == [kept["id"]]
    assert [m["id"] for m in as_alice.ok("mem_session_start")["memories"]] == [kept["id"]]
    assert as_alice.ok("mem_stats")["observations"] == 1
    assert Observation.objects.filter(pk=gone["id"]).exists()  # still stored: the sweep erases it


def test_a_types_retention_hides_what_it_outlived(as_alice):
    old = as_alice.ok("mem_save", title="Snippet", content="Said in passing.", type="conversation")["observation"]
    Observation.objects.filter(pk=old["id"]).update(updated_at=timezone.now() - timedelta(days=2))
    assert as_alice.ok("mem_get_observation", observation_id=old["id"])["id"] == old["id"]
    with override_settings(ILAB_MEMORY={"RETENTION": {"conversation": timedelta(days=1)}}):
        assert as_alice.error("mem_get_observation", observation_id=old["id"])["code"] == "observation_not_found"
        assert as_alice.ok("mem_search", query="snippet")["results"] == []


# (tool, arguments, the field at fault, its code): the services' own ValidationError, as a tool error.
BAD_TIME_VALUES = [
    ("mem_save", {"happened_at": "last spring"}, "happened_at", "invalid_datetime"),
    ("mem_save", {"happened_at": "2026-03-01T09:30:00"}, "happened_at", "naive_datetime"),
    ("mem_save", {"happened_at": 20260301}, "happened_at", "invalid_type"),
    ("mem_save", {"happened_at": ["2026-03-01"]}, "happened_at", "invalid_type"),
    ("mem_save", {"expires_at": "2001-01-01"}, "expires_at", "in_the_past"),
    ("mem_save", {"expires_at": "soon"}, "expires_at", "invalid_datetime"),
    ("mem_save", {"ttl": 0}, "ttl", "min_value"),
    ("mem_save", {"ttl": 10**12}, "ttl", "max_value"),
    ("mem_save", {"ttl": "a day"}, "ttl", "invalid"),
    ("mem_save", {"ttl": 60, "expires_at": "2999-01-01"}, "ttl", "conflict"),
    ("mem_update", {"happened_at": "2026-13-01"}, "happened_at", "invalid_datetime"),
    ("mem_update", {"expires_at": "2001-01-01T00:00:00Z"}, "expires_at", "in_the_past"),
    ("mem_update", {"ttl": -5}, "ttl", "min_value"),
    ("mem_search", {"since": "yesterday"}, "since", "invalid_datetime"),
    ("mem_search", {"until": "2026-03-01T00:00:00"}, "until", "naive_datetime"),
    ("mem_search", {"since": "2026-03-02", "until": "2026-03-01"}, "until", "empty_period"),
    ("mem_search", {"time_zone": "Mars/Olympus_Mons"}, "time_zone", "invalid_time_zone"),
    ("mem_search", {"time_zone": 2}, "time_zone", "invalid_type"),
    ("mem_context", {"since": {"year": 2026}}, "since", "invalid_type"),
    ("mem_context", {"since": "2026-03-01", "until": "2026-03-01"}, "until", "empty_period"),
]
BASE = {"mem_save": {"title": "t", "content": "c"}, "mem_search": {"query": "deploy"}, "mem_context": {}}


def test_bad_time_values_are_tool_errors_naming_the_field_and_store_nothing(as_alice):
    obs = as_alice.ok("mem_save", title="Anchor", content="anchor")["observation"]["id"]
    before = snapshot()
    for tool, arguments, field, code in BAD_TIME_VALUES:
        sent = {**BASE.get(tool, {"observation_id": obs}), **arguments}
        result = as_alice.call(tool, **sent)
        assert result.is_error, (tool, arguments)
        body = result.structured_content
        assert (body["code"], list(body["errors"])) == (code, [field]), (tool, arguments, body)
        assert field in result.content[0].text
    assert snapshot() == before


@pytest.mark.engine_independent
def test_time_arguments_over_the_embedded_stdio_server(tmp_path):
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "ilab_memory.mcp", "--db", str(tmp_path / "mem.db"), "--user", "alice"],
        cwd=str(ROOT),
    )

    async def main():
        async with Client(stdio_client(parameters), mode="legacy") as client:
            await client.call_tool("mem_save", {"title": "Moved to Berlin", "content": "In March.",
                                                "happened_at": "2025-03-15"})
            await client.call_tool("mem_save", {"title": "Moved to Paris", "content": "In June.",
                                                "happened_at": "2025-06-15"})
            found = await client.call_tool("mem_search", {"query": "moved", "since": "2025-03-01",
                                                          "until": "2025-04-01"})
            bad = await client.call_tool("mem_context", {"until": "March"})
            return found, bad

    found, bad = anyio.run(main)
    assert [r["title"] for r in found.structured_content["results"]] == ["Moved to Berlin"]
    assert "happened 2025-03-15 00:00 UTC" in found.content[0].text
    assert bad.is_error and bad.structured_content["errors"] == {
        "until": ["must be an ISO 8601 date or date-time with a UTC offset (2026-03-01 or 2026-03-01T09:30:00Z)."]}
