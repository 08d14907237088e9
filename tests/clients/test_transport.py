"""client/transport.py: retries and timeouts over real sockets: a read is sent again after a dropped
connection, a write never; a silent server times out; nothing listening is ServiceUnavailable."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest

from ilab_memory.client import MemoryClient, ServiceUnavailable
from tests.mcp.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


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
