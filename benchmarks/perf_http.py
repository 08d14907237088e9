"""The HTTP API under a few concurrent clients: gunicorn on 127.0.0.1, a threaded load generator.

The demo site (``project.settings``, DEBUG off) serves a new database with one account and
token per client, each with 1,000 observations. The load generator is this module: one thread
per client, each with its own ``http.client`` connection and token, sending one request after
another for a fixed time (capped in count), per endpoint in turn. Throughput is completed
requests per second of wall time; latency is per request, as the client sees it. Clients and
server share the machine's CPUs, so the numbers include the load generator's own cost.

The site runs with its defaults, EMBEDDER "default" in inline mode: saves queue their vector
rows and searches embed the query and look up the user's vectors. The histories are written
with their vectors (random unit vectors under the model's id, as in perf_hybrid), and before
the search endpoints the rows the timed saves queued get theirs the same way (untimed): the
searches then see the steady state of a site whose memories are embedded, instead of the first
search of each user embedding a few thousand queued saves inline (a gunicorn timeout). Embedding
itself is measured by the hybrid phase.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

from .perf_timing import Sample, step

NOTE = ("demo site defaults (EMBEDDER 'default', inline): searches are hybrid over memories that all have "
        "vectors (random unit vectors, written untimed), saves queue vector rows")
ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 4
WORKERS = 2
MAX_REQUESTS = 5_000  # per endpoint, across clients
PREFIX = "/api/memory"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(clients: int) -> list[dict]:
    """In a demo-site process: migrate, create the accounts, tokens and histories."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from .perf_data import BulkLoad, HistoryWriter

    call_command("migrate", verbosity=0, interactive=False)
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embedder_for

    from .perf_data import VectorFill

    embedder = embedder_for(get_config())
    fill = VectorFill(embedder.model_id, embedder.dimensions) if embedder is not None else None
    accounts = []
    for k in range(clients):
        user = get_user_model().objects.create_user(username=f"bench-{k}")
        accounts.append({"user_id": str(user.pk), "token": Token.objects.create(user=user).key})
    writer = HistoryWriter()
    first_row = writer.next_row
    with BulkLoad():
        writer.add_users([(a["user_id"], 1_000) for a in accounts], label="http histories", vectors=fill)
    from .perf_data import rare_term

    for k, account in enumerate(accounts):
        account["rare"] = rare_term(first_row + k * 1_000 + 500)
    return accounts


def fill_vectors() -> int:
    """In a demo-site process: give every row waiting for a vector a random unit vector of the
    current model (untimed setup before the searches); returns how many."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    import numpy as np
    from django.db import connection, transaction
    from django.utils import timezone

    from ilab_memory.conf import get_config
    from ilab_memory.models import ObservationVector
    from ilab_memory.services.embedding import embedder_for

    embedder = embedder_for(get_config())
    if embedder is None:
        return 0
    waiting = list(ObservationVector.objects.waiting(embedder.model_id).values_list("pk", flat=True))
    matrix = np.random.default_rng(len(waiting)).standard_normal((len(waiting), embedder.dimensions), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {ObservationVector._meta.db_table} SET model_id = %s, dimensions = %s, vector = %s, "
            "embedded_at = %s, claimed_until = NULL WHERE id = %s",
            [(embedder.model_id, embedder.dimensions, row.astype("<f4").tobytes(), now, pk)
             for pk, row in zip(waiting, matrix)],
        )
    return len(waiting)


class Client(threading.Thread):
    """Sends ``request(i)`` again and again until the deadline or the shared cap."""

    def __init__(self, port: int, token: str, request, *, deadline: float, budget: "Budget"):
        super().__init__(daemon=True)
        self.port, self.token, self.request = port, token, request
        self.deadline, self.budget = deadline, budget
        self.latencies: list[float] = []
        self.errors = 0
        self.statuses: dict[int, int] = {}

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        i = 0
        while time.monotonic() < self.deadline and self.budget.take():
            method, path, body = self.request(i)
            headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = "application/json"
            started = time.perf_counter()
            try:
                connection.request(method, PREFIX + path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                status = 0
            self.latencies.append(time.perf_counter() - started)
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if not 200 <= status < 300:
                self.errors += 1
            i += 1
        connection.close()


class Budget:
    def __init__(self, total: int):
        self.left, self.lock = total, threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


def load(port: int, accounts: list[dict], endpoint: str, make_request, *, seconds: float) -> dict:
    budget = Budget(MAX_REQUESTS)
    started = time.monotonic()
    clients = [
        Client(port, account["token"], make_request(k, account), deadline=started + seconds, budget=budget)
        for k, account in enumerate(accounts)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.monotonic() - started
    latencies = [t for c in clients for t in c.latencies]
    sample = Sample.of(latencies)
    statuses: dict[str, int] = {}
    for client in clients:
        for code, n in client.statuses.items():
            statuses[str(code)] = statuses.get(str(code), 0) + n
    result = {"endpoint": endpoint, "clients": len(clients), "requests": len(latencies),
              "errors": sum(c.errors for c in clients), "statuses": statuses,
              "throughput": len(latencies) / elapsed, "p50": sample.p50, "p95": sample.p95}
    step(f"{endpoint:<26} {result['requests']:>6} requests  {result['throughput']:6.0f} req/s  "
         f"p50 {sample.p50:7.2f} ms  p95 {sample.p95:7.2f} ms  statuses {statuses}")
    return result


def scenarios():
    def start(k, account):
        return lambda i: ("POST", "/sessions/start/", "{}")

    def save(k, account):
        return lambda i: ("POST", "/observations/",
                          json.dumps({"title": f"http {k} {i}", "content": f"client {k} wrote note {i} about the service"}))

    def search_rare(k, account):
        return lambda i: ("GET", f"/observations/search/?q={quote(account['rare'])}", None)

    def search_common(k, account):
        return lambda i: ("GET", "/observations/search/?q=service", None)

    def context(k, account):
        return lambda i: ("GET", "/context/", None)

    return (("POST sessions/start/", start), ("POST observations/", save),
            ("GET search (rare term)", search_rare), ("GET search (common term)", search_common),
            ("GET context/", context))


def run(scratch, *, seconds: float) -> list[dict]:
    env = scratch.env()
    env["DJANGO_DEBUG"] = "0"
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    prepared = subprocess.run(
        [sys.executable, "-m", "benchmarks.perf_http", "prepare", str(CLIENTS)],
        cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
    )
    accounts = json.loads(prepared.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "project.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(WORKERS), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )
    try:
        _wait_until_serving(port, accounts[0]["token"])
        step(f"gunicorn: {WORKERS} sync workers on 127.0.0.1:{port}; {CLIENTS} client threads, "
             f"{seconds:g}s or {MAX_REQUESTS} requests per endpoint")
        results = []
        for name, make in scenarios():
            if name.startswith("GET search") and not any(r["endpoint"].startswith("GET search") for r in results):
                filled = subprocess.run(
                    [sys.executable, "-m", "benchmarks.perf_http", "vectors"],
                    cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
                )
                step(f"untimed: {filled.stdout.strip().splitlines()[-1]} rows the saves queued given random "
                     "vectors (the embedded steady state)")
            results.append(load(port, accounts, name, make, seconds=seconds))
        return results
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_until_serving(port: int, token: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", PREFIX + "/context/", headers={"Authorization": f"Token {token}"})
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not start serving in time")


if __name__ == "__main__" and sys.argv[1:2] == ["prepare"]:
    print(json.dumps(prepare(int(sys.argv[2]))))
elif __name__ == "__main__" and sys.argv[1:2] == ["vectors"]:
    print(fill_vectors())
