"""The HTTP API under load: gunicorn on 127.0.0.1 driven by ``wrk``, next to the bare DRF floor.

The demo site (``project.settings``, DEBUG off) serves a new database with 16 accounts and
tokens, each with 1,000 observations, from 2 gunicorn sync workers. The same workers also serve
the framework's floor (``benchmarks.perf_http_floor``: a bare DRF ``APIView`` with the site's
token authentication and ``IsAuthenticated`` answering ``{"ok": true}``, and one that reads a
small JSON body, unique per request, and, for the list, DRF's own ``ListAPIView`` of the same
page). ``wrk`` (one thread, written in C, so the load generator costs the server little CPU)
sends each endpoint's requests over 4 and then 16 keep-alive connections for a fixed time,
going round the accounts request by request. Each endpoint's ``ratio`` is its throughput over
the floor's of the same method and connection count, measured in slices taking turns with the
endpoint's (the machine is shared and its speed drifts: a drift then slows both alike); the
list's ``own_ratio`` is over DRF's own list, in the same turns. Latencies (p50, p99) are wrk's,
per request (the median slice's p50, the worst slice's p99); ``cpu_per_request`` is the
gunicorn processes' CPU time (from /proc) over the requests served, ``db_cpu_per_request``
that of the PostgreSQL server's processes (which serve anyone else using that server too).

``ILAB_MEMORY_EMBEDDER= python -m benchmarks.perf --phases http`` runs it words-only (no
vectors, no query embedding: what the faces themselves cost). Otherwise the site runs with its
defaults, EMBEDDER "default" in inline mode: saves queue their vector
rows and searches embed the query and look up the user's vectors. The histories are written
with their vectors (random unit vectors under the model's id, as in perf_hybrid), and before
the search endpoints the rows the timed saves queued get theirs the same way (untimed): the
searches then see the steady state of a site whose memories are embedded, instead of the first
search of each user embedding a few thousand queued saves inline (a gunicorn timeout). Embedding
itself is measured by the hybrid phase.
"""

from __future__ import annotations

import functools
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

from .perf_timing import step
from .proc_stat import TICKS_PER_SECOND, processes



def note() -> str:
    if os.environ.get("ILAB_MEMORY_EMBEDDER", "default") == "":
        return "ILAB_MEMORY_EMBEDDER='': words-only search, saves queue no vector rows (the faces' own cost)"
    return ("demo site defaults (EMBEDDER 'default', inline): searches are hybrid over memories that all have "
            "vectors (random unit vectors, written untimed), saves queue vector rows")

ROOT = Path(__file__).resolve().parent.parent
ACCOUNTS = 16
CONNECTIONS = (4, 16)
WORKERS = 2
# Each endpoint's time is split into this many slices, taking turns with its floor's.
ROUNDS = 4
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


class Budget:
    """A shared cap on requests across client threads (benchmarks.perf_mcp's generator)."""

    def __init__(self, total: int):
        self.left, self.lock = total, threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


WRK_SCRIPT = r"""
-- args: method, body template ("" for none; formatted with the run's tag, the account, the
-- request number, the account, the request number), the run's tag, then pairs of path and token,
-- one pair per account. Requests go round the accounts; bodies are unique per request and run.
function init(args)
  method, template, tag = args[1], args[2], args[3]
  paths, tokens = {}, {}
  for k = 4, #args, 2 do paths[#paths + 1] = args[k]; tokens[#tokens + 1] = args[k + 1] end
  n = 0
end

function request()
  n = n + 1
  local k = (n % #paths) + 1
  local headers = {["Authorization"] = "Token " .. tokens[k], ["Accept"] = "application/json"}
  local body = nil
  if template ~= "" then
    headers["Content-Type"] = "application/json"
    body = string.format(template, tag, k, n, k, n)
  end
  return wrk.format(method, paths[k], headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\nWRKJSON {"requests": %d, "duration_us": %d, "errors": %d, "status_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d, "max_us": %d}\n', summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout + e.status, e.status, latency:percentile(50),
    latency:percentile(99), latency.max))
end
"""

SAVE_BODY = '{"title": "http %s %d %d", "content": "client %d wrote note %d about the service"}'
FLOOR_BODY = '{"title": "floor %s %d %d", "content": "client %d wrote note %d about the service"}'


def scenarios():
    """(name, method, body template or "", path of an account): the floor first, then ours.

    Saving comes before the searches: the rows it adds are given vectors (untimed) before them.
    """
    return (
        ("floor GET (bare DRF)", "GET", "", lambda a: "/floor/ok/"),
        ("floor POST body (bare DRF)", "POST", FLOOR_BODY, lambda a: "/floor/body/"),
        ("POST sessions/start/", "POST", "{}", lambda a: PREFIX + "/sessions/start/"),
        ("POST observations/", "POST", SAVE_BODY, lambda a: PREFIX + "/observations/"),
        ("GET search (rare term)", "GET", "", lambda a: f"{PREFIX}/observations/search/?q={quote(a['rare'])}"),
        ("GET search (common term)", "GET", "", lambda a: PREFIX + "/observations/search/?q=service"),
        ("GET context/", "GET", "", lambda a: PREFIX + "/context/"),
        ("GET observations/?page_size=10", "GET", "", lambda a: PREFIX + "/observations/?page_size=10"),
    )


FLOORS = {"GET": "floor GET (bare DRF)", "POST": "floor POST body (bare DRF)"}
# Where DRF's documentation has an idiom for an endpoint's work, that idiom on the same rows
# (benchmarks.perf_http_floor): measured in the same turns and reported as a second ratio.
OWN_WAY = {
    "GET observations/?page_size=10": (
        "floor list (DRF ListAPIView)", "GET", "", lambda a: "/floor/list/?page_size=10",
    ),
}


def cpu_seconds(server: subprocess.Popen) -> tuple[float, float]:
    """CPU seconds (user + system) used so far by gunicorn's master and workers, and by every
    PostgreSQL server process (shared with anything else using that server), from /proc."""
    ticks = [0, 0]
    for pid, parent, command, used in processes():
        if server.pid in (pid, parent):
            ticks[0] += used
        elif command == "postgres":
            ticks[1] += used
    return ticks[0] / TICKS_PER_SECOND, ticks[1] / TICKS_PER_SECOND


def load(server, port: int, accounts: list[dict], scenario, *, connections: int, seconds: float,
         warm_up: bool = False, database_cpu: bool = True) -> dict:
    """One wrk run of ``scenario`` at ``connections`` connections (one wrk thread)."""
    name, method, body, path_of = scenario
    pairs = [value for account in accounts for value in (path_of(account), account["token"])]
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"ilab_perf_http_{os.getpid()}.lua"
    script.write_text(WRK_SCRIPT)
    cpu, db_cpu = cpu_seconds(server)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s", "-s", str(script),
         f"http://127.0.0.1:{port}", "--", method, body, f"{connections}-{time.monotonic_ns()}", *pairs],
        capture_output=True, text=True, check=True,
    )
    cpu_after, db_cpu_after = cpu_seconds(server)
    cpu, db_cpu = cpu_after - cpu, db_cpu_after - db_cpu
    line = next(line for line in out.stdout.splitlines() if line.startswith("WRKJSON "))
    raw = json.loads(line[len("WRKJSON "):])
    requests = raw["requests"]
    result = {"endpoint": name, "method": method, "connections": connections, "requests": requests,
              "errors": raw["errors"], "seconds": raw["duration_us"] / 1e6, "cpu": cpu, "db_cpu": db_cpu,
              "throughput": requests / (raw["duration_us"] / 1e6),
              "p50": raw["p50_us"] / 1000, "p99": raw["p99_us"] / 1000, "max": raw["max_us"] / 1000,
              "cpu_per_request": cpu * 1000 / requests if requests else None,
              # Negative when a server process of someone else's ended during the run: unknown.
              "db_cpu_per_request": (db_cpu * 1000 / requests
                                     if requests and database_cpu and db_cpu >= 0 else None)}
    if warm_up:
        return result
    db = f" + db {result['db_cpu_per_request']:5.2f}" if result["db_cpu_per_request"] is not None else ""
    step(f"{name:<32} c={connections:<3} {requests:>6} requests  {result['throughput']:6.0f} req/s  "
         f"p50 {result['p50']:7.2f} ms  p99 {result['p99']:7.2f} ms  cpu {result['cpu_per_request'] or 0:5.2f}{db} ms/req  "
         f"errors {raw['errors']}")
    return result


def merged(slices: list[dict]) -> dict:
    """One result from the slices of one endpoint's run: totals over the slices' time, the median
    slice's p50 and the worst slice's p99 and max (wrk reports percentiles per run only)."""
    requests = sum(r["requests"] for r in slices)
    seconds = sum(r["seconds"] for r in slices)
    cpu, db_cpu = sum(r["cpu"] for r in slices), sum(r["db_cpu"] for r in slices)
    db_known = None not in (r["db_cpu_per_request"] for r in slices)
    p50s = sorted(r["p50"] for r in slices)
    return {**slices[0], "requests": requests, "errors": sum(r["errors"] for r in slices), "seconds": seconds,
            "cpu": cpu, "db_cpu": db_cpu, "throughput": requests / seconds, "p50": p50s[len(p50s) // 2],
            "p99": max(r["p99"] for r in slices), "max": max(r["max"] for r in slices),
            "cpu_per_request": cpu * 1000 / requests if requests else None,
            "db_cpu_per_request": db_cpu * 1000 / requests if requests and db_known else None}


def run(scratch, *, seconds: float, connections=CONNECTIONS) -> list[dict]:
    env = scratch.env()
    env["DJANGO_DEBUG"] = "0"
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    prepared = subprocess.run(
        [sys.executable, "-m", "benchmarks.perf_http", "prepare", str(ACCOUNTS)],
        cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
    )
    accounts = json.loads(prepared.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "benchmarks.perf_http_floor:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(WORKERS), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )
    try:
        _wait_until_serving(port, accounts[0]["token"])
        step(f"gunicorn: {WORKERS} sync workers on 127.0.0.1:{port}; wrk, 1 thread, {'/'.join(map(str, connections))} "
             f"connections, {seconds:g}s per endpoint, requests round {len(accounts)} accounts")
        floors = {scenario[1]: scenario for scenario in scenarios() if scenario[0] in FLOORS.values()}
        measure = functools.partial(load, server, port, accounts, database_cpu=scratch.vendor == "postgresql")
        results = []
        for scenario in scenarios():
            name, method = scenario[0], scenario[1]
            if name.startswith("GET search") and not any(r["endpoint"].startswith("GET search") for r in results):
                filled = subprocess.run(
                    [sys.executable, "-m", "benchmarks.perf_http", "vectors"],
                    cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
                )
                step(f"untimed: {filled.stdout.strip().splitlines()[-1]} rows the saves queued given random "
                     "vectors (the embedded steady state)")
            own_way = OWN_WAY.get(name)
            for warm in (scenario, own_way):
                if warm is not None:
                    measure(warm, connections=connections[0], seconds=1, warm_up=True)
            for n in connections:
                if name in FLOORS.values():
                    results.append(measure(scenario, connections=n, seconds=seconds))
                    continue
                # The floor of the same method in slices taking turns with the endpoint's (floor,
                # endpoint, endpoint, floor, ...): the shared machine's speed drifts, and a drift
                # then slows both alike instead of whichever ran in the slower moment.
                turns = [([], floors[method]), ([], scenario)] + ([([], own_way)] if own_way else [])
                for k in range(ROUNDS):
                    for into, which in turns if k % 2 == 0 else reversed(turns):
                        into.append(measure(which, connections=n, seconds=seconds / ROUNDS))
                floor, result = merged(turns[0][0]), merged(turns[1][0])
                result.update(floor=floor["throughput"], ratio=result["throughput"] / floor["throughput"])
                if own_way:
                    own = merged(turns[2][0])
                    result.update(own_way=own["endpoint"], own_ratio=result["throughput"] / own["throughput"])
                    results.append(own)
                results.append(result)
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
