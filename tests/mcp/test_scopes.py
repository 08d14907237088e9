"""Scopes over MCP: the server, never the agent, decides the scope every call acts in.

stdio: ``--scope`` of the embedded server (several servers on one SQLite file) and of
``manage.py ilab_memory_mcp``; HTTP: an account bound by ``ACCOUNT_SCOPES``, an endpoint mounted
with a scope, and the two in conflict; docs/mcp.md's worked example, read from the page. Real
subprocesses and a real uvicorn, driven by the SDK's client; the rows are checked where they
are stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from ilab_memory import ILabMemory
from ilab_memory.exceptions import ValidationError
from ilab_memory.mcp.http import MemoryMCPApp, with_mcp
from ilab_memory.models import Observation, Session
from tests.mcp import page
from tests.mcp.conftest import make_account, mcp_client, serving, snapshot
from tests.mcp.test_main import SCRIPT, agent_environment
from tests.mcp.test_stdio import site_environment

ROOT = Path(__file__).resolve().parents[2]
NOT_FOUND = {"detail": "No such observation.", "code": "observation_not_found"}
SHARED_MARK = " — shared space, read-only here"
HOSTILE_SCOPES = ["*", "Support", "../coding", "a b", " support", "support,coding", "x" * 65, "sup\nport"]


# ---------------------------------------------------------------------------------------- stdio


class Agent:
    """One stdio server's SDK client, with the calls a test makes."""

    def __init__(self, client):
        self.client = client

    async def call(self, tool: str, **arguments):
        return await self.client.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments) -> dict:
        result = await self.call(tool, **arguments)
        assert not result.is_error, result.content[0].text
        return result.structured_content

    async def error(self, tool: str, **arguments) -> dict:
        result = await self.call(tool, **arguments)
        assert result.is_error, f"{tool} succeeded: {result.content[0].text}"
        return result.structured_content

    async def titles(self, tool: str, **arguments) -> list[str]:
        data = await self.ok(tool, **arguments)
        return [item["title"] for item in data["results" if tool == "mem_search" else "memories"]]


def serve_together(argvs: dict[str, list[str]], script, tmp_path: Path, *, cwd: Path = ROOT, env=None):
    """Start a stdio server per argv and run ``script(agents)``; fails on non-protocol stdout."""
    junk: list[Exception] = []

    async def on_message(message):
        if isinstance(message, Exception):
            junk.append(message)

    async def main(err):
        async with contextlib.AsyncExitStack() as stack:
            agents = {}
            # One after another: each answers its handshake only once it has migrated the file.
            for name, argv in argvs.items():
                parameters = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd), env=env)
                client = Client(stdio_client(parameters, errlog=err), mode="legacy", message_handler=on_message)
                agents[name] = Agent(await stack.enter_async_context(client))
            return await script(agents)

    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        result = anyio.run(main, err)
    stderr = errlog.read_text()
    assert junk == [], f"non-protocol output on stdout: {junk}"
    assert "Traceback" not in stderr, stderr
    return result


def embedded(db: Path, scope: str | None = None, user: str = "alice") -> list[str]:
    argv = [sys.executable, "-m", "ilab_memory.mcp", "--db", str(db), "--user", user]
    return argv + (["--scope", scope] if scope is not None else [])


def line_of(text: str, title: str) -> str:
    """The line of a tool's text that lists the memory titled ``title``."""
    (line,) = [line for line in text.splitlines() if f"] {title} — " in line]
    return line


def rows(db: Path, table: str) -> set[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        column = "title" if table == "observation" else "status"
        return set(connection.execute(f"SELECT user_id, scope, {column} FROM ilab_memory_{table}"))


@pytest.mark.engine_independent
def test_two_scoped_stdio_servers_on_one_file_keep_sessions_and_memories_apart(tmp_path):
    db = tmp_path / "mem.db"
    servers = {"shared": embedded(db), "support": embedded(db, "support"), "coding": embedded(db, "coding")}

    async def script(agents):
        shared, support, coding = agents["shared"], agents["support"], agents["coding"]
        ali = (await shared.ok("mem_save", title="Prefers to be called Ali", content="Alice asked to be called Ali.",
                               type="preference"))["observation"]
        assert ali["scope"] == ""
        started = {name: await agents[name].ok("mem_session_start") for name in ("support", "coding")}
        assert started["support"]["is_new"] and started["coding"]["is_new"]
        assert started["support"]["session_id"] != started["coding"]["session_id"]
        assert [m["id"] for m in started["coding"]["memories"]] == [ali["id"]]  # the shared space, at start

        refund = (await support.ok("mem_save", title="Refund for order 1042 approved", content="Approved by phone.",
                                   type="decision", topic_key="open-item"))["observation"]
        saved = await coding.ok("mem_save", title="Builds with uv", content="The project builds with uv.",
                                type="config", topic_key="open-item")
        uv = saved["observation"]
        # The same topic_key in another scope is another memory, in that scope's own session.
        assert saved["action"] == "created"
        assert (refund["scope"], refund["session_id"]) == ("support", started["support"]["session_id"])
        assert (uv["scope"], uv["session_id"]) == ("coding", started["coding"]["session_id"])

        # Reads: the scope and the shared space, never another scope (by words or by meaning).
        for agent, scope in ((shared, ""), (support, "support"), (coding, "coding")):
            for query in ("refund order 1042", "builds uv", "called Ali"):
                results = (await agent.ok("mem_search", query=query))["results"]
                assert {r["scope"] for r in results} <= {scope, ""}, (scope, query)
        assert "Builds with uv" not in await support.titles("mem_search", query="uv")
        assert "Refund for order 1042 approved" not in await coding.titles("mem_search", query="refund")
        assert (await support.titles("mem_search", query="refund"))[0] == "Refund for order 1042 approved"
        assert set(await support.titles("mem_context")) == {"Refund for order 1042 approved",
                                                            "Prefers to be called Ali"}
        assert set(await coding.titles("mem_context")) == {"Builds with uv", "Prefers to be called Ali"}
        for agent in (support, coding):
            found = await agent.call("mem_search", query="Ali")
            assert (ali["id"], "") in [(r["id"], r["scope"]) for r in found.structured_content["results"]]
            assert SHARED_MARK in line_of(found.content[0].text, "Prefers to be called Ali")
        own = await coding.call("mem_search", query="uv")
        assert SHARED_MARK not in line_of(own.content[0].text, "Builds with uv")

        # By id: another scope's memory does not exist here, for reads and writes alike.
        for tool, arguments in [("mem_get_observation", {}), ("mem_timeline", {}), ("mem_update", {"title": "x"}),
                                ("mem_delete", {}), ("mem_delete", {"hard": True})]:
            assert await support.error(tool, observation_id=uv["id"], **arguments) == NOT_FOUND, tool
            assert await coding.error(tool, observation_id=refund["id"], **arguments) == NOT_FOUND, tool
        assert (await coding.ok("mem_get_observation", observation_id=uv["id"]))["title"] == "Builds with uv"
        # The shared space is read in a scope, and changed only without one.
        read = await support.call("mem_get_observation", observation_id=ali["id"])
        assert not read.is_error and SHARED_MARK in read.content[0].text
        assert await support.error("mem_update", observation_id=ali["id"], title="Ali") == NOT_FOUND
        assert (await shared.ok("mem_update", observation_id=ali["id"], content="Call her Ali."))["revision_count"] == 2

        stats = await support.call("mem_stats")
        assert (stats.structured_content["scope"], stats.structured_content["observations"]) == ("support,", 2)
        assert stats.structured_content["observations_by_scope"] == {"support": 1, "": 1}
        assert stats.content[0].text.startswith("Scope support and the shared space (live memories by scope: ")
        assert (await shared.ok("mem_stats"))["observations_by_scope"] == {"": 1}

        # The agent cannot name a scope: the argument does not exist.
        for tool, arguments in [("mem_save", {"title": "t", "content": "c"}), ("mem_search", {"query": "uv"}),
                                ("mem_stats", {})]:
            for scope in ("coding", "*", ""):
                body = await support.error(tool, scope=scope, **arguments)
                assert body["code"] == "invalid" and list(body["errors"]) == ["scope"], (tool, scope)

        # Sessions: ending one scope's leaves the other's open.
        ended = await support.ok("mem_session_end", summary="Refunded order 1042.")
        assert (ended["id"], ended["scope"], ended["status"]) == (started["support"]["session_id"], "support",
                                                                  "completed")
        again = await coding.ok("mem_session_start")
        assert (again["is_new"], again["session_id"]) == (False, started["coding"]["session_id"])
        fresh = await support.ok("mem_session_start")
        assert fresh["is_new"] is True
        assert [(s["summary"], s["scope"]) for s in fresh["sessions_context"]] == [("Refunded order 1042.", "support")]
        return ali, refund, uv

    serve_together(servers, script, tmp_path)
    assert rows(db, "observation") == {("alice", "", "Prefers to be called Ali"),
                                       ("alice", "support", "Refund for order 1042 approved"),
                                       ("alice", "coding", "Builds with uv")}
    assert rows(db, "session") == {("alice", "", "active"), ("alice", "support", "completed"),
                                   ("alice", "support", "active"), ("alice", "coding", "active")}


@pytest.mark.engine_independent
def test_a_scoped_stdio_server_serves_one_user_in_its_scope(tmp_path):
    db = tmp_path / "mem.db"

    async def script(agents):
        await agents["bob"].ok("mem_save", title="Bob in support", content="Bob's.")
        alice = agents["alice"]
        await alice.ok("mem_save", title="Alice in support", content="Alice's.")
        assert await alice.titles("mem_search", query="support") == ["Alice in support"]
        refused = await alice.error("mem_stats", user_id="bob")
        assert refused["code"] == "act_for_any_user_required"

    serve_together({"bob": embedded(db, "support", user="bob"), "alice": embedded(db, "support")}, script, tmp_path)
    assert rows(db, "observation") == {("bob", "support", "Bob in support"), ("alice", "support", "Alice in support")}


@pytest.mark.engine_independent
@pytest.mark.parametrize("scope", HOSTILE_SCOPES)
def test_an_unusable_scope_stops_the_stdio_server_before_it_touches_the_file(tmp_path, scope):
    done = subprocess.run(embedded(tmp_path / "mem.db", scope), cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("python -m ilab_memory.mcp: scope: ") and "Traceback" not in done.stderr
    assert done.stdout == "" and not (tmp_path / "mem.db").exists()


def test_manage_py_ilab_memory_mcp_serves_the_sites_database_in_its_scope(tmp_path, live_db):
    argv = [sys.executable, "manage.py", "ilab_memory_mcp", "--user", "site-user-7", "--scope", "support"]

    memory = ILabMemory()
    memory.mem_save("site-user-7", "Shared by the site", "For every agent.")
    memory.mem_save("site-user-7", "The coding agent's", "Not support's.", scope="coding")

    async def script(agents):
        saved = (await agents["support"].ok("mem_save", title="Runs on the site", content="In support."))["observation"]
        assert set(await agents["support"].titles("mem_context")) == {"Runs on the site", "Shared by the site"}
        return saved

    saved = serve_together({"support": argv}, script, tmp_path, env=site_environment())
    row = Observation.objects.get(id=saved["id"])
    assert (row.user_id, row.scope, row.session.scope) == ("site-user-7", "support", "support")


@pytest.mark.parametrize("scope", ["*", "Support", "x" * 65])
def test_manage_py_ilab_memory_mcp_refuses_an_unusable_scope(django_db_setup, scope):
    done = subprocess.run([sys.executable, "manage.py", "ilab_memory_mcp", "--user", "alice", "--scope", scope],
                          cwd=ROOT, env=site_environment(), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("CommandError: --scope ") and "Traceback" not in done.stderr, done.stderr


# ----------------------------------------------------------------------------------------- HTTP


def bound(bindings: dict[str, str], **settings):
    """``ACCOUNT_SCOPES`` for the live server, which reads it on every request."""
    return override_settings(ILAB_MEMORY={"ACCOUNT_SCOPES": bindings, **settings})


def post(url: str, token: str, body: dict) -> httpx2.Response:
    return httpx2.post(url, json=body, timeout=30, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})


SAVE = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mem_save", "arguments": {"title": "Sneaked in", "content": "c"}}}


def test_an_account_bound_by_account_scopes_writes_in_its_scope_and_reads_the_shared_space(mcp_url, alice, bob):
    memory = ILabMemory()
    ali = memory.mem_save(alice.user_id, "Prefers to be called Ali", "Alice asked.", type="preference").observation
    uv = memory.mem_save(alice.user_id, "Builds with uv", "The project builds with uv.", scope="coding").observation
    with bound({alice.user.username: "support"}):
        with mcp_client(mcp_url, alice.token) as mcp:
            started = mcp.ok("mem_session_start")
            assert [m["id"] for m in started["memories"]] == [ali.id]
            saved = mcp.ok("mem_save", title="Refund for order 1042 approved", content="By phone.")["observation"]
            assert (saved["scope"], saved["user_id"], saved["session_id"]) == (
                "support", alice.user_id, started["session_id"])
            assert uv.id not in [r["id"] for r in mcp.ok("mem_search", query="uv")["results"]]
            assert next(r["id"] for r in mcp.ok("mem_search", query="Ali")["results"]) == ali.id
            assert mcp.error("mem_get_observation", observation_id=uv.id) == NOT_FOUND
            assert mcp.error("mem_update", observation_id=ali.id, title="Ali") == NOT_FOUND
            stats = mcp.ok("mem_stats")
            assert (stats["scope"], stats["observations_by_scope"]) == ("support,", {"support": 1, "": 1})
            body = mcp.error("mem_save", title="t", content="c", scope="")  # no way out by argument
            assert body["code"] == "invalid" and list(body["errors"]) == ["scope"]
        with mcp_client(mcp_url, bob.token) as other:  # unbound: the shared space, his own
            note = other.ok("mem_save", title="Bob's note", content="Refund?")["observation"]
            assert note["scope"] == ""
            for query in ("refund", "Ali"):
                assert {r["id"] for r in other.ok("mem_search", query=query)["results"]} <= {note["id"]}
    assert Session.objects.get(id=started["session_id"]).scope == "support"
    assert set(Observation.objects.filter(user_id=alice.user_id).values_list("scope", "title")) == {
        ("", "Prefers to be called Ali"), ("coding", "Builds with uv"), ("support", "Refund for order 1042 approved")}
    assert list(Observation.objects.filter(user_id=bob.user_id).values_list("scope", "title")) == [("", "Bob's note")]
    with mcp_client(mcp_url, alice.token) as mcp:  # the binding is read on every request
        assert {r["scope"] for r in mcp.ok("mem_search", query="refund order")["results"]} <= {""}
        assert mcp.ok("mem_stats")["scope"] == ""


def test_a_bound_agent_backend_acts_for_the_user_it_names_in_its_scope(mcp_url, agent, alice):
    with bound({agent.user.username: "support"}), mcp_client(mcp_url, agent.token) as backend:
        saved = backend.ok("mem_save", title="Refund approved", content="Order 1042.", user_id=alice.user_id)
        assert (saved["observation"]["user_id"], saved["observation"]["scope"]) == (alice.user_id, "support")
        assert backend.ok("mem_stats", user_id=alice.user_id)["scope"] == "support,"
    with mcp_client(mcp_url, alice.token) as mcp:  # Alice's own unbound agent reads her shared space only
        assert mcp.ok("mem_search", query="refund")["results"] == []
        assert mcp.ok("mem_stats")["observations"] == 0
    assert not Observation.objects.filter(user_id=agent.user_id).exists()


@pytest.fixture(scope="module")
def scoped_site(django_db_setup):
    """The demo's Django under docs/mcp.md's own ``asgi.py`` line: MCP at /mcp/ and /mcp/coding/."""
    from project.asgi import django_application

    namespace = {"with_mcp": with_mcp, "django_application": django_application}
    exec(page.scoped_site_snippets()[1], namespace)
    with serving(namespace["application"]) as base:
        yield base


def test_an_endpoint_mounted_with_a_scope_serves_unbound_accounts_in_it(scoped_site, bob):
    with mcp_client(scoped_site + "/mcp/coding/", bob.token) as coding:
        coding_session = coding.ok("mem_session_start")["session_id"]
        uv = coding.ok("mem_save", title="Builds with uv", content="uv.")["observation"]
        assert (uv["scope"], uv["session_id"]) == ("coding", coding_session)
        assert [r["id"] for r in coding.ok("mem_search", query="uv")["results"]] == [uv["id"]]
    with mcp_client(scoped_site + "/mcp/", bob.token) as plain:  # the site's other mount, the shared space
        assert plain.ok("mem_session_start")["session_id"] != coding_session
        assert uv["id"] not in [r["id"] for r in plain.ok("mem_search", query="uv")["results"]]
        assert plain.error("mem_get_observation", observation_id=uv["id"]) == NOT_FOUND
    assert dict(Session.objects.filter(user_id=bob.user_id).values_list("scope", "status")) == {
        "coding": "active", "": "active"}


def test_an_account_bound_to_another_scope_is_refused_at_a_scoped_endpoint(scoped_site, alice):
    url = scoped_site + "/mcp/coding/"
    for binding in ("support", ""):
        with bound({alice.user.username: binding}):
            before = snapshot()
            response = post(url, alice.token, SAVE)
            # Refused before any tool runs, in the API's words for a bound account naming another scope.
            assert response.status_code == 403 and response.json()["code"] == "scope_bound"
            assert f"bound to the scope '{binding}'" in response.json()["detail"]
            assert snapshot() == before
            # At the site's plain endpoint the binding applies.
            with mcp_client(scoped_site + "/mcp/", alice.token) as mcp:
                assert mcp.ok("mem_stats")["scope"] == ("support," if binding else "")
    with bound({alice.user.username: "coding"}):  # the same scope: served
        with mcp_client(url, alice.token) as mcp:
            assert mcp.ok("mem_save", title="Agreed", content="c")["observation"]["scope"] == "coding"


@pytest.mark.parametrize("setting", [{"ADAPTER": "tests.api.test_adapter_api.GroupAdapter"},
                                     {"SCOPE_RESOLVER": "tests.api.test_scopes_api.scope_from_group"}],
                         ids=["adapter", "deprecated-resolver"])
def test_the_sites_adapter_binds_an_account(mcp_url, alice, bob, setting):
    group = Group.objects.create(name="agent:support")
    alice.user.groups.add(group)
    user_ids = ({alice.user_id, bob.user_id} if "SCOPE_RESOLVER" in setting
                else {alice.user.username, bob.user.username})  # GroupAdapter: the username
    try:
        with override_settings(ILAB_MEMORY=setting):
            with mcp_client(mcp_url, alice.token) as mcp:  # in the group: bound to its scope
                saved = mcp.ok("mem_save", title="Refund approved", content="By phone.")["observation"]
                assert saved["scope"] == "support"
                assert mcp.ok("mem_stats")["scope"] == "support,"
            with mcp_client(mcp_url, bob.token) as other:  # not in it: unbound, the shared space
                assert other.ok("mem_save", title="Bob's note", content="c")["observation"]["scope"] == ""
    finally:
        group.delete()
    assert {scope for _, scope in Observation.objects.values_list("user_id", "scope")} == {"support", ""}
    assert set(Observation.objects.values_list("user_id", flat=True)) == user_ids


async def lifespan_startup(app) -> list[dict]:
    """What ``app`` answers to an ASGI lifespan startup, then shutdown."""
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[dict] = []

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    return sent


@pytest.mark.parametrize("scope", HOSTILE_SCOPES)
def test_an_endpoint_mounted_with_an_unusable_scope_does_not_start(scope):
    with pytest.raises(ValidationError) as refused:
        asyncio.run(MemoryMCPApp(scope=scope).start())
    assert refused.value.field == "scope"
    (answer,) = asyncio.run(lifespan_startup(with_mcp(None, path="/mcp/x/", scope=scope)))
    assert answer["type"] == "lifespan.startup.failed" and answer["message"].startswith("scope: ")


def test_an_endpoints_scope_must_be_one_the_settings_allow():
    with override_settings(ILAB_MEMORY={"SCOPES": ["support"]}):
        with pytest.raises(ValidationError) as refused:
            asyncio.run(MemoryMCPApp(scope="coding").start())
        assert refused.value.code == "scope_not_allowed"
        app = with_mcp(with_mcp(None, path="/mcp/"), path="/mcp/support/", scope="support")
        assert asyncio.run(lifespan_startup(app)) == [{"type": "lifespan.startup.complete"},
                                                     {"type": "lifespan.shutdown.complete"}]


# ------------------------------------------------------------------------------- the page's example


@pytest.mark.engine_independent
def test_the_pages_worked_example_on_one_memory_file(tmp_path):
    memory_folder = tmp_path / "memory"
    memory_folder.mkdir()
    configurations = page.scoped_stdio_configurations(SCRIPT.parent, memory_folder)
    configurations["shared"] = page.stdio_configurations(SCRIPT.parent, memory_folder)["Cursor"]
    for argv in configurations.values():
        assert Path(argv[0]) == SCRIPT, argv

    async def script(agents):
        await agents["shared"].ok("mem_save", title="Prefers to be called Ali", content="Asked to.")
        await agents["coding"].ok("mem_save", title="Builds with uv", content="uv.")
        await agents["support"].ok("mem_save", title="Refund for order 1042 approved", content="By phone.")
        return {name: set(await agents[name].titles("mem_context")) for name in ("coding", "support")}

    seen = serve_together(configurations, script, tmp_path, cwd=tmp_path, env=agent_environment())
    assert seen == {"coding": {"Builds with uv", "Prefers to be called Ali"},
                    "support": {"Refund for order 1042 approved", "Prefers to be called Ali"}}


def test_the_pages_site_example(scoped_site, alice):
    settings_line, _ = page.scoped_site_snippets()
    namespace: dict = {}
    exec(settings_line, namespace)
    support_bot = make_account("support-bot", act_for_any_user=True)
    try:
        with override_settings(ILAB_MEMORY=namespace["ILAB_MEMORY"]):
            assert post(scoped_site + "/mcp/coding/", support_bot.token, SAVE).json()["code"] == "scope_bound"
            with mcp_client(scoped_site + "/mcp/", support_bot.token) as bot:
                saved = bot.ok("mem_save", title="Refund for order 1042 approved", content="By phone.",
                               user_id=alice.user_id)["observation"]
                assert saved["scope"] == "support"
            url, headers = page.scoped_http_configuration(alice.token)
            assert url.startswith(page.SITE)
            with mcp_client(url.replace(page.SITE, scoped_site), headers=headers) as assistant:
                assert assistant.ok("mem_save", title="Builds with uv",
                                    content="uv.")["observation"]["scope"] == "coding"
                found = assistant.ok("mem_search", query="refund")["results"]
                assert {r["scope"] for r in found} <= {"coding"}  # the bot's memory is not among them
    finally:
        User.objects.filter(pk=support_bot.user.pk).delete()
