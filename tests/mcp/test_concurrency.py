"""Eight MCP clients of one user starting sessions at the same moment: one active session, one id."""

import anyio
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ilab_memory.models import Session

CLIENTS = 8


async def start_all(url: str, token: str) -> list[dict]:
    """Connect every client first, then release all their mem_session_start calls at once."""
    go = anyio.Event()
    connected = 0
    results: list[dict] = []

    async def one(mode: str) -> None:
        nonlocal connected
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                connected += 1
                await go.wait()
                result = await client.call_tool("mem_session_start", {})
                assert not result.is_error, result.content[0].text
                results.append(result.structured_content)

    async with anyio.create_task_group() as group:
        for i in range(CLIENTS):
            group.start_soon(one, "legacy" if i % 2 else "auto")  # both protocol eras at once
        with anyio.fail_after(60):
            while connected < CLIENTS:
                await anyio.sleep(0.01)
        go.set()
    return results


def test_eight_clients_of_one_user_starting_at_once_share_one_session(mcp_url, alice):
    with start_blocking_portal() as portal:
        results = portal.call(start_all, mcp_url, alice.token)
    assert len(results) == CLIENTS
    assert len({r["session_id"] for r in results}) == 1
    assert sorted(r["is_new"] for r in results) == [False] * (CLIENTS - 1) + [True]
    active = Session.objects.filter(user_id=alice.user_id, status="active")
    assert [str(s.id) for s in active] == [results[0]["session_id"]]
