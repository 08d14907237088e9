"""Private blocks never stored nor returned; bad input is a tool error naming the field and the
limit, with nothing stored; answers and errors are exactly the HTTP API's for the same request."""

import json

import pytest
from rest_framework.test import APIClient

from tests.mcp.conftest import everything_stored, snapshot

SECRET = "hunter2-s3cr3t"
PRIVATE = f"<private>{SECRET}</private>"


def texts(result) -> str:
    return json.dumps(result.structured_content, ensure_ascii=False) + "".join(c.text for c in result.content)


def test_private_text_is_never_stored_nor_returned(as_alice):
    seen = []

    def call(tool, **arguments):
        result = as_alice.call(tool, **arguments)
        seen.append(texts(result))
        return result.structured_content

    call("mem_session_start")
    saved = call("mem_save", title=f"Deploy key {PRIVATE}", content=f"The key is {PRIVATE}.",
                 topic_key=f"keys {PRIVATE}", metadata={"env": {"token": PRIVATE, "list": [PRIVATE]}})
    obs = saved["observation"]
    assert obs["redacted_blocks"] >= 3 and "[REDACTED]" in obs["content"]
    call("mem_update", observation_id=obs["id"], content=f"Rotated: <PRIVATE class=x>{SECRET}</PRIVATE> now")
    call("mem_save", title="Unclosed", content=f"tail <private>{SECRET} never closed")
    call("mem_session_summary", summary=f"Rotated the key {PRIVATE}.")
    for tool, arguments in [
        ("mem_get_observation", {"observation_id": obs["id"]}),
        ("mem_search", {"query": SECRET}),
        ("mem_search", {"query": "rotated"}),
        ("mem_context", {}),
        ("mem_timeline", {"observation_id": obs["id"]}),
        ("mem_stats", {}),
        ("mem_save", {"title": "x" * 400 + PRIVATE, "content": PRIVATE}),  # an error never echoes input
        ("mem_session_end", {"summary": f"Done {PRIVATE}"}),
        ("mem_session_start", {}),
    ]:
        call(tool, **arguments)
    # (Search by the secret may still rank neighbours by meaning; none of them holds it.)
    assert all(SECRET not in text for text in seen)
    assert SECRET not in everything_stored()


LIMITS = [
    # (tool, arguments, field, limit)
    ("mem_save", {"title": "t" * 301, "content": "c"}, "title", 300),
    ("mem_save", {"title": "t", "content": "c" * 50_001}, "content", 50_000),
    ("mem_save", {"title": "t", "content": "c", "topic_key": "k" * 121}, "topic_key", 120),
    ("mem_save", {"title": "t", "content": "c", "metadata": {"blob": "m" * 16_400}}, "metadata", 16_384),
    ("mem_session_summary", {"summary": "s" * 20_001}, "summary", 20_000),
    ("mem_session_end", {"summary": "s" * 20_001}, "summary", 20_000),
    ("mem_search", {"query": "q" * 501}, "query", 500),
    ("mem_update", {"observation_id": "{obs}", "title": "t" * 301}, "title", 300),
    ("mem_update", {"observation_id": "{obs}", "content": "c" * 50_001}, "content", 50_000),
]


def test_over_a_limit_is_a_tool_error_naming_field_limit_and_size_and_nothing_is_stored(as_alice):
    obs = as_alice.ok("mem_save", title="Anchor", content="anchor")["observation"]["id"]
    for tool, arguments, field, limit in LIMITS:
        arguments = {k: obs if v == "{obs}" else v for k, v in arguments.items()}
        before = snapshot()
        body = as_alice.error(tool, **arguments)
        assert (body["code"], body["limit"], list(body["errors"])) == ("max_length", limit, [field]), tool
        assert body["size"] > limit and body["detail"].startswith(f"{field}: is {body['size']} ")
        assert f"the limit is {limit}" in body["detail"]
        assert snapshot() == before, f"{tool} stored something"


def test_a_limit_counts_what_remains_after_redaction(as_alice):
    """As over the API: a private block that pushes a title past the limit is removed first."""
    title = "t" * 290 + PRIVATE  # 315 characters sent, 300 stored
    saved = as_alice.ok("mem_save", title=title, content="c")
    assert saved["observation"]["title"] == "t" * 290 + "[REDACTED]"


BAD_INPUT = [
    # (tool, arguments, field, code)
    ("mem_save", {"content": "c"}, "title", "invalid"),
    ("mem_save", {"title": 5, "content": "c"}, "title", "invalid_type"),
    ("mem_save", {"title": "  ", "content": "c"}, "title", "blank"),
    ("mem_save", {"title": "t", "content": "c", "type": "Not A Slug"}, "type", "invalid_type_slug"),
    ("mem_save", {"title": "t", "content": "c", "metadata": ["not", "an", "object"]}, "metadata", "invalid_type"),
    ("mem_save", {"title": "t", "content": "c", "session_id": "mine"}, "session_id", "invalid"),
    ("mem_save", {"title": "t", "content": "c\x00"}, "content", "null_character"),
    ("mem_session_summary", {"summary": " "}, "summary", "blank"),
    ("mem_search", {"query": ""}, "query", "blank"),
    ("mem_search", {"query": "q", "limit": 0}, "limit", "min_value"),
    ("mem_search", {"query": "q", "limit": 51}, "limit", "max_value"),
    ("mem_search", {"query": "q", "limit": "10"}, "limit", "invalid"),
    ("mem_search", {"query": "q", "min_score": -0.5}, "min_score", "min_value"),
    ("mem_search", {"query": "q", "min_score": "0.5"}, "min_score", "invalid_type"),
    ("mem_search", {"query": "q", "min_score": True}, "min_score", "invalid_type"),
    ("mem_context", {"limit": 101}, "limit", "max_value"),
    ("mem_timeline", {"observation_id": "{obs}", "before": -1}, "before", "min_value"),
    ("mem_timeline", {"observation_id": "{obs}", "after": 51}, "after", "max_value"),
    ("mem_delete", {"observation_id": "{obs}", "hard": "yes"}, "hard", "invalid"),
    ("mem_update", {"observation_id": "{obs}"}, None, "no_fields"),
    ("mem_update", {"observation_id": "{obs}", "type": None, "title": 7}, "title", "invalid_type"),
    ("mem_get_observation", {}, "observation_id", "invalid"),
    ("mem_stats", {"user_id": 42}, "user_id", "invalid_type"),
]


def test_bad_input_is_a_tool_error_with_the_apis_codes_and_nothing_is_stored(as_alice):
    obs = as_alice.ok("mem_save", title="Anchor", content="anchor")["observation"]["id"]
    for tool, arguments, field, code in BAD_INPUT:
        arguments = {k: obs if v == "{obs}" else v for k, v in arguments.items()}
        before = snapshot()
        body = as_alice.error(tool, **arguments)
        assert body["code"] == code, (tool, arguments, body)
        if field is not None:
            # The API's words: its services' "field: message", or DRF's "Invalid input." for what
            # only the face checks (a missing or unknown field, a count that is no integer).
            detail = "Invalid input." if code == "invalid" else f"{field}: {body['errors'][field][0]}"
            assert list(body["errors"]) == [field] and body["detail"] == detail, (tool, body)
        assert snapshot() == before, f"{tool} stored something"


def test_null_for_an_optional_argument_means_not_given(as_alice):
    saved = as_alice.ok("mem_save", title="t", content="c", type=None, topic_key=None, metadata=None, user_id=None)
    assert saved["observation"]["type"] == "manual"
    assert len(as_alice.ok("mem_search", query="c", type=None, limit=None)["results"]) == 1
    assert as_alice.ok("mem_session_end", summary=None)["status"] == "completed"


def test_answers_and_errors_are_the_apis_own(as_alice, alice):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {alice.token}")
    obs = as_alice.ok("mem_save", title="Use PostgreSQL", content="In production.", type="decision")["observation"]

    assert as_alice.ok("mem_get_observation", observation_id=obs["id"]) == api.get(
        f"/api/memory/observations/{obs['id']}/").json()
    assert as_alice.ok("mem_timeline", observation_id=obs["id"]) == api.get(
        f"/api/memory/observations/{obs['id']}/timeline/").json()
    assert as_alice.ok("mem_session_summary", summary="s")["summary"] == api.get(
        "/api/memory/sessions/").json()["results"][0]["summary"]

    missing = "00000000-0000-4000-8000-000000000000"
    pairs = [
        (as_alice.error("mem_get_observation", observation_id=missing),
         api.get(f"/api/memory/observations/{missing}/")),
        (as_alice.error("mem_save", title="t" * 301, content="c"),
         api.post("/api/memory/observations/", {"title": "t" * 301, "content": "c"}, format="json")),
        (as_alice.error("mem_stats", user_id="someone-else"),
         api.post("/api/memory/sessions/start/", {"user_id": "someone-else"}, format="json")),
    ]
    as_alice.ok("mem_session_end")
    pairs.append((as_alice.error("mem_session_end"), api.post("/api/memory/sessions/end/", {}, format="json")))
    for mcp_body, response in pairs:
        assert mcp_body == response.json()


@pytest.mark.parametrize("arguments", [{"title": "t" * 301, "content": "c"}, {"title": 1, "content": "c"}])
def test_the_text_of_an_error_reads_well(as_alice, arguments):
    result = as_alice.call("mem_save", **arguments)
    assert result.is_error and result.content[0].text.startswith("Error (")
    assert "Traceback" not in result.content[0].text
