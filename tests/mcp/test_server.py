"""What the tools say is what happened, and what the HTTP API says.

A tool error is the API's body for the same bad input (``detail``, ``code``, field ``errors``,
``limit``, ``size``), compared here request for request with the API's test client. The texts a
model reads say how each search result was found and how many private blocks *this* request
held, and a fixed scenario's texts and errors are snapshot-tested
(``tests/mcp/texts.snapshot.json``; regenerate with ``ILAB_MEMORY_UPDATE_MCP_SNAPSHOT=1`` and
review the diff, as for ``tools.snapshot.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from rest_framework.test import APIClient

from ilab_memory.conf import get_config
from ilab_memory.mcp import tools
from tests.mcp.conftest import assert_matches_snapshot

TEXTS_SNAPSHOT = Path(__file__).with_name("texts.snapshot.json")
OBSERVATIONS = "/api/memory/observations/"


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alice.token}")
    return client


# Bad input to a tool; ``api_request`` makes the same request to the API. "{obs}" is an
# observation of the caller's.
SAME_BAD_INPUT = [
    ("mem_save", {"content": "c"}),
    ("mem_save", {}),
    ("mem_save", {"title": 5, "content": "c"}),
    ("mem_save", {"title": None, "content": "c"}),
    ("mem_save", {"title": ["t"], "content": "c"}),
    ("mem_save", {"title": " ", "content": "c"}),
    ("mem_save", {"title": "t" * 301, "content": "c"}),
    ("mem_save", {"title": "t", "content": "c", "type": 5}),
    ("mem_save", {"title": "t", "content": "c", "type": "Not A Slug"}),
    ("mem_save", {"title": "t", "content": "c", "topic_key": 5}),
    ("mem_save", {"title": "t", "content": "c", "metadata": [1]}),
    ("mem_save", {"title": "t", "content": "c", "metadata": {"blob": "m" * 16_400}}),
    ("mem_save", {"title": "t", "content": "c", "session_id": "x"}),
    ("mem_save", {"title": "t", "content": "c", "a": 1, "b": 2}),
    ("mem_save", {"content": "c", "extra": 1}),
    ("mem_session_summary", {}),
    ("mem_session_summary", {"summary": 3}),
    ("mem_session_summary", {"summary": "s" * 20_001}),
    ("mem_session_end", {"summary": 3}),
    ("mem_session_start", {"user_id": 42}),
    ("mem_session_start", {"user_id": "someone-else"}),
    ("mem_session_start", {"user_id": " "}),
    ("mem_update", {"observation_id": "{obs}", "title": 7}),
    ("mem_update", {"observation_id": "{obs}"}),
    ("mem_update", {"observation_id": "{obs}", "content": "c" * 50_001}),
    ("mem_update", {"observation_id": "00000000-0000-4000-8000-000000000000", "title": "t"}),
    ("mem_get_observation", {"observation_id": "not-an-id"}),
    ("mem_search", {}),
    ("mem_search", {"query": " "}),
    ("mem_search", {"query": "q" * 501}),
    ("mem_search", {"query": "q", "type": "Bad Type"}),
    ("mem_search", {"query": "q", "limit": 0}),
    ("mem_search", {"query": "q", "limit": 51}),
    ("mem_search", {"query": "q", "limit": "x"}),
    ("mem_search", {"query": "q", "limit": 1.5}),
    ("mem_context", {"limit": 101}),
    ("mem_context", {"limit": "many"}),
    ("mem_timeline", {"observation_id": "{obs}", "before": -1}),
    ("mem_timeline", {"observation_id": "{obs}", "after": "x"}),
    ("mem_delete", {"observation_id": "{obs}", "hard": "maybe"}),
]

# Where each tool's request goes over the API, and how: a JSON body, or a query string.
ROUTES = {
    "mem_save": ("post", OBSERVATIONS),
    "mem_session_start": ("post", "/api/memory/sessions/start/"),
    "mem_session_summary": ("post", "/api/memory/sessions/summary/"),
    "mem_session_end": ("post", "/api/memory/sessions/end/"),
    "mem_update": ("patch", OBSERVATIONS + "{id}/"),
    "mem_get_observation": ("get", OBSERVATIONS + "{id}/"),
    "mem_search": ("get", OBSERVATIONS + "search/"),
    "mem_context": ("get", "/api/memory/context/"),
    "mem_timeline": ("get", OBSERVATIONS + "{id}/timeline/"),
    "mem_delete": ("delete", OBSERVATIONS + "{id}/"),
}


def api_body(api: APIClient, tool: str, arguments: dict) -> dict:
    """The API's error body for the request that carries ``arguments`` to ``tool``'s endpoint
    (search's ``query`` is the API's ``q``, and its field errors are named back)."""
    method, path = ROUTES[tool]
    data = dict(arguments)
    path = path.format(id=data.pop("observation_id", None))
    if method in ("post", "patch"):
        response = getattr(api, method)(path, data, format="json")
    elif method == "get":
        response = api.get(path, {"q" if name == "query" else name: value for name, value in data.items()})
    else:
        response = api.delete(path + "?" + urlencode(data))
    assert response.status_code in (400, 403, 404), (tool, arguments, response.status_code)
    body = response.json()
    if "errors" in body:
        # The API's endpoints accept a scope; no tool does (the server binds it), so the
        # list of accepted fields differs by exactly that name.
        body["errors"] = {"query" if name == "q" else name: [m.replace(" scope,", "") for m in messages]
                          for name, messages in body["errors"].items()}
    if body["detail"].startswith("q: "):
        body["detail"] = "query: " + body["detail"].removeprefix("q: ")
    return body


def test_the_same_bad_input_gets_the_apis_body_field_for_field(as_alice, api):
    obs = as_alice.ok("mem_save", title="Anchor", content="anchor")["observation"]["id"]
    for tool, arguments in SAME_BAD_INPUT:
        arguments = {name: obs if value == "{obs}" else value for name, value in arguments.items()}
        assert as_alice.error(tool, **arguments) == api_body(api, tool, arguments), (tool, arguments)


def test_an_error_text_names_each_field_at_fault(as_alice):
    result = as_alice.call("mem_save", content="c", colour="blue")
    assert result.content[0].text == (
        "Error (invalid): Invalid input. colour: Is not a field of this endpoint; it accepts: user_id, "
        "title, content, type, topic_key, metadata, happened_at, expires_at, ttl."
    )
    result = as_alice.call("mem_save", content="c")
    assert result.content[0].text == "Error (invalid): Invalid input. title: This field is required."
    result = as_alice.call("mem_save", title="t" * 301, content="c")  # the detail names the field already
    assert result.content[0].text == (
        "Error (max_length): title: is 301 characters long; the limit is 300 characters."
    )


def test_an_unknown_argument_holding_a_private_block_is_not_echoed(as_alice):
    body = as_alice.error("mem_save", title="t", content="c", **{"<private>hunter2</private>": 1})
    assert list(body["errors"]) == ["?"] and "hunter2" not in json.dumps(body)


JSON_VALUES = [None, True, 0, 7, 1.5, "", "text", [], ["a"], {}, {"k": "v"}]


def test_any_json_value_for_any_argument_is_an_answer_or_a_tool_error_never_a_crash(as_alice):
    obs = as_alice.ok("mem_save", title="Anchor", content="anchor")["observation"]["id"]
    base = {"mem_save": {"title": "t", "content": "c"}, "mem_session_summary": {"summary": "s"},
            "mem_search": {"query": "anchor"}, "mem_get_observation": {"observation_id": obs},
            "mem_update": {"observation_id": obs, "title": "t"}, "mem_delete": {"observation_id": obs},
            "mem_timeline": {"observation_id": obs}}
    for spec in tools.tool_specs(get_config()):
        for name in spec.input_schema["properties"]:
            if spec.name == "mem_delete" and name == "hard":
                continue  # a true hard delete would take the anchor away; the refusals are covered above
            for value in JSON_VALUES:
                arguments = {**base.get(spec.name, {}), name: value}
                result = as_alice.call(spec.name, **arguments)
                if result.is_error:
                    assert result.structured_content["code"] != "internal_error", (spec.name, name, value)
                as_alice.call("mem_session_start")  # mem_session_end may have closed it


PRIVATE = "<private>hunter2</private>"


def test_a_save_reports_the_private_blocks_of_this_request_not_the_rows_total(as_alice):
    first = as_alice.call("mem_save", title="Deploy key", content=f"The key is {PRIVATE}.")
    again = as_alice.call("mem_save", title="Deploy key", content=f"The key is {PRIVATE}.")
    assert again.structured_content["action"] == "duplicate"
    assert again.structured_content["observation"]["redacted_blocks"] == 2  # the row counts every write
    for result in (first, again):
        assert "1 private block was replaced by [REDACTED]" in result.content[0].text

    revised = as_alice.call("mem_save", title="Deploy key", content="Rotated; no key here.",
                            topic_key="deploy-key")
    assert "private block" not in revised.content[0].text
    revised = as_alice.call("mem_save", title=f"Deploy key {PRIVATE}", content=f"{PRIVATE} and {PRIVATE}",
                            topic_key="deploy-key", metadata={"token": PRIVATE})
    assert revised.structured_content["action"] == "revised"
    assert "4 private blocks were replaced by [REDACTED]" in revised.content[0].text

    obs = revised.structured_content["observation"]["id"]
    updated = as_alice.call("mem_update", observation_id=obs, content=f"Now {PRIVATE}.")
    assert "1 private block was replaced by [REDACTED]" in updated.content[0].text
    plain = as_alice.call("mem_update", observation_id=obs, title="Plain")
    assert "private block" not in plain.content[0].text


MEMORIES = [
    ("Daily standup at 9:30", "The team meets every weekday at 9:30 in room B.", "manual"),
    ("Postgres connection pool", "pgbouncer in transaction mode, pool size 20.", "config"),
    ("Allergic to cats", "Sneezing and red eyes around cats; keep the office cat-free.", "preference"),
]


def test_a_search_says_how_each_result_was_found(as_alice):
    for title, content, kind in MEMORIES:
        as_alice.ok("mem_save", title=title, content=content, type=kind)

    meaning = as_alice.call("mem_search", query="¿a qué hora es la reunión diaria del equipo?")
    top = meaning.structured_content["results"][0]
    assert top["title"] == "Daily standup at 9:30" and top["score"]["breakdown"]["relevance"] is None
    text = meaning.content[0].text
    assert "close in meaning only" in text.splitlines()[1] and "term" not in text.splitlines()[1]

    every = as_alice.call("mem_search", query="pgbouncer pool")
    assert every.content[0].text.splitlines()[1].startswith("1. [config] Postgres connection pool — score ")
    assert " — holding every term — id " in every.content[0].text.splitlines()[1]

    some = as_alice.call("mem_search", query="pool cats")
    found = [line for line in some.content[0].text.splitlines() if re.match(r"\d+\. ", line)]
    assert len(found) == 2 and all(" — holding some of the terms — id " in line for line in found)
    assert some.content[0].text.startswith("2 memories found (2 holding some of the terms), best first:")


# ---------------------------------------------------------------------------- the texts' snapshot

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")
SCORE = re.compile(r"score [0-9.e+-]+")
OWNER = re.compile(r"belongs to user [^;]+;")  # the account's primary key, which differs by run


def normalized(text: str, ids: dict[str, str]) -> str:
    """``text`` with what changes from run to run (ids, times, score values) replaced by names."""
    text = UUID.sub(lambda m: ids.setdefault(m.group(), f"<id {len(ids) + 1}>"), text)
    text = OWNER.sub("belongs to user <user_id>;", text)
    return SCORE.sub("score <value>", STAMP.sub("<time> UTC", text))


SCENARIO = [
    # <id 1> the session, <id 2> the preference, <id 3> the decision, <id 4> the standup
    ("mem_session_start", {}),
    ("mem_context", {}),
    ("mem_save", {"title": "Prefers 'Ali'", "type": "preference",
                  "content": "Alice asked to be called Ali. Her PIN: <private>4321</private>."}),
    ("mem_save", {"title": "Prefers 'Ali'", "type": "preference",
                  "content": "Alice asked to be called Ali. Her PIN: <private>4321</private>."}),
    ("mem_save", {"title": "Use PostgreSQL in production", "type": "decision", "topic_key": "database-choice",
                  "content": "SQLite stays for embedded mode. DB password: <private>hunter2</private>."}),
    ("mem_save", {"title": "Use PostgreSQL in production", "type": "decision", "topic_key": "Database Choice",
                  "content": "PostgreSQL 17 in production; SQLite for embedded mode."}),
    ("mem_save", {"title": "Daily standup at 9:30",
                  "content": "The team meets every weekday at 9:30 in room B."}),
    ("mem_search", {"query": "PostgreSQL production"}),
    ("mem_search", {"query": "¿a qué hora es la reunión diaria del equipo?", "limit": 1}),
    ("mem_search", {"query": "standup production"}),
    ("mem_search", {"query": "PostgreSQL", "type": "bugfix"}),
    ("mem_context", {"limit": 2}),
    ("mem_get_observation", {"observation_id": "<id 2>"}),
    ("mem_update", {"observation_id": "<id 4>", "metadata": {"ticket": "<private>OPS-1</private>"}}),
    ("mem_timeline", {"observation_id": "<id 3>"}),
    ("mem_session_summary", {"summary": "Chose the database; noted the standup."}),
    ("mem_delete", {"observation_id": "<id 2>"}),
    ("mem_stats", {}),
    ("mem_session_end", {}),
    ("mem_session_end", {}),
    ("mem_session_start", {}),
    ("mem_delete", {"observation_id": "<id 4>", "hard": True}),
    ("mem_get_observation", {"observation_id": "<id 4>"}),
    ("mem_save", {"content": "c", "session_id": "<id 1>"}),
    ("mem_save", {"title": "t" * 301, "content": "c"}),
    ("mem_save", {"title": 5, "content": "c"}),
    ("mem_save", {"title": "t", "content": "c", "type": "Not A Slug"}),
    ("mem_search", {"query": "q", "limit": 0}),
    ("mem_search", {"query": "q", "limit": "ten"}),
    ("mem_timeline", {"observation_id": "<id 3>", "before": 51}),
    ("mem_delete", {"observation_id": "<id 3>", "hard": "yes"}),
    ("mem_stats", {"user_id": "someone-else"}),
    ("mem_save", {"title": "Moved to Berlin", "content": "The user moved to Berlin in March.",
                  "happened_at": "2025-03-10T09:30:00+01:00", "ttl": 86400}),
    ("mem_search", {"query": "Berlin", "since": "2025-03-01", "until": "2025-04-01"}),
    ("mem_search", {"query": "Berlin", "since": "2025-04-01"}),
    ("mem_search", {"query": "who moved to Berlin last week"}),
    ("mem_context", {"until": "2025-04-01"}),
    ("mem_save", {"title": "t", "content": "c", "happened_at": "2026-03-01T09:30:00"}),
    ("mem_save", {"title": "t", "content": "c", "ttl": 0}),
    ("mem_context", {"since": "2026-03-02", "until": "2026-03-01"}),
    ("mem_search", {"query": "q", "time_zone": "Mars/Olympus_Mons"})]


def test_the_texts_and_errors_of_a_fixed_scenario_match_the_snapshot(as_alice):
    ids: dict[str, str] = {}
    names = {}
    served = []
    for tool, arguments in SCENARIO:
        sent = {name: names.get(value, value) if isinstance(value, str) else value
                for name, value in arguments.items()}
        result = as_alice.call(tool, **sent)
        text = normalized(result.content[0].text, ids)
        names = {name: real for real, name in ids.items()}
        entry = {"tool": tool, "arguments": arguments, "text": text}
        if result.is_error:
            error = dict(result.structured_content)
            error["detail"] = OWNER.sub("belongs to user <user_id>;", error["detail"])
            entry["error"] = error
        served.append(entry)
    assert_matches_snapshot(served, TEXTS_SNAPSHOT, "What the tools say")
