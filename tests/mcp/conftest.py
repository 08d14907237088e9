"""The MCP face under real parts: ``project.asgi:application`` served by uvicorn on a real port
(in a thread of the test process, on the test database), driven by the SDK's own client.

Three principals, as in tests/api: two plain users and an agent backend that may act for any
user_id. Tests run in autocommit (``live_db``, through the account fixtures), so what they and
the server write is committed and visible to both; each test's memory rows are erased after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connections


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Account:
    user: Any
    token: str

    @property
    def user_id(self) -> str:
        return str(self.user.pk)  # the default USER_ID_RESOLVER


def make_account(username: str, *, act_for_any_user: bool = False) -> Account:
    from rest_framework.authtoken.models import Token

    user = User.objects.create_user(username)
    if act_for_any_user:
        user.user_permissions.add(
            Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
        )
    return Account(user=user, token=Token.objects.create(user=user).key)


def forget_everyone() -> None:
    """Erase every user's memory through the facade (rows, history and search index alike)."""
    from ilab_memory import ILabMemory
    from ilab_memory.models import Observation, Session

    memory = ILabMemory()
    user_ids = set(Session.objects.values_list("user_id", flat=True))
    user_ids |= set(Observation.objects.values_list("user_id", flat=True))
    for user_id in user_ids:
        memory.mem_forget_user(user_id)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, also when no test of this run asks for ``db`` (pytest-django sets up
    only the databases its collected tests request, and these reach it through ``live_db``)."""
    from django.test.utils import setup_databases, teardown_databases

    connection = connections["default"]
    if connection.settings_dict["NAME"] == connection.creation._get_test_db_name():
        yield  # already set up for the run
        return
    with django_db_blocker.unblock():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    with django_db_blocker.unblock():
        teardown_databases(config, verbosity=0)


@pytest.fixture(scope="module")
def accounts(django_db_setup, django_db_blocker):
    """The three principals, committed once per module (the server's threads must see them)."""
    with django_db_blocker.unblock():
        made = {
            "alice": make_account("mcp-alice"),
            "bob": make_account("mcp-bob"),
            "agent": make_account("mcp-agent-backend", act_for_any_user=True),
        }
        yield made
        forget_everyone()
        User.objects.filter(pk__in=[account.user.pk for account in made.values()]).delete()


@pytest.fixture
def live_db(accounts, django_db_blocker):
    """Database access in autocommit, as the server's threads have it; the memory is erased after.

    Cheaper than ``transactional_db``, whose flush of every table costs seconds per test on
    PostgreSQL, and it keeps the module's accounts.
    """
    with django_db_blocker.unblock():
        try:
            yield
        finally:
            forget_everyone()


@pytest.fixture
def alice(accounts, live_db) -> Account:
    return accounts["alice"]


@pytest.fixture
def bob(accounts, live_db) -> Account:
    return accounts["bob"]


@pytest.fixture
def agent(accounts, live_db) -> Account:
    return accounts["agent"]


@contextlib.contextmanager
def serving(app, *, lifespan: str = "on"):
    """``app`` under uvicorn on 127.0.0.1 in a thread; yields the base URL."""
    import uvicorn

    # Each call closes its connection afterwards (close_old_connections with CONN_MAX_AGE 0), so no
    # worker thread keeps one open when the test database is flushed or dropped.
    settings_dict = connections["default"].settings_dict
    saved = settings_dict.get("CONN_MAX_AGE", 0)
    settings_dict["CONN_MAX_AGE"] = 0
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, name="uvicorn-mcp", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        settings_dict["CONN_MAX_AGE"] = saved


@pytest.fixture(scope="module")
def site(django_db_setup):
    """Base URL of the demo site's ASGI application (Django + MCP at /mcp/) on a real port."""
    from project.asgi import application

    with serving(application) as base:
        yield base


@pytest.fixture
def mcp_url(site) -> str:
    return site + "/mcp/"


class McpClient:
    """The SDK's ``Client``, driven from synchronous test code through an anyio portal."""

    def __init__(self, portal, client):
        self.portal = portal
        self.client = client

    def call(self, tool: str, **arguments):
        return self.portal.call(self.client.call_tool, tool, arguments)

    def ok(self, tool: str, **arguments) -> dict:
        """The structured result of a call that must succeed (the SDK validated it against the output schema)."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content[0].text
        assert result.content[0].type == "text" and result.content[0].text
        return result.structured_content

    def error(self, tool: str, **arguments) -> dict:
        """The API-shaped error body of a call that must fail as a tool error."""
        result = self.call(tool, **arguments)
        assert result.is_error, f"{tool} succeeded: {result.content[0].text}"
        body = result.structured_content
        assert result.content[0].text.startswith(f"Error ({body['code']}): {body['detail']}")
        return body

    def list_tools(self):
        return self.portal.call(self.client.list_tools)

    @property
    def instructions(self) -> str | None:
        return self.client.instructions


@contextlib.contextmanager
def mcp_client(url: str, token: str | None = None, *, mode: str = "legacy",
               headers: dict[str, str] | None = None):
    """A connected SDK client over Streamable HTTP; ``token`` is sent as ``Authorization: Bearer``
    (or ``headers`` as given)."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def connected():
        sent = headers if headers is not None else {"Authorization": f"Bearer {token}"} if token else None
        async with create_mcp_http_client(headers=sent) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                yield client

    with start_blocking_portal() as portal:
        connection = portal.wrap_async_context_manager(connected())
        client = connection.__enter__()
        try:
            yield McpClient(portal, client)
        finally:
            # Closed as if the body had succeeded, so a failing assertion is reported as itself
            # rather than wrapped in the client's task-group exception groups.
            connection.__exit__(None, None, None)


@pytest.fixture
def as_alice(mcp_url, alice):
    with mcp_client(mcp_url, alice.token) as client:
        yield client


@pytest.fixture
def as_bob(mcp_url, bob):
    with mcp_client(mcp_url, bob.token) as client:
        yield client


@pytest.fixture
def as_agent(mcp_url, agent):
    with mcp_client(mcp_url, agent.token) as client:
        yield client


def everything_stored() -> str:
    """Every row the memory holds, as one JSON text (to look for what must not be there)."""
    from ilab_memory.models import Observation, ObservationRevision, Session

    rows = [list(model.objects.values()) for model in (Session, Observation, ObservationRevision)]
    return json.dumps(rows, default=str, ensure_ascii=False)


def snapshot() -> tuple:
    """A fingerprint of the memory's rows: equal before and after means nothing was written."""
    from ilab_memory.models import Observation, ObservationRevision, Session

    return (
        sorted(map(repr, Session.objects.values_list())),
        sorted(map(repr, Observation.objects.values_list())),
        sorted(map(repr, ObservationRevision.objects.values_list())),
    )


def assert_matches_snapshot(served, path: Path, what: str) -> None:
    """``served`` equals the JSON in ``path``; with ILAB_MEMORY_UPDATE_MCP_SNAPSHOT set, ``path``
    is rewritten first, and its diff is reviewed like code (agents read what it holds)."""
    if os.environ.get("ILAB_MEMORY_UPDATE_MCP_SNAPSHOT"):
        path.write_text(json.dumps(served, indent=2, ensure_ascii=False) + "\n")
    assert served == json.loads(path.read_text()), (
        f"{what} changed. If that is on purpose, regenerate {path.name} with "
        "ILAB_MEMORY_UPDATE_MCP_SNAPSHOT=1 and review its diff."
    )
