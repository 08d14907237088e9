"""The Python client's overhead: ``MemoryClient`` beside the same requests over raw ``urllib``.

The demo site (``project.asgi:application``, DEBUG off, token authentication, words-only search
so the model does not dominate) is served by uvicorn in a process of its own on a free port,
over the phase's new database. One account with ``MEMORIES`` memories and a token; each call is
timed both ways in the same turns (``perf_timing.measure``), so a slow moment hits both alike:

- ``MemoryClient.mem_save`` beside a POST of the same JSON body with the same headers;
- ``MemoryClient.mem_search`` (three words each in about 1 % of the memories: a full page of
  results to decode) beside a GET of the same URL.

The raw way builds a new ``urllib.request.Request`` per call and decodes the answer's JSON; the
client also checks its arguments and decodes into the frozen types of ``ilab_memory.types``.
Both go through ``urllib.request.urlopen``, which opens a new connection per request (it sends
``Connection: close``), so each way pays the same connection set-up.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from .perf_data import analyze, queries, write_history
from .perf_timing import line, measure, step

MEMORIES = 1_000
API = "/api/memory/"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(port: int) -> subprocess.Popen:
    """uvicorn serving the demo site on ``port``, in a process of its own (the environment
    ``perf_env.site`` set names the database); returns once it accepts connections."""
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", "127.0.0.1",
                               "--port", str(port), "--log-level", "warning", "--no-access-log"])
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.05)


def account() -> tuple[str, str]:
    """(user_id, token) of an account with ``MEMORIES`` memories, committed for the server to see."""
    from django.contrib.auth import get_user_model
    from django.db import connections
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user(username="bench-client")
    user_id = str(user.pk)
    write_history(user_id, MEMORIES)
    analyze()
    token = Token.objects.create(user=user).key
    connections.close_all()  # nothing of this process holds the database while the server runs
    return user_id, token


class Raw:
    """The client's requests written by hand: the same URL, headers and JSON body."""

    def __init__(self, base_url: str, token: str):
        self.base_url = base_url
        self.headers = {"Authorization": f"Token {token}", "Accept": "application/json"}

    def __call__(self, method: str, path: str, *, query=None, body=None):
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


def run(*, iterations: int) -> list[dict]:
    from ilab_memory.client import MemoryClient

    step(f"one account of {MEMORIES:,} memories, words-only search")
    user_id, token = account()
    port = free_port()
    server = serve(port)
    try:
        base = f"http://127.0.0.1:{port}{API}"
        client, raw = MemoryClient(base, token), Raw(base, token)
        three_words = queries()["three words"]
        query = lambda i: three_words(user_id, MEMORIES, i)
        found = client.mem_search(user_id, query(0))
        if len(found) < 10:  # the search must return a page worth decoding
            raise RuntimeError(f"the search found {len(found)} memories, not a full page")
        # Each way saves its own memories: the same text from both would be counted a duplicate.
        note = lambda way, i: {"title": f"{way} {i}", "content": f"note {i} saved by {way} about the service"}
        saves = {
            "save (MemoryClient)": lambda i: client.mem_save(user_id, **note("client", i)),
            "save (urllib)": lambda i: raw("POST", "observations/", body={"user_id": user_id, **note("urllib", i),
                                                                            "type": "manual", "topic_key": None,
                                                                            "metadata": None}),
        }
        searches = {
            "search (MemoryClient)": lambda i: client.mem_search(user_id, query(i)),
            "search (urllib)": lambda i: raw("GET", "observations/search/", query=[("user_id", user_id),
                                                                                   ("q", query(i))]),
        }
        results = []
        for call, calls in (("search", searches), ("save", saves)):
            for name, got in measure(calls, iterations=iterations, warmup=5).items():
                results.append({"group": "client", "call": call, "way": name.split("(")[1].rstrip(")"), "op": name,
                                **got})
                step(line(name, got))
        return results
    finally:
        server.terminate()
        server.wait(timeout=30)
