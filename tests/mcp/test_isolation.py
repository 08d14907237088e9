"""The isolation matrix over MCP: two users and an agent backend, every tool, foreign ids and user_ids.

As over the API: naming another user_id without ``ilab_memory.act_for_any_user``
is refused with ``act_for_any_user_required`` and changes nothing; another user's observation
answers exactly like an id that does not exist.
"""

import uuid

import pytest

from tests.mcp.conftest import snapshot

# Every tool with arguments that would succeed for the observation's owner; {obs} is filled in.
CALLS = [
    ("mem_session_start", {}),
    ("mem_save", {"title": "t", "content": "c"}),
    ("mem_session_summary", {"summary": "s"}),
    ("mem_session_end", {}),
    ("mem_search", {"query": "alpha"}),
    ("mem_context", {}),
    ("mem_get_observation", {"observation_id": "{obs}"}),
    ("mem_update", {"observation_id": "{obs}", "title": "changed"}),
    ("mem_delete", {"observation_id": "{obs}"}),
    ("mem_delete", {"observation_id": "{obs}", "hard": True}),
    ("mem_timeline", {"observation_id": "{obs}"}),
    ("mem_stats", {}),
]
OBJECT_CALLS = [c for c in CALLS if "observation_id" in c[1]]


def fill(arguments, obs):
    return {k: (obs if v == "{obs}" else v) for k, v in arguments.items()}


@pytest.fixture
def world(as_alice, as_bob):
    """Alice and Bob, each with an active session holding one observation with history."""
    rows = {}
    for name, client in (("alice", as_alice), ("bob", as_bob)):
        saved = client.ok("mem_save", title=f"{name} alpha", content="alpha content", topic_key="k")
        client.ok("mem_save", title=f"{name} alpha v2", content="alpha content", topic_key="k")
        rows[name] = saved["observation"]["id"]
    return rows


def test_naming_another_user_without_the_permission_is_refused_and_changes_nothing(world, as_bob, alice, bob):
    for tool, arguments in CALLS:
        before = snapshot()
        body = as_bob.error(tool, **fill(arguments, world["alice"]), user_id=alice.user_id)
        assert body == {"detail": f"This token belongs to user {bob.user_id}; omit user_id or use an account "
                                  "allowed to act for any user.",
                        "code": "act_for_any_user_required"}, tool
        assert snapshot() == before, tool


def test_another_users_observation_answers_like_one_that_does_not_exist(world, as_bob):
    for target in (world["alice"], str(uuid.uuid4()), "not-a-uuid"):
        for tool, arguments in OBJECT_CALLS:
            before = snapshot()
            body = as_bob.error(tool, **fill(arguments, target))
            assert body == {"detail": "No such observation.", "code": "observation_not_found"}, (tool, target)
            assert snapshot() == before, (tool, target)


def test_each_user_reads_and_ends_only_their_own(world, as_alice, as_bob, alice, bob):
    assert as_bob.ok("mem_get_observation", observation_id=world["bob"], user_id=bob.user_id)["title"] == "bob alpha v2"
    assert [r["id"] for r in as_alice.ok("mem_search", query="alpha")["results"]] == [world["alice"]]
    assert [m["id"] for m in as_alice.ok("mem_context")["memories"]] == [world["alice"]]
    stats = as_alice.ok("mem_stats")
    assert (stats["user_id"], stats["observations"], stats["revisions"]) == (alice.user_id, 1, 1)

    as_bob.ok("mem_session_end")
    assert as_bob.error("mem_session_end")["code"] == "no_active_session"
    assert as_alice.ok("mem_session_start")["is_new"] is False


def test_an_agent_backend_acts_for_the_user_it_names(world, as_agent, alice, bob):
    for tool, arguments in OBJECT_CALLS:  # Alice's observation named as Bob's: not found, nothing changes
        before = snapshot()
        body = as_agent.error(tool, **fill(arguments, world["alice"]), user_id=bob.user_id)
        assert body["code"] == "observation_not_found", tool
        assert snapshot() == before, tool
    deletes_last = sorted(CALLS, key=lambda call: call[0] == "mem_delete")
    for tool, arguments in deletes_last:  # named as Alice's: it is hers
        result = as_agent.ok(tool, **fill(arguments, world["alice"]), user_id=alice.user_id)
        if tool == "mem_session_start":
            assert result["is_new"] is False, "Alice's own open session"
        if tool == "mem_stats":
            assert result["user_id"] == alice.user_id


def test_an_agent_backends_own_memory_and_users_without_an_account(world, as_agent, agent):
    assert as_agent.ok("mem_search", query="alpha")["results"] == []
    assert as_agent.ok("mem_stats")["user_id"] == agent.user_id
    saved = as_agent.ok("mem_save", title="Prefers tea", content="Always tea.", user_id="crm:42")
    assert saved["observation"]["user_id"] == "crm:42"
    assert as_agent.ok("mem_stats", user_id=" crm:42 ")["observations"] == 1  # stripped, as everywhere
    body = as_agent.error("mem_stats", user_id="x" * 256)
    assert (body["code"], body["limit"], body["size"]) == ("max_length", 255, 256)
    assert as_agent.error("mem_stats", user_id="a\nb")["code"] == "control_character"
