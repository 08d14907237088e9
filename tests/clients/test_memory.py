"""What only the remote face has: its values decoded from the API, the API's errors raised as the
facade's exceptions, accounts and their limits, paging, scopes, retries and timeouts over real
sockets, and a plain Python process that never imports Django."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from django.test import override_settings

from ilab_memory import ILabMemory, types
from ilab_memory.client import AccessDenied, ApiError, MemoryClient, NotAuthenticated, ServiceUnavailable
from ilab_memory.client.decode import decode
from ilab_memory.encoding import encode
from ilab_memory.exceptions import NoActiveSession, ObservationNotFound, SessionNotFound, ValidationError
from tests.mcp.conftest import everything_stored, free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def facade(live_db):
    return ILabMemory()


@pytest.fixture
def remote(client_for, accounts, live_db):
    """The agent backend's client: names any user_id, as the facade does."""
    return client_for(accounts["agent"])


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


@pytest.mark.parametrize("cls", [types.SaveResult, types.SessionStartResponse, types.Timeline, types.MemoryStats])
def test_every_value_decodes_back_from_its_json(cls, facade, remote):
    saved = facade.mem_save("alice", "Tea", "Green tea, no sugar.", type="preference")
    facade.mem_save("alice", "Tea time", "Tea at five.")
    value = {
        types.SaveResult: saved,
        types.SessionStartResponse: facade.mem_session_start("alice"),
        types.Timeline: facade.mem_timeline("alice", saved.observation.id),
        types.MemoryStats: facade.mem_stats("alice"),
    }[cls]
    assert decode(cls, encode(value)) == value


# -- the facade's exceptions ------------------------------------------------------------------


def test_bad_input_is_the_facades_validation_error_with_field_limit_and_size(remote):
    with pytest.raises(ValidationError) as raised:
        remote.mem_save("alice", "t" * 301, "c")
    error = raised.value
    assert (error.field, error.code, error.limit, error.size) == ("title", "max_length", 300, 301)
    assert str(error) == "title: is 301 characters long; the limit is 300 characters."
    assert error.errors == {"title": ["is 301 characters long; the limit is 300 characters."]}


def test_every_validation_error_has_errors_whoever_raises_it(mem, remote):
    """The API's, the client's own checks' and the facade's alike: ``errors`` maps the field to
    its messages."""
    for call in (lambda: mem.mem_save("alice", "t" * 301, "c"), lambda: mem.mem_search("alice", "x", limit="ten"),
                 lambda: remote.mem_update("alice", "00000000-0000-4000-8000-000000000000", colour="red")):
        with pytest.raises(ValidationError) as raised:
            call()
        error = raised.value
        assert error.errors == {error.field: [error.message]}


def test_a_query_too_long_for_a_url_is_refused_naming_it_and_never_sent(remote):
    """Servers refuse a long URL with a page that names no field; the client refuses it first,
    naming the query. A query the API's own limit refuses is sent, and the API names it too."""
    from gunicorn.config import LimitRequestLine

    from ilab_memory.client import transport

    # The limit fits the smallest common server limit: gunicorn's request line, with method and protocol.
    assert len("GET ") + transport.MAX_URL_BYTES + len(" HTTP/1.1") <= LimitRequestLine.default
    with pytest.raises(ValidationError) as raised:
        remote.mem_search("alice", "ask " * (transport.MAX_URL_BYTES // 4))
    error = raised.value
    assert (error.field, error.code, error.limit) == ("query", "max_length", transport.MAX_URL_BYTES)
    assert error.size > transport.MAX_URL_BYTES
    with pytest.raises(ValidationError) as raised:
        remote.mem_search("alice", "ask " * 200)
    assert (raised.value.field, raised.value.code, raised.value.limit) == ("query", "max_length", 500)
    # 400 characters of a 3-byte script fit (3,600 bytes encoded): the API answers, not the client.
    assert remote.mem_search("alice", "中" * 400) == []


def test_missing_rows_are_the_facades_lookup_errors(remote):
    with pytest.raises(NoActiveSession) as raised:
        remote.mem_session_end("alice")
    assert isinstance(raised.value, LookupError)
    with pytest.raises(SessionNotFound):
        remote.mem_get_session("alice", "00000000-0000-4000-8000-000000000000")
    with pytest.raises(ObservationNotFound):
        remote.mem_get_observation("alice", "not-a-uuid/../../stats")  # never reaches another path


def test_a_bad_token_is_not_authenticated(client_for, api_url, live_db):
    client = MemoryClient(api_url, "0" * 40)
    with pytest.raises(NotAuthenticated) as raised:
        client.mem_stats("alice")
    assert isinstance(raised.value, PermissionError) and raised.value.status == 401


def test_a_path_that_is_not_the_api_is_an_api_error(site, accounts, live_db):
    client = MemoryClient(site + "/api/elsewhere/", accounts["agent"].token)
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    assert raised.value.status == 404
    client = MemoryClient(site + "/admin/login/", accounts["agent"].token)  # a page, not the API's JSON
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    assert (raised.value.status, raised.value.code) == (200, "not_json")


def test_a_base_url_at_the_sites_root_says_it_must_be_the_apis_mount_and_names_the_url(site, accounts, live_db):
    client = MemoryClient(site, accounts["agent"].token)  # the site, not where it mounts the API
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    message = str(raised.value)
    assert raised.value.status == 404
    assert f"No memory API at {site}/stats/?user_id=alice." in message
    assert "base_url must be the API's mount" in message and "/api/memory/" in message
    assert f"it is {site}/." in message


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


# -- retries and timeouts, over real sockets --------------------------------------------------


@contextlib.contextmanager
def listener(handle):
    """A TCP server on a free port calling ``handle(connection, n)`` for its n-th connection."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)
            threading.Thread(target=handle, args=(connection, len(accepted)), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/api/memory/", accepted
    finally:
        server.close()
        for connection in accepted:
            connection.close()


def hang_up(connection, n):
    connection.recv(65536)
    connection.close()


def test_a_read_is_sent_again_after_a_dropped_connection_a_write_never(accounts, live_db):
    with listener(hang_up) as (url, accepted):
        client = MemoryClient(url, accounts["agent"].token, retries=2, backoff=0)
        with pytest.raises(ServiceUnavailable) as raised:
            client.mem_stats("alice")
        assert isinstance(raised.value, ConnectionError)
        assert len(accepted) == 3
        with pytest.raises(ServiceUnavailable):
            client.mem_save("alice", "t", "c")
        assert len(accepted) == 4
        for call in (lambda: client.mem_update("alice", "00000000-0000-4000-8000-000000000000", title="t"),
                     lambda: client.mem_delete("alice", "00000000-0000-4000-8000-000000000000")):
            with pytest.raises(ServiceUnavailable):
                call()
        assert len(accepted) == 6


def test_a_read_that_fails_once_succeeds_on_its_retry(site, accounts, live_db, facade):
    facade.mem_save("alice", "Tea", "Green tea.")
    upstream = site.removeprefix("http://").split(":")

    def first_hangs_up_then_forward(connection, n):
        if n == 1:
            return hang_up(connection, n)
        with socket.create_connection((upstream[0], int(upstream[1]))) as onward:
            request = connection.recv(65536)
            onward.sendall(request)
            while chunk := onward.recv(65536):
                connection.sendall(chunk)
        connection.close()

    with listener(first_hangs_up_then_forward) as (url, accepted):
        client = MemoryClient(url, accounts["agent"].token, retries=1, backoff=0)
        assert [hit.title for hit in client.mem_search("alice", "tea")] == ["Tea"]
        assert len(accepted) == 2


def test_a_server_that_does_not_answer_times_out(accounts, live_db):
    release = threading.Event()

    def never_answer(connection, n):
        release.wait(30)

    with listener(never_answer) as (url, accepted):
        client = MemoryClient(url, accounts["agent"].token, timeout=0.2, retries=1, backoff=0)
        try:
            with pytest.raises(ServiceUnavailable):
                client.mem_context("alice")
            assert len(accepted) == 2
        finally:
            release.set()


def test_nothing_listening_is_service_unavailable(accounts):
    client = MemoryClient(f"http://127.0.0.1:{free_port()}/api/memory/", "t", retries=0)
    with pytest.raises(ServiceUnavailable):
        client.mem_stats("alice")


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
