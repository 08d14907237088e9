"""Streamable HTTP: the SDK's client against project.asgi:application on a real port.

Every tool's happy path in both protocol eras (the 2025 initialize handshake and the 2026
per-request envelopes), authentication, Host/Origin checks, the body limit and the throttle.
"""

import json

import httpx2
import pytest
from django.core.cache import cache
from django.test import override_settings
from mcp.shared.exceptions import MCPError

from ilab_memory.mcp.http import MemoryMCPApp, transport_security_from_settings
from ilab_memory.models import Observation, Session
from tests.mcp.conftest import make_account, mcp_client, serving

TOOLS = {
    "mem_session_start", "mem_save", "mem_session_summary", "mem_session_end", "mem_search", "mem_context",
    "mem_get_observation", "mem_update", "mem_delete", "mem_timeline", "mem_stats",
}


def post(url, body, **headers):
    """One raw JSON-RPC POST (for the HTTP-level answers the SDK's client would only raise on)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    return httpx2.post(url, content=body if isinstance(body, bytes) else None,
                       json=None if isinstance(body, bytes) else body, headers=headers, timeout=30)


LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_every_tool_through_a_whole_session(mcp_url, alice, mode):
    with mcp_client(mcp_url, alice.token, mode=mode) as mcp:
        assert {tool.name for tool in mcp.list_tools().tools} == TOOLS
        assert "mem_session_start" in mcp.instructions

        started = mcp.ok("mem_session_start")
        assert started["is_new"] is True and started["sessions_context"] == [] and started["memories"] == []
        again = mcp.call("mem_session_start")
        assert again.structured_content["session_id"] == started["session_id"]
        assert again.structured_content["is_new"] is False
        assert again.content[0].text.startswith("CONTINUING session")

        saved = mcp.ok("mem_save", title="Deploy with uvicorn", content="ASGI workers behind nginx.",
                       type="decision", topic_key="Deploy stack", metadata={"files": ["project/asgi.py"]})
        assert saved["action"] == "created"
        record = saved["observation"]
        assert (record["topic_key"], record["session_id"], record["user_id"]) == (
            "deploy-stack", started["session_id"], alice.user_id)
        revised = mcp.ok("mem_save", title="Deploy with uvicorn", content="Two ASGI workers.", topic_key="deploy stack")
        assert revised["action"] == "revised" and revised["observation"]["revision_count"] == 2
        other = mcp.ok("mem_save", title="Cache in Redis", content="Sessions in Redis.", type="config")["observation"]

        found = mcp.ok("mem_search", query="uvicorn")["results"]
        assert found[0]["id"] == record["id"] and found[0]["score"]["kind"] == "search"
        assert mcp.ok("mem_search", query="redis", type="decision")["results"] == []
        context = mcp.ok("mem_context", limit=1)["memories"]
        assert len(context) == 1 and context[0]["score"]["kind"] == "context"

        full = mcp.ok("mem_get_observation", observation_id=record["id"])
        assert full["content"] == "Two ASGI workers." and full["metadata"] == {}
        updated = mcp.ok("mem_update", observation_id=record["id"], content="Three ASGI workers.", topic_key=None)
        assert updated["revision_count"] == 3 and updated["topic_key"] is None

        timeline = mcp.ok("mem_timeline", observation_id=other["id"], before=5, after=0)
        assert timeline["anchor"]["id"] == other["id"]
        assert timeline["session_id"] == started["session_id"]

        summarized = mcp.ok("mem_session_summary", summary="Chose the deploy stack.")
        assert summarized["status"] == "active" and summarized["is_auto_generated"] is False

        stats = mcp.ok("mem_stats")
        assert (stats["observations"], stats["active_sessions"], stats["revisions"]) == (2, 1, 2)
        assert stats["observations_by_type"] == {"config": 1, "manual": 1}  # the revision had no type

        deleted = mcp.ok("mem_delete", observation_id=other["id"])
        assert deleted == {"id": other["id"], "hard": False}
        assert mcp.ok("mem_delete", observation_id=other["id"], hard=True)["hard"] is True
        assert mcp.error("mem_get_observation", observation_id=other["id"])["code"] == "observation_not_found"

        ended = mcp.ok("mem_session_end")
        assert ended["status"] == "completed" and ended["summary"] == "Chose the deploy stack."
        assert mcp.error("mem_session_end") == {"detail": "This user has no active session.",
                                                "code": "no_active_session"}

        fresh = mcp.call("mem_session_start")
        assert fresh.structured_content["is_new"] is True
        assert [c["summary"] for c in fresh.structured_content["sessions_context"]] == ["Chose the deploy stack."]
        assert "[Human] " in fresh.content[0].text and "Deploy with uvicorn" in fresh.content[0].text
        assert fresh.content[0].text.startswith("NEW session")


def test_min_score_leaves_out_the_results_below_it(as_alice):
    as_alice.ok("mem_save", title="Boiler service", content="The boiler is serviced every October by Acme Heating.")
    as_alice.ok("mem_save", title="Boiler pressure", content="Keep the boiler at 1.5 bar.")
    everything = as_alice.ok("mem_search", query="boiler serviced October")["results"]
    scores = [r["score"]["value"] for r in everything]
    assert len(scores) >= 2 and scores[0] > scores[-1]
    cut = (scores[0] + scores[-1]) / 2
    kept = as_alice.ok("mem_search", query="boiler serviced October", min_score=cut)["results"]
    assert [r["id"] for r in kept] == [r["id"] for r in everything if r["score"]["value"] >= cut]
    assert 0 < len(kept) < len(everything)
    assert as_alice.ok("mem_search", query="boiler serviced October", min_score=scores[0] + 0.01)["results"] == []


def test_unknown_tool_is_a_protocol_error(as_alice):
    with pytest.raises(MCPError, match="Unknown tool"):
        as_alice.call("mem_forget_everything")


def test_no_token_is_401_with_www_authenticate(mcp_url, live_db):
    response = post(mcp_url, LIST_TOOLS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json() == {"detail": "Authentication credentials were not provided.", "code": "not_authenticated"}


def test_bad_token_is_401(mcp_url, alice):
    response = post(mcp_url, LIST_TOOLS, Authorization="Bearer " + "0" * 40)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert response.json() == {"detail": "Invalid token.", "code": "authentication_failed"}


def test_inactive_user_is_refused(mcp_url, live_db):
    account = make_account("mcp-inactive")
    try:
        account.user.is_active = False
        account.user.save()
        response = post(mcp_url, LIST_TOOLS, Authorization=f"Bearer {account.token}")
        assert response.status_code == 401 and response.json()["code"] == "authentication_failed"
    finally:
        account.user.delete()


def test_the_apis_token_keyword_works_too(mcp_url, alice):
    response = post(mcp_url, LIST_TOOLS, Authorization=f"Token {alice.token}")
    assert response.status_code == 200 and len(response.json()["result"]["tools"]) == len(TOOLS)


def test_a_session_cookie_is_not_enough(mcp_url, alice, client):
    """Tools are not callable by a page the operator's browser happens to be logged in on."""
    client.force_login(alice.user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    assert post(mcp_url, LIST_TOOLS, Cookie=cookie).status_code == 401
    client.logout()


def test_the_path_without_its_trailing_slash_is_served(site, alice):
    response = post(site + "/mcp", LIST_TOOLS, Authorization=f"Bearer {alice.token}")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 421),
        ({"Host": "localhost.evil.example:8000"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),  # localhost is in ALLOWED_HOSTS, any port
        ({"Host": "localhost:9999"}, 200),
    ],
)
def test_host_and_origin_are_checked_against_allowed_hosts(mcp_url, alice, headers, status):
    """DNS rebinding: a page on another name that resolves here is refused even with a token."""
    response = post(mcp_url, LIST_TOOLS, Authorization=f"Bearer {alice.token}", **headers)
    assert response.status_code == status


def test_body_over_data_upload_max_memory_size_is_413_and_nothing_is_stored(mcp_url, alice, settings):
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "mem_save", "arguments": {"title": "big",
                                                         "content": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE}}}
    response = post(mcp_url, json.dumps(call).encode(), Authorization=f"Bearer {alice.token}")
    assert response.status_code == 413
    assert not Observation.objects.exists()


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post_is_served_stateless(mcp_url, alice, method):
    """No stream is held open for a GET and there is no session to DELETE: any replica is alike."""
    response = httpx2.request(method, mcp_url, headers={"Authorization": f"Bearer {alice.token}",
                                                        "Accept": "application/json, text/event-stream"}, timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json() == {"detail": f'Method "{method}" not allowed.', "code": "method_not_allowed"}


@pytest.fixture
def throttled():
    cache.clear()
    with override_settings(ILAB_MEMORY={"API_THROTTLE_RATE": "3/minute"}):
        yield
    cache.clear()


def test_throttle_counts_tool_calls_in_the_apis_bucket(mcp_url, alice, throttled):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {alice.token}")
    assert api.get("/api/memory/context/").status_code == 200  # 1 of 3, spent through the API
    with mcp_client(mcp_url, alice.token) as mcp:
        mcp.ok("mem_context")
        mcp.ok("mem_stats")
        body = mcp.error("mem_session_start")
    assert body["code"] == "throttled" and "Expected available in" in body["detail"]
    assert not Session.objects.exists()  # refused before it did anything
    assert api.get("/api/memory/context/").status_code == 429


def test_start_tells_the_agent_whether_to_greet_and_marks_human_and_auto_summaries(as_alice):
    as_alice.ok("mem_save", title="Fix login loop", content="Cookie path.", type="bugfix")
    as_alice.ok("mem_session_end")  # no summary anywhere: the synthetic one
    as_alice.ok("mem_session_start")
    as_alice.ok("mem_session_end", summary="Talked about the roadmap.")
    text = as_alice.call("mem_session_start").content[0].text
    lines = text.splitlines()
    assert lines[0].startswith("NEW session") and "greet the user" in lines[0]
    assert lines[3].startswith("- [Human] ") and lines[3].endswith("0 memories: Talked about the roadmap.")
    assert lines[4].startswith("- [Auto] ") and lines[4].endswith("1 memory: Memories: [bugfix] Fix login loop")
    assert "1. [bugfix] Fix login loop — score " in text
    assert as_alice.call("mem_session_start").content[0].text.startswith("CONTINUING session")


def test_mounted_alone_on_a_server_without_lifespan_it_starts_on_its_first_request(alice):
    with serving(MemoryMCPApp(), lifespan="off") as base:
        with mcp_client(base + "/any/path/", alice.token) as mcp:
            assert mcp.ok("mem_stats")["user_id"] == alice.user_id


@pytest.mark.parametrize(
    ("allowed", "debug", "hosts", "origins"),
    [
        (["api.example.com"], False, ["api.example.com", "api.example.com:*"],
         ["http://api.example.com", "http://api.example.com:*", "https://api.example.com", "https://api.example.com:*"]),
        ([".example.com"], False, ["example.com", "example.com:*"], None),
        ([], True, ["localhost", "localhost:*", "127.0.0.1", "127.0.0.1:*", "[::1]", "[::1]:*"], None),
    ],
)
def test_transport_security_follows_allowed_hosts(settings, allowed, debug, hosts, origins):
    settings.ALLOWED_HOSTS, settings.DEBUG = allowed, debug
    security = transport_security_from_settings()
    assert security.enable_dns_rebinding_protection is True
    assert security.allowed_hosts == hosts
    if origins is not None:
        assert security.allowed_origins == origins


def test_transport_security_takes_trusted_origins_and_a_wildcard_turns_it_off(settings):
    settings.ALLOWED_HOSTS, settings.CSRF_TRUSTED_ORIGINS = ["app.example.com"], ["https://ui.example.org"]
    assert "https://ui.example.org" in transport_security_from_settings().allowed_origins
    settings.ALLOWED_HOSTS = ["*"]
    assert transport_security_from_settings().enable_dns_rebinding_protection is False


def test_the_debug_default_is_served_without_a_warning_and_an_operators_dotted_entry_is_warned_about(
        settings, caplog):
    settings.ALLOWED_HOSTS, settings.DEBUG = [], True
    with caplog.at_level("WARNING", logger="ilab_memory.mcp"):
        security = transport_security_from_settings()
    assert "localhost" in security.allowed_hosts and caplog.records == []

    settings.ALLOWED_HOSTS, settings.DEBUG = [".example.com", "api.example.org"], False
    with caplog.at_level("WARNING", logger="ilab_memory.mcp"):
        transport_security_from_settings()
    assert [record.getMessage() for record in caplog.records] == [
        "MCP endpoint: ALLOWED_HOSTS entry '.example.com' allows 'example.com' but not its subdomains"
    ]
