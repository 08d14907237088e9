"""The Python client against the demo site's ASGI application served by uvicorn on a real port,
in a thread of the test process and on the test database (SQLite, or PostgreSQL with
``DATABASE_URL``), as the MCP tests serve it: the facade in the test process and the client
over HTTP read and write the same rows.

``mem`` is the facade in-process or a ``MemoryClient`` with an agent backend's token (granted
``act_for_any_user``, so it names any user_id, as the facade does); a test taking ``mem`` runs
once with each.
"""

from __future__ import annotations

import pytest

from ilab_memory import ILabMemory
from ilab_memory.client import MemoryClient
from tests.mcp.conftest import accounts, agent, alice, bob, django_db_setup, live_db, site  # noqa: F401

API_PREFIX = "/api/memory/"


@pytest.fixture
def api_url(site) -> str:  # noqa: F811
    return site + API_PREFIX


@pytest.fixture(params=["facade", "client"])
def mem(request, live_db, accounts, api_url):  # noqa: F811
    """The face under test, on a memory erased after the test."""
    if request.param == "facade":
        return ILabMemory()
    return MemoryClient(api_url, accounts["agent"].token)


@pytest.fixture
def client_for(api_url):
    """A ``MemoryClient`` with an account's token."""

    def make(account, **options) -> MemoryClient:
        return MemoryClient(api_url, account.token, **options)

    return make


@pytest.fixture
def facade(live_db):  # noqa: F811
    return ILabMemory()


@pytest.fixture
def remote(client_for, accounts, live_db):  # noqa: F811
    """The agent backend's client: names any user_id, as the facade does."""
    return client_for(accounts["agent"])
