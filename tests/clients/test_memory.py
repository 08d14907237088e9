"""client/memory.py, what only the remote face has: the same values as the facade, accounts and
their limits, paging, scopes, privacy, and a plain Python process that never imports Django
(its values decoded: test_decode.py; the API's errors raised as the facade's: test_errors.py;
retries and timeouts over real sockets: test_transport.py)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.test import override_settings

from ilab_memory import types
from ilab_memory.client import AccessDenied
from ilab_memory.exceptions import ObservationNotFound, ValidationError
from tests.mcp.conftest import everything_stored

ROOT = Path(__file__).resolve().parents[2]



# -- the same values --------------------------------------------------------------------------


def test_what_the_client_returns_equals_what_the_facade_returns(facade, remote):
    saved = remote.mem_save("alice", "Deploy", "We deploy on Fridays.", type="decision", topic_key="Deploy day",
                            metadata={"team": ["ops", 2]})
    remote.mem_update("alice", saved.observation.id, title="Deploy (revised)")
    started = remote.mem_session_start("alice")
    observation_id = saved.observation.id
    pairs = [
        (remote.mem_get_observation("alice", observation_id), facade.mem_get_observation("alice", observation_id)),
        (remote.mem_revisions("alice", observation_id), facade.mem_revisions("alice", observation_id)),
        (remote.mem_timeline("alice", observation_id), facade.mem_timeline("alice", observation_id)),
        (remote.mem_search("alice", "deploy"), facade.mem_search("alice", "deploy")),
        (remote.mem_context("alice"), facade.mem_context("alice")),
        (remote.mem_stats("alice"), facade.mem_stats("alice")),
        (remote.mem_get_session("alice", started.session_id), facade.mem_get_session("alice", started.session_id)),
        (remote.mem_list_sessions("alice"), facade.mem_list_sessions("alice")),
        (remote.mem_list_observations("alice", topic_key="DEPLOY DAY"),
         facade.mem_list_observations("alice", topic_key="DEPLOY DAY")),
    ]
    for got, expected in pairs:
        assert type(got) is type(expected)
        assert _plain(got) == _plain(expected)
    (hit,) = remote.mem_search("alice", "deploy")
    assert isinstance(hit.score, types.SearchScore) and hit.score.breakdown["engine"]
    (memory,) = remote.mem_context("alice")
    assert isinstance(memory.score, types.ContextScore)


def _plain(value):
    """A value with its scores as (kind, value) pairs: a search's recency moves between two calls."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, types._Score):
        return type(value).__name__
    if dataclasses.is_dataclass(value):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return value


# -- accounts: whose memory -------------------------------------------------------------------


def test_whoami_tells_a_token_its_user_id_scope_and_grant(client_for, alice, agent):
    from ilab_memory.client import Identity

    assert client_for(alice).whoami() == Identity(user_id=alice.user_id, scope=None, may_act_for_any_user=False)
    assert client_for(agent).whoami() == Identity(user_id=agent.user_id, scope=None, may_act_for_any_user=True)


def test_a_plain_account_works_without_knowing_its_user_id(client_for, alice):
    memory = client_for(alice)
    started = memory.mem_session_start()
    saved = memory.mem_save(title="Tea", content="Green, no sugar.", type="preference")
    assert saved.observation.user_id == alice.user_id
    assert [hit.title for hit in memory.mem_search(query="tea")] == ["Tea"]
    assert [m.title for m in memory.mem_context()] == ["Tea"]
    assert memory.mem_get_observation(observation_id=saved.observation.id).title == "Tea"
    memory.mem_update(observation_id=saved.observation.id, content="Black now.")
    assert len(memory.mem_revisions(observation_id=saved.observation.id)) == 1
    assert memory.mem_timeline(observation_id=saved.observation.id).anchor.id == saved.observation.id
    assert memory.mem_stats().observations == 1
    assert memory.mem_session_summary(summary="Tea talk.").summary == "Tea talk."
    assert memory.mem_get_session(session_id=started.session_id).id == started.session_id
    assert memory.mem_session_end().status == "completed"
    assert [s.id for s in memory.mem_list_sessions()] == [started.session_id]
    assert len(memory.mem_list_observations()) == 1
    document = memory.mem_export()
    assert document["user_id"] == alice.user_id
    assert memory.mem_import(data=document)["observations_skipped"] == 1
    memory.mem_delete(observation_id=saved.observation.id)
    assert memory.mem_forget_user()["sessions"] == 1  # confirmed with the id whoami() tells


def test_a_left_out_argument_is_the_validation_error_naming_it(client_for, alice):
    with pytest.raises(ValidationError) as raised:
        client_for(alice).mem_save(title="Tea")
    assert raised.value.field == "content"


def test_an_account_that_may_act_for_anyone_must_name_the_user_as_with_the_facade(client_for, agent):
    memory = client_for(agent)
    with pytest.raises(ValidationError) as raised:
        memory.mem_save(title="Tea", content="Green.")
    assert (raised.value.field, raised.value.code) == ("user_id", "required")
    assert memory.mem_stats(agent.user_id).observations == 0  # nothing reached its own memory


def test_a_plain_account_naming_another_user_is_told_whose_token_it_is(client_for, alice):
    with pytest.raises(AccessDenied) as raised:
        client_for(alice).mem_context("alice")  # the username, not the user id
    assert raised.value.code == "act_for_any_user_required"
    assert raised.value.detail == (f"This token belongs to user {alice.user_id}; omit user_id or use an account "
                                   "allowed to act for any user.")


def test_a_backend_may_name_its_user_once_for_every_call(client_for, agent):
    memory = client_for(agent, user_id="dana")
    memory.mem_save(title="Tea", content="Green.")
    assert memory.mem_stats().user_id == "dana"
    assert client_for(agent).mem_stats("dana").observations == 1
    assert memory.mem_stats("erin").user_id == "erin"  # a call's own user_id wins



def test_a_plain_account_reaches_its_own_memory_and_no_one_elses(client_for, alice, bob, remote):
    as_alice, as_bob = client_for(alice), client_for(bob)
    mine = as_alice.mem_save(alice.user_id, "Alice's tea", "Alice drinks green tea.").observation
    theirs = as_bob.mem_save(bob.user_id, "Bob's tea", "Bob drinks green tea.").observation
    assert [hit.id for hit in as_alice.mem_search(alice.user_id, "green tea")] == [mine.id]
    assert [hit.id for hit in as_alice.mem_context(alice.user_id)] == [mine.id]
    assert as_alice.mem_export(alice.user_id)["observations"][0]["id"] == mine.id
    assert len(as_alice.mem_export(alice.user_id)["observations"]) == 1
    for call in (lambda: as_alice.mem_get_observation(alice.user_id, theirs.id),
                 lambda: as_alice.mem_update(alice.user_id, theirs.id, title="mine now"),
                 lambda: as_alice.mem_delete(alice.user_id, theirs.id, hard=True)):
        with pytest.raises(ObservationNotFound):
            call()
    with pytest.raises(AccessDenied) as raised:
        as_alice.mem_search(bob.user_id, "green tea")
    assert raised.value.code == "act_for_any_user_required"
    assert remote.mem_get_observation(bob.user_id, theirs.id).title == "Bob's tea"  # untouched


def test_an_account_bound_to_a_scope_acts_in_it_and_may_name_no_other(client_for, alice, facade):
    with override_settings(ILAB_MEMORY={"ACCOUNT_SCOPES": {alice.user.username: "support"}}):
        as_alice = client_for(alice)
        saved = as_alice.mem_save(alice.user_id, "Refund", "Refund sent on Monday.")
        assert saved.observation.scope == "support"
        assert as_alice.mem_session_end(alice.user_id).scope == "support"
        with pytest.raises(AccessDenied) as raised:
            as_alice.mem_search(alice.user_id, "refund", scope="coding")
        assert raised.value.code == "scope_bound"
    assert facade.mem_get_observation(alice.user_id, saved.observation.id, scope="support").title == "Refund"


# -- paging and scopes, both faces ------------------------------------------------------------


def test_a_list_longer_than_the_apis_default_page_comes_whole(mem):
    for n in range(23):
        mem.mem_save("alice", f"note {n}", f"note number {n}")
        mem.mem_session_end("alice")
    assert len(mem.mem_list_sessions("alice", limit=23)) == 23
    assert len(mem.mem_list_observations("alice", limit=22)) == 22
    assert [s.status for s in mem.mem_list_sessions("alice", limit=100)] == ["completed"] * 23


def test_list_observations_filters_and_is_bounded(mem):
    mem.mem_save("alice", "Tea", "Green tea.", type="preference", topic_key="Drink of Choice")
    gone = mem.mem_save("alice", "Coffee", "Black coffee.", type="preference").observation.id
    mem.mem_save("alice", "Deploy", "Fridays.", type="decision")
    mem.mem_save("bob", "Bob's tea", "Bob drinks tea.", type="preference")
    mem.mem_delete("alice", gone)
    assert [o.title for o in mem.mem_list_observations("alice")] == ["Deploy", "Tea"]
    assert [o.title for o in mem.mem_list_observations("alice", type="preference")] == ["Tea"]
    assert [o.topic_key for o in mem.mem_list_observations("alice", topic_key="  drink OF choice ")] == [
        "drink-of-choice"]
    assert [o.title for o in mem.mem_list_observations("alice", limit=1)] == ["Deploy"]
    for kwargs, field in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "5"}, "limit"),
                          ({"type": "Not A Slug"}, "type"), ({"topic_key": 5}, "topic_key")):
        with pytest.raises(ValidationError) as raised:
            mem.mem_list_observations("alice", **kwargs)
        assert raised.value.field == field, kwargs


def test_list_observations_is_one_query(facade):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for n in range(5):
        facade.mem_save("alice", f"note {n}", f"note number {n}", topic_key=f"note {n}")
    with CaptureQueriesContext(connection) as captured:
        listed = facade.mem_list_observations("alice", type="manual", topic_key="note 3", scope="*")
    assert [o.title for o in listed] == ["note 3"]
    assert len(captured) == 1


def test_scopes_read_as_in_the_facade(mem):
    shared = mem.mem_save("alice", "Name", "Ana prefers Ani.").observation.id
    support = mem.mem_save("alice", "Refund", "Refund for Ani sent.", scope="support").observation.id
    coding = mem.mem_save("alice", "Branch", "Ani works on refund-fix.", scope="coding").observation.id

    def found(scope):
        return sorted(hit.id for hit in mem.mem_list_observations("alice", scope=scope))

    assert found("") == [shared]
    assert found("support") == sorted([shared, support])
    assert found(["support"]) == [support]  # a list reads exactly the scopes it names
    assert found(["support", "coding"]) == sorted([support, coding])
    assert found("*") == sorted([shared, support, coding])
    assert {hit.id for hit in mem.mem_search("alice", "refund", scope="coding")} == {coding}
    with pytest.raises(ValidationError) as raised:
        mem.mem_save("alice", "x", "y", scope="*")
    assert (raised.value.field, raised.value.code) == ("scope", "one_scope_required")
    with pytest.raises(ValidationError) as raised:
        found([])
    assert (raised.value.field, raised.value.code) == ("scope", "empty")
    with pytest.raises(ObservationNotFound):
        mem.mem_delete("alice", support, scope="coding")
    assert mem.mem_delete("alice", support, scope="support") == types.DeleteResult(id=support, hard=False)


# -- privacy ----------------------------------------------------------------------------------


def test_private_text_sent_through_the_client_is_never_stored(remote, facade):
    remote.mem_save("alice", "Login", "user admin, password <private>hunter2</private>",
                    metadata={"note": "<private>hunter2</private>"})
    remote.mem_session_summary("alice", "Logged in with <private>hunter2</private>.")
    assert "hunter2" not in everything_stored()
    assert "hunter2" not in str(remote.mem_export("alice"))
    found = remote.mem_search("alice", "hunter2")  # at most a weak neighbour by meaning, never by the word
    assert all(r.score.breakdown["relevance"] is None for r in found) and "hunter2" not in str(found)


# -- a plain Python service -------------------------------------------------------------------


def test_a_plain_python_process_uses_the_client_without_django(api_url, alice):
    script = textwrap.dedent(f"""
        import sys
        from ilab_memory.client import MemoryClient

        memory = MemoryClient({api_url!r}, {alice.token!r})
        saved = memory.mem_save({alice.user_id!r}, "Tea", "Alice drinks green tea.")
        hits = memory.mem_search({alice.user_id!r}, "green tea")
        print(saved.action, [hit.title for hit in hits], type(hits[0].score).__name__)
        print("django imported:", any(name == "django" or name.startswith("django.") for name in sys.modules))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-c", script], check=False, cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["created ['Tea'] SearchScore", "django imported: False"]
