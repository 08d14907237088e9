"""Before/after comparison of two source trees, measured in one interleaved run.

    .venv/bin/python -m benchmarks.compare --before PATH/TO/OLD/TREE --after . \\
        [--engines sqlite,postgresql] [--size 100000] [--rounds 3] [--quick] [--json out.json]

Each tree runs in its own processes (``PYTHONPATH=<tree>``, ``cwd=<tree>``, this Python; byte
code goes to a temporary folder, not into the trees) and is reached only through surfaces both
trees keep: the facade ``ilab_memory.ILabMemory``, the models ``Session``/``Observation`` (to
load data, move a session's last activity back and clean up), and the HTTP API of the demo site
``project`` at ``/api/memory/`` (token auth). Nothing of ``ilab_memory``'s internals or of the
trees' own ``benchmarks`` packages is imported: the per-tree code is
``benchmarks/compare_worker.py`` of *this* file's tree, run by its path.

Per engine (a temporary SQLite file; a scratch PostgreSQL database ``ilab_cmp_<pid>`` on the
server of ``--pg-url``, dropped at the end):

1. **Load once**, by the *before* tree, or by the *after* tree when it adds migrations (it may
   only add: new tables, which the before tree never reads; the after tree's writes then pay for
   what it adds): the demo site's schema, then with ``bulk_create`` and a seeded generator, *for
   each tree* one user with ``--size`` observations (completed sessions of 50 over the past year,
   the newest an hour old) and ``--http-clients`` accounts with tokens and ``--http-history``
   observations each. The two
   trees' users are twins (the same history), their rows interleaved in the table, so neither
   tree's writes change what the other reads (the table holds both: 2 × size + the accounts).
   PostgreSQL: ``VACUUM ANALYZE``, then autovacuum off on the app's tables, so every connection
   plans with the same statistics and no timing shares the CPUs with autovacuum.
2. **Rounds** (``--rounds``), each with new processes: one ``compare_worker.py serve`` per tree,
   driven over a pipe, and (in the first ``--http-rounds``) one gunicorn per tree, idle and
   without a database connection until the HTTP phase:

   * **core**: every operation untimed for a while (new processes), then per operation a few
     warm-up calls and ``--iterations`` timed calls per tree in batches of ``--batch``, the trees
     taking turns (A B B A A B …), so a slow moment of the machine hits both. Operations: start
     reuse; start new (after ``mem_session_end``); start auto-close (three saves, then
     ``last_activity_at`` moved back 25 h through the model, past the default 24 h timeout);
     save create, duplicate (same title, content and type), revise (same topic_key); context
     (``mem_context``). Every timed call's result is checked (is_new, action, 10 memories).
   * **HTTP**: 2 sync workers per server on a free port of 127.0.0.1; ``wrk`` (one connection
     and account per thread; a Lua script sets the token and the POST bodies, a new title per
     request) runs each server on both endpoints for ``--http-warmup`` s, then
     ``POST sessions/start/`` and ``POST observations/`` for ``--http-seconds`` per tree in
     slices of ``--http-slice`` s, trees in turns. Per round and tree: the median slice's
     requests per second, p50/p99 over all the slices' requests, and the server's CPU per
     request (gunicorn's processes, from /proc). Without ``wrk`` on PATH, a threaded
     ``http.client`` generator (as ``benchmarks/perf_http.py``) is used.
   * **reset**: the sessions opened since the load are deleted (their observations and
     revisions cascade; PostgreSQL then ``VACUUM``s), so every round starts on the data as
     loaded and the writes of one round do not change what the next one measures.

The report is a markdown table per engine: *before* and *after* are medians over rounds; the
*ratio* after/before is the median of the per-round ratios (each round times both trees in
turns, so the machine's speed between rounds cancels out), *rounds* their range. Guards: p50
of start reuse, the three saves and context ≤ 1.5× before; start new and auto-close ≤ 3×; HTTP
throughput ≥ 0.9×. The CPU rows (the calling thread: for SQLite nearly all the work, for
PostgreSQL the client's part; server CPU per request over HTTP) are not guarded; they leave out
waiting for a CPU and so move less on a busy machine. Exit status 1 when a guard fails (not with
``--quick``), 2 when the run itself failed.
Progress goes to stderr, the tables to stdout, every number (also each call's time) to ``--json``.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .proc_stat import TICKS_PER_SECOND, processes

WORKER = Path(__file__).resolve().with_name("compare_worker.py")
PREFIX = "/api/memory"
GUNICORN_WORKERS = 2
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/test"  # only used to CREATE/DROP the scratch database
TREES = ("before", "after")

CORE_OPS = ("start reuse", "start new", "start auto-close", "save create", "save duplicate", "save revise",
            "context")
CORE_LIMITS = {"start reuse": 1.5, "save create": 1.5, "save duplicate": 1.5, "save revise": 1.5, "context": 1.5,
               "start new": 3.0, "start auto-close": 3.0}  # p50 after/before at most
HTTP_ENDPOINTS = {"POST sessions/start/": ("/sessions/start/", "start"),
                  "POST observations/": ("/observations/", "save")}
HTTP_MIN_THROUGHPUT = 0.9  # after/before at least

FULL = {"size": 100_000, "rounds": 3, "http_rounds": None, "iterations": 200, "batch": 10, "warmup": 5,
        "http_seconds": 10, "http_slice": 2, "http_warmup": 5, "http_history": 1_000}
QUICK = {"size": 10_000, "rounds": 1, "http_rounds": 1, "iterations": 40, "batch": 5, "warmup": 3,
         "http_seconds": 2, "http_slice": 1, "http_warmup": 2, "http_history": 200}

_T0 = time.monotonic()


def step(message: str) -> None:
    sys.stderr.write(f"  {time.monotonic() - _T0:6.1f}s {message}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------------ processes


class Trees:
    """Starts processes of a tree: its code on PYTHONPATH, its folder as cwd, one Python."""

    def __init__(self, args, pycache: str):
        self.python, self.pycache = args.python, pycache
        self.paths = {"before": str(Path(args.before).resolve()), "after": str(Path(args.after).resolve())}
        self.loader = "before"  # the tree that migrates and loads the shared database
        self.words_only = args.after_words_only
        self.before_settings = args.before_settings

    def env(self, tree: str, meta: dict | None = None, *, site: bool = False) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "ILAB_MEMORY_DEMO_DB", "PYTHONPATH")}
        env["PYTHONPATH"] = self.paths[tree]
        env["PYTHONPYCACHEPREFIX"] = self.pycache  # byte code goes to a folder of ours, not into the trees
        env["ILAB_CMP_TREE"] = tree
        if tree == "before":
            env["ILAB_CMP_SETTINGS"] = self.before_settings
        if self.words_only and tree == "after":
            env["ILAB_CMP_WORDS_ONLY"] = "after"
            env["ILAB_MEMORY_EMBEDDER"] = ""  # the demo site's settings: no embedder
        if site and meta is not None:
            env["DJANGO_SETTINGS_MODULE"] = "project.settings"
            env["DJANGO_DEBUG"] = "0"
            if meta["engine"] == "sqlite":
                env["ILAB_MEMORY_DEMO_DB"] = meta["sqlite_path"]
            else:
                env["DATABASE_URL"] = meta["db_url"]
        return env

    def run_worker(self, tree: str, *argv: str) -> None:
        done = subprocess.run([self.python, str(WORKER), *argv], cwd=self.paths[tree], env=self.env(tree))
        if done.returncode != 0:
            raise RuntimeError(f"compare_worker {argv[0]} of {tree} ({self.paths[tree]}) failed: {done.returncode}")


class Worker:
    """A ``compare_worker.py serve`` process of one tree: one JSON line out, one JSON line back."""

    def __init__(self, trees: Trees, tree: str, meta_path: str):
        self.tree = tree
        self.process = subprocess.Popen([trees.python, str(WORKER), "serve", meta_path, tree],
                                        cwd=trees.paths[tree], env=trees.env(tree), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.tree} worker exited (status {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the {self.tree} worker failed: {answer['error']}")
        return answer

    def send(self, cmd: str, **fields) -> dict:
        self.process.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(timeout=30)
            except (OSError, RuntimeError, subprocess.TimeoutExpired, ValueError):
                self.process.kill()
                self.process.wait()


def turns(k: int) -> tuple[str, str]:
    """A B, B A, A B, …: neither tree always goes first."""
    return TREES if k % 2 == 0 else TREES[::-1]


def git_identity(path: str) -> dict:
    def git(*argv):
        try:
            out = subprocess.run(["git", "--no-optional-locks", "-C", path, *argv], capture_output=True, text=True,
                                 timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit, status = git("rev-parse", "HEAD"), git("status", "--porcelain")
    return {"path": path, "commit": commit, "dirty": bool(status) if status is not None else None,
            "changes": status.splitlines()[:50] if status else []}


def migration_names(path: str) -> set[str]:
    folder = Path(path) / "ilab_memory" / "migrations"
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


# ------------------------------------------------------------------------------------ databases


class Scratch:
    """A new database for one engine: a temporary SQLite file, or ``ilab_cmp_<pid>`` on the server."""

    def __init__(self, engine: str, pg_url: str, folder: str):
        self.engine, self.pg_url, self.dropped = engine, pg_url, False
        self.meta: dict = {"engine": engine}
        if engine == "sqlite":
            self.meta["sqlite_path"] = self.meta["database"] = os.path.join(folder, "compare.sqlite3")
            return
        import psycopg

        self.name = f"ilab_cmp_{os.getpid()}"
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
            admin.execute(f'CREATE DATABASE "{self.name}"')
        atexit.register(self.drop)
        self.meta["db_url"] = urlunsplit(urlsplit(pg_url)._replace(path="/" + self.name))
        self.meta["database"] = self.name

    def drop(self) -> None:
        if self.engine != "postgresql" or self.dropped:
            return
        import psycopg

        with psycopg.connect(self.pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self.dropped = True


# ------------------------------------------------------------------------------------------ core


def core_round(workers: dict[str, Worker], settings: dict, tag: str) -> dict:
    """Every operation, both trees in alternating batches; per tree and operation the call times."""
    times = {tree: {} for tree in TREES}
    cpu = {tree: {} for tree in TREES}
    problems = {tree: [] for tree in TREES}
    batches = math.ceil(settings["iterations"] / settings["batch"])
    # New processes: run every operation a while, untimed, before the first timing (a fresh
    # interpreter and connection are slower for their first calls).
    for op in CORE_OPS:
        for tree in TREES:
            workers[tree].send("begin", op=op, warmup=settings["warmup"] * 4, tag=f"{tag}{tree[0]}pre")
    for op in CORE_OPS:
        for tree in TREES:
            workers[tree].send("begin", op=op, warmup=settings["warmup"], tag=f"{tag}{tree[0]}")
            times[tree][op], cpu[tree][op] = [], []
        for b in range(batches):
            calls = min(settings["batch"], settings["iterations"] - b * settings["batch"])
            for tree in turns(b):
                answer = workers[tree].send("batch", op=op, calls=calls)
                times[tree][op] += answer["times"]
                cpu[tree][op] += answer["cpu"]
                problems[tree] += answer["problems"]
        for tree in TREES:
            problems[tree] += workers[tree].send("finish", op=op, timed_calls=len(times[tree][op]))["problems"]
        b, a = (percentile(times[t][op], 50) * 1000 for t in TREES)
        step(f"  {op:<18} p50 before {b:7.3f} ms  after {a:7.3f} ms  ×{a / b:5.2f}")
    return {tree: {"ops": {op: {**summary(ts), "cpu_p50": percentile(cpu[tree][op], 50) * 1000}
                           for op, ts in times[tree].items()},
                   "times_ms": {op: [round(t * 1000, 4) for t in ts] for op, ts in times[tree].items()},
                   "problems": problems[tree][:20], "problem_count": len(problems[tree])} for tree in TREES}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100  # linear between closest ranks (numpy's default)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50": percentile(ms, 50), "p90": percentile(ms, 90), "mean": statistics.fmean(ms)}


# ------------------------------------------------------------------------------------------ HTTP

WRK_SCRIPT = r"""
-- One account per thread (one connection per thread): args are mode ("start" | "save"), a tag
-- that keeps this run's titles apart, then the tokens.
local made = 0
function setup(thread)
  made = made + 1
  thread:set("tid", made)
end

function init(args)
  mode, tag = args[1], args[2]
  local tokens = {}
  for k = 3, #args do tokens[#tokens + 1] = args[k] end
  wrk.method = "POST"
  wrk.headers["Authorization"] = "Token " .. tokens[((tid - 1) % #tokens) + 1]
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json"
  n = 0
  if mode == "start" then
    wrk.body = "{}"
    fixed = wrk.format()
  end
end

function request()
  if fixed then return fixed end
  n = n + 1
  return wrk.format(nil, nil, nil, string.format(
    '{"title": "http %s %d %d", "content": "client %d wrote note %d about the service"}', tag, tid, n, tid, n))
end

function done(summary, latency, requests)
  local ps = {}
  for k = 1, 198 do ps[#ps + 1] = k * 0.5 end
  for k = 1, 9 do ps[#ps + 1] = 99 + k * 0.1 end
  ps[#ps + 1] = 99.99
  local q = {}
  for _, p in ipairs(ps) do q[#q + 1] = string.format("[%.2f,%d]", p, latency:percentile(p)) end
  local e = summary.errors
  io.write(string.format('\nWRKJSON {"requests": %d, "duration_us": %d, "errors": %d, "status_errors": %d, ' ..
    '"max_us": %d, "quantiles_us": [%s]}\n', summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout + e.status, e.status, latency.max, table.concat(q, ",")))
end
"""


def process_tree_cpu(root: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``root`` and its children (gunicorn's
    master and workers), from /proc; None where there is no /proc."""
    ticks = [used for pid, parent, _, used in processes() if root in (pid, parent)]
    return sum(ticks) / TICKS_PER_SECOND if ticks else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn serving one tree's demo site on a free port of 127.0.0.1."""

    def __init__(self, trees: Trees, tree: str, meta: dict):
        self.tree, self.port = tree, free_port()
        self.tokens = [account["token"] for account in meta["users"][tree]["accounts"]]
        self.process = subprocess.Popen(
            [trees.python, "-m", "gunicorn", "project.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(GUNICORN_WORKERS), "--log-level", "warning"],
            cwd=trees.paths[tree], env=trees.env(tree, meta, site=True),
        )

    def wait_until_serving(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn of {self.tree} exited with status {self.process.returncode}")
            try:  # without a token: the answer (401) needs no database connection
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                connection.request("GET", PREFIX + "/context/")
                response = connection.getresponse()
                response.read()
                connection.close()
            except OSError:
                time.sleep(0.2)
                continue
            if response.status not in (401, 403):
                raise RuntimeError(f"{self.tree}: GET {PREFIX}/context/ without a token answered {response.status}")
            return
        raise RuntimeError(f"gunicorn of {self.tree} did not start serving in time")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def run_wrk(wrk: str, script: str, server: Server, endpoint: str, tag: str, seconds: int) -> dict:
    path, mode = HTTP_ENDPOINTS[endpoint]
    threads = str(len(server.tokens))
    out = subprocess.run(
        [wrk, "-t", threads, "-c", threads, "-d", f"{seconds}s", "--timeout", "10s", "-s", script,
         f"http://127.0.0.1:{server.port}{PREFIX}{path}", "--", mode, tag, *server.tokens],
        capture_output=True, text=True, check=True,
    )
    line = next(line for line in out.stdout.splitlines() if line.startswith("WRKJSON "))
    raw = json.loads(line[len("WRKJSON "):])
    return {"requests": raw["requests"], "seconds": raw["duration_us"] / 1e6, "errors": raw["errors"],
            "quantiles_ms": [[p, v / 1000] for p, v in raw["quantiles_us"]], "max_ms": raw["max_us"] / 1000}


def run_threads(server: Server, endpoint: str, tag: str, seconds: int) -> dict:
    """Fallback load generator: one thread and ``http.client`` connection per account."""
    path, mode = HTTP_ENDPOINTS[endpoint]
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client(k: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = {"Authorization": f"Token {server.tokens[k]}", "Content-Type": "application/json",
                   "Accept": "application/json"}
        n = 0
        while time.monotonic() < deadline:
            n += 1
            body = "{}" if mode == "start" else json.dumps(
                {"title": f"http {tag} {k} {n}", "content": f"client {k} wrote note {n} about the service"})
            started = time.perf_counter()
            try:
                connection.request("POST", PREFIX + path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                ok = 200 <= response.status < 300
            except (OSError, http.client.HTTPException):
                connection.close()
                ok = False
            with lock:
                latencies.append(time.perf_counter() - started)
                errors[0] += not ok
        connection.close()

    started = time.monotonic()
    pool = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(len(server.tokens))]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return {"requests": len(latencies), "seconds": time.monotonic() - started, "errors": errors[0],
            "samples_ms": [t * 1000 for t in latencies]}


def merged_quantile(slices: list[dict], p: float) -> float:
    """The p-th percentile of all requests of ``slices``: each slice's quantiles (wrk) or samples
    (fallback), weighted by its share of the requests."""
    points = []  # (value, mass)
    for s in slices:
        if "samples_ms" in s:
            points += [(v, 1.0) for v in s["samples_ms"]]
            continue
        previous = 0.0
        for q, value in s["quantiles_ms"]:
            points.append((value, s["requests"] * (q - previous) / 100))
            previous = q
        points.append((s["max_ms"], s["requests"] * (100 - previous) / 100))
    points.sort()
    total = sum(mass for _, mass in points)
    target, running = total * p / 100, 0.0
    for value, mass in points:
        running += mass
        if running >= target:
            return value
    return points[-1][0]


def http_round(servers: dict[str, Server], settings: dict, *, tag: str, wrk: str | None, script: str) -> dict:
    slices = {tree: {endpoint: [] for endpoint in HTTP_ENDPOINTS} for tree in TREES}

    def drive(tree: str, endpoint: str, run_tag: str, seconds: int) -> dict:
        cpu_before = process_tree_cpu(servers[tree].process.pid)
        if wrk:
            result = run_wrk(wrk, script, servers[tree], endpoint, run_tag, seconds)
        else:
            result = run_threads(servers[tree], endpoint, run_tag, seconds)
        cpu_after = process_tree_cpu(servers[tree].process.pid)
        result["server_cpu"] = cpu_after - cpu_before if None not in (cpu_before, cpu_after) else None
        return result

    # Warm-up: a new gunicorn worker stays expensive for its first hundred or so requests (on
    # SQLite, 20-25 ms of CPU per start instead of 10 on this machine, for 4-6 s), so each server
    # runs both endpoints for a while first, saves then starts, the trees in turns.
    for endpoint in reversed(HTTP_ENDPOINTS) if settings["http_warmup"] > 0 else ():
        for tree in TREES:
            drive(tree, endpoint, f"{tag}{tree[0]}w", settings["http_warmup"])
    count = max(1, round(settings["http_seconds"] / settings["http_slice"]))
    for endpoint in HTTP_ENDPOINTS:
        for k in range(count):
            for tree in turns(k):
                slices[tree][endpoint].append(drive(tree, endpoint, f"{tag}{tree[0]}{k}", settings["http_slice"]))
    for server in servers.values():
        server.stop()
    result = {}
    for tree in TREES:
        result[tree] = {}
        for endpoint, parts in slices[tree].items():
            requests = sum(s["requests"] for s in parts)
            cpu = None if any(s["server_cpu"] is None for s in parts) else sum(s["server_cpu"] for s in parts)
            result[tree][endpoint] = {
                # the median slice: a slow moment of the machine in one slice does not move it
                "requests": requests, "errors": sum(s["errors"] for s in parts),
                "throughput": statistics.median(s["requests"] / s["seconds"] for s in parts),
                "server_cpu_ms": cpu * 1000 / requests if cpu is not None and requests else None,
                "p50": merged_quantile(parts, 50), "p90": merged_quantile(parts, 90), "p99": merged_quantile(parts, 99),
                "slices": [{k: v for k, v in s.items() if k not in ("quantiles_ms", "samples_ms")} for s in parts],
            }
    for endpoint in HTTP_ENDPOINTS:
        b, a = (result[t][endpoint] for t in TREES)
        step(f"  {endpoint:<22} before {b['throughput']:6.1f} req/s p50 {b['p50']:6.1f} ms · after "
             f"{a['throughput']:6.1f} req/s p50 {a['p50']:6.1f} ms  ×{a['throughput'] / b['throughput']:5.2f}"
             + (f"  server CPU/request {b['server_cpu_ms']:.1f} / {a['server_cpu_ms']:.1f} ms"
                if b["server_cpu_ms"] and a["server_cpu_ms"] else "")
             + f"  (errors {b['errors']}/{a['errors']})")
    return result


# ---------------------------------------------------------------------------------------- report


def summarize(result: dict) -> list[dict]:
    """Rows: per tree the median over rounds of each figure, the ratio, the per-round ratios."""
    rows = []

    def row(name, metric, unit, per_round, *, limit=None, direction="max"):
        before, after = [r["before"] for r in per_round], [r["after"] for r in per_round]
        b, a = statistics.median(before), statistics.median(after)
        # The ratio is the median of the per-round ratios: each round's before and after ran in
        # turns, so they saw the same machine; the machine's speed between rounds cancels out.
        round_ratios = [x / y for x, y in zip(after, before) if y]
        ratio = statistics.median(round_ratios) if round_ratios else None
        passed = None
        if limit is not None and ratio is not None:
            passed = ratio <= limit if direction == "max" else ratio >= limit
        rows.append({"operation": name, "metric": metric, "unit": unit, "before": b, "after": a, "ratio": ratio,
                     "round_ratios": round_ratios, "limit": limit,
                     "direction": direction, "pass": passed, "before_rounds": before, "after_rounds": after})

    rounds = result["rounds"]
    if rounds and "core" in rounds[0]:
        for op in CORE_OPS:
            for metric in ("p50", "p90"):
                row(op, metric, "ms", [{t: r["core"][t]["ops"][op][metric] for t in TREES} for r in rounds],
                    limit=CORE_LIMITS[op] if metric == "p50" else None)
        for op in CORE_OPS:  # CPU time of the calling thread: for SQLite nearly all the work, for
            # PostgreSQL the client's part; it leaves out waiting for a CPU on a busy machine
            row(op, "cpu p50", "ms", [{t: r["core"][t]["ops"][op]["cpu_p50"] for t in TREES} for r in rounds])
    http_rounds = [r for r in rounds if "http" in r]
    if http_rounds:
        for endpoint in HTTP_ENDPOINTS:
            metrics = [("throughput", "req/s"), ("p50", "ms"), ("p99", "ms")]
            if all(r["http"][t][endpoint]["server_cpu_ms"] for r in http_rounds for t in TREES):
                metrics.append(("server_cpu_ms", "ms"))
            for metric, unit in metrics:
                row(f"HTTP {endpoint}", metric, unit,
                    [{t: r["http"][t][endpoint][metric] for t in TREES} for r in http_rounds],
                    limit=HTTP_MIN_THROUGHPUT if metric == "throughput" else None,
                    direction="min" if metric == "throughput" else "max")
    return rows


METRIC_LABELS = {"server_cpu_ms": "server CPU per request", "cpu p50": "CPU p50"}


def fmt(value, unit) -> str:
    if unit == "req/s":
        return f"{value:.0f}"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def markdown(engine: str, result: dict, settings: dict) -> str:
    label = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[engine]
    versions = result.get("versions", {})
    version = (versions.get("sqlite") or versions.get("postgresql") or "").split(" ")[0]
    lines = [
        f"### {label} {version}".rstrip(),
        "",
        f"A user with {settings['size']:,} observations (one per tree, twins) in a table of "
        f"{result['table_rows']:,} rows; {settings['rounds']} round{'s' if settings['rounds'] != 1 else ''} of new "
        "processes; core: "
        f"{settings['iterations']} timed calls per operation, tree and round, in batches of {settings['batch']} "
        f"taking turns; HTTP ({settings['http_rounds']} of the rounds): {settings['http_seconds']:g} s per "
        f"endpoint, tree and round in slices of "
        f"{settings['http_slice']:g} s taking turns, {settings['http_clients']} connections (one account each, "
        f"{result.get('http_generator', '–')}), gunicorn {GUNICORN_WORKERS} sync workers, {settings['http_warmup']:g} s "
        "warm-up per endpoint and tree. *before*, *after*: medians over rounds; *ratio*: the median of the "
        "per-round ratios after/before (each round times both trees in turns); *rounds*: their range.",
        "",
        "| operation | before | after | ratio after/before | rounds | guard | result |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for r in result["rows"]:
        guard = "–"
        if r["limit"] is not None:
            guard = f"≤ {r['limit']:g}×" if r["direction"] == "max" else f"≥ {r['limit']:g}×"
        verdict = "–" if r["pass"] is None else ("pass" if r["pass"] else "**FAIL**")
        spread = f"{min(r['round_ratios']):.2f}–{max(r['round_ratios']):.2f}" if r["round_ratios"] else "–"
        ratio = f"{r['ratio']:.2f}×" if r["ratio"] is not None else "–"
        lines.append(f"| {r['operation']} {METRIC_LABELS.get(r['metric'], r['metric'])} ({r['unit']}) | "
                     f"{fmt(r['before'], r['unit'])} | "
                     f"{fmt(r['after'], r['unit'])} | {ratio} | {spread} | {guard} | {verdict} |")
    if result["notes"]:
        lines.append("")
        lines += [f"- {note}" for note in result["notes"]]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- run


def check_schema(meta: dict, seen: dict[str, str], when: str) -> None:
    changed = [tree for tree, fingerprint in seen.items() if fingerprint != meta["schema"]]
    if changed:
        raise RuntimeError(f"the database schema changed {when} (seen by: {', '.join(changed)}): a tree altered "
                           "the shared database (a post-migrate hook or a self-repair?); both trees must run on "
                           "the schema the load migrated, or the comparison measures the wrong thing")


def run_engine(engine: str, trees: Trees, args, settings: dict, folder: str) -> dict:
    started = time.monotonic()
    scratch = Scratch(engine, args.pg_url, folder)
    meta = {**scratch.meta, "trees": list(TREES), "size": settings["size"], "http_clients": settings["http_clients"],
            "http_history": settings["http_history"]}
    meta_path = os.path.join(folder, f"meta-{engine}.json")
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    result: dict = {"database": meta["database"], "rounds": [], "notes": []}
    wrk = shutil.which(args.wrk) if args.wrk and "http" in args.phases else None
    script = os.path.join(folder, "compare.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT)
    if "http" in args.phases:
        result["http_generator"] = "wrk" if wrk else "http.client threads"
        if not wrk:
            result["notes"].append("wrk not found: HTTP driven by Python threads, which share the CPUs with the "
                                   "server (lower and noisier throughput than with wrk)")
    try:
        step(f"[{engine}] load ({trees.loader} tree): per tree {settings['size']:,} observations of one user and "
             f"{settings['http_clients']} HTTP accounts × {settings['http_history']:,}")
        trees.run_worker(trees.loader, "load", meta_path)
        with open(meta_path) as f:
            meta = json.load(f)
        result.update(table_rows=meta["table_rows"], load_seconds=meta["load_seconds"], versions=meta["versions"])
        step(f"[{engine}] loaded {meta['table_rows']:,} observations in {meta['load_seconds']:.0f} s")
        for r in range(settings["rounds"]):
            tag = f"r{r}"
            this_round: dict = {}
            http_now = "http" in args.phases and r < settings["http_rounds"]
            workers = {tree: Worker(trees, tree, meta_path) for tree in TREES}
            # The servers start with the workers (all the imports at once, none while timing); they
            # sit idle, without a database connection, until the HTTP phase.
            servers = {tree: Server(trees, tree, meta) for tree in TREES} if http_now else {}
            try:
                for worker in workers.values():
                    worker.read()  # ready
                for server in servers.values():
                    server.wait_until_serving()
                infos = {tree: workers[tree].send("info") for tree in TREES}
                check_schema(meta, {tree: infos[tree]["schema"] for tree in TREES}, "when its worker started")
                if r == 0:
                    result["surface"] = {t: infos[t]["surface"] for t in TREES}
                    result["tree_versions"] = {t: infos[t]["versions"] for t in TREES}
                    result["shape"] = {t: infos[t]["shape"] for t in TREES}
                if "core" in args.phases:
                    step(f"[{engine}] round {r + 1}/{settings['rounds']} core: {settings['iterations']} calls per "
                         f"operation and tree")
                    this_round["core"] = core_round(workers, settings, tag)
                    for tree in TREES:
                        if this_round["core"][tree]["problem_count"]:
                            note = (f"round {r + 1}, {tree}: {this_round['core'][tree]['problem_count']} unexpected "
                                    f"results, e.g. {this_round['core'][tree]['problems'][0]}")
                            result["notes"].append(note)
                            step("WARNING " + note)
                if http_now:
                    step(f"[{engine}] round {r + 1}/{settings['rounds']} HTTP: {settings['http_seconds']:g} s per "
                         f"endpoint and tree ({result['http_generator']})")
                    this_round["http"] = http_round(servers, settings, tag=tag, wrk=wrk, script=script)
                    for tree in TREES:
                        errors = sum(x["errors"] for x in this_round["http"][tree].values())
                        if errors:
                            note = f"round {r + 1}, {tree}: {errors} HTTP requests failed (non-2xx or socket errors)"
                            result["notes"].append(note)
                            step("WARNING " + note)
                check_schema(meta, {tree: workers[tree].send("schema")["schema"] for tree in TREES},
                             f"during round {r + 1}")
                for k, tree in enumerate(TREES):
                    workers[tree].send("reset", vacuum=k == len(TREES) - 1)
            finally:
                for server in servers.values():
                    server.stop()
                for worker in workers.values():
                    worker.close()
            result["rounds"].append(this_round)
    finally:
        scratch.drop()
    if result.get("surface") and result["surface"]["before"] != result["surface"]["after"]:
        changed = sorted(k for k in set(result["surface"]["before"]) | set(result["surface"]["after"])
                         if result["surface"]["before"].get(k) != result["surface"]["after"].get(k))
        result["notes"].append(f"facade signatures differ between the trees: {', '.join(changed)}")
    result["rows"] = summarize(result)
    result["seconds"] = round(time.monotonic() - started, 1)
    step(f"[{engine}] done in {result['seconds']:.0f} s")
    return result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the tree before the change (a checkout or worktree)")
    parser.add_argument("--after", default=".", help="the tree after the change (default: .)")
    parser.add_argument("--engines", default="sqlite,postgresql", help="comma-separated: sqlite,postgresql")
    parser.add_argument("--phases", default="core,http", help="comma-separated: core,http")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK['size']:,} observations, {QUICK['rounds']} rounds, "
                             f"{QUICK['iterations']} calls, {QUICK['http_seconds']} s HTTP")
    parser.add_argument("--size", type=int, help=f"observations of the measured user (default {FULL['size']:,})")
    parser.add_argument("--rounds", type=int, help=f"rounds of new processes (default {FULL['rounds']})")
    parser.add_argument("--http-rounds", type=int,
                        help="rounds that also run the HTTP phase (default: every round; --quick: 1)")
    parser.add_argument("--iterations", type=int,
                        help=f"timed calls per operation, tree and round (default {FULL['iterations']})")
    parser.add_argument("--batch", type=int, help=f"calls per turn of a tree (default {FULL['batch']})")
    parser.add_argument("--http-seconds", type=int, help=f"per endpoint, tree and round (default {FULL['http_seconds']})")
    parser.add_argument("--http-slice", type=int, help=f"seconds per turn of a tree (default {FULL['http_slice']})")
    parser.add_argument("--http-warmup", type=int,
                        help=f"warm-up seconds per endpoint, tree and round (default {FULL['http_warmup']})")
    parser.add_argument("--http-clients", type=int, default=4, help="connections, one account each (default 4)")
    parser.add_argument("--http-history", type=int,
                        help=f"observations per HTTP account (default {FULL['http_history']:,})")
    parser.add_argument("--pg-url", default=os.environ.get("DATABASE_URL") or DEFAULT_PG_URL,
                        help="PostgreSQL server for the scratch database (default: $DATABASE_URL, "
                             f"else {DEFAULT_PG_URL})")
    parser.add_argument("--python", default=sys.executable, help="interpreter for both trees (default: this one)")
    parser.add_argument("--wrk", default="wrk", help="the wrk binary (default: wrk on PATH)")
    parser.add_argument("--after-words-only", action="store_true",
                        help="run the after tree with EMBEDDER None: the change without the vector queue of hybrid search")
    parser.add_argument("--before-settings", default="{}", metavar="JSON",
                        help="ILAB_MEMORY for the before tree's facade and, on PostgreSQL, its site "
                             """(core phase), e.g. '{"PREPARED_STATEMENTS": false}'""")
    parser.add_argument("--json", help="write the raw numbers here")
    args = parser.parse_args(argv)
    try:
        if not isinstance(json.loads(args.before_settings), dict):
            raise ValueError
    except ValueError:
        parser.error("--before-settings must be a JSON object")
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    for engine in args.engines:
        if engine not in ("sqlite", "postgresql"):
            parser.error(f"unknown engine {engine!r}")
    for phase in args.phases:
        if phase not in ("core", "http"):
            parser.error(f"unknown phase {phase!r}")
    for tree in (args.before, args.after):
        if not (Path(tree) / "ilab_memory" / "__init__.py").is_file() or not (Path(tree) / "project").is_dir():
            parser.error(f"{tree!r} is not a tree with ilab_memory/ and project/")
    settings = dict(QUICK if args.quick else FULL)
    for key in ("size", "rounds", "http_rounds", "iterations", "batch", "http_seconds", "http_slice",
                "http_warmup", "http_history"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings["http_clients"] = args.http_clients
    if settings["http_rounds"] is None or settings["http_rounds"] > settings["rounds"]:
        settings["http_rounds"] = settings["rounds"]
    if min(settings["rounds"], settings["iterations"], settings["batch"], settings["http_seconds"],
           settings["http_slice"], settings["http_clients"]) < 1 or settings["size"] < 10:
        parser.error("sizes, counts and seconds must be at least 1 (--size at least 10)")
    return args, settings


def main(argv=None) -> int:
    args, settings = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still run the clean-up (finally, atexit)
    folder = tempfile.mkdtemp(prefix="ilab_cmp_")
    atexit.register(shutil.rmtree, folder, True)
    trees = Trees(args, os.path.join(tempfile.gettempdir(), "ilab_cmp_pycache"))
    identity = {tree: git_identity(trees.paths[tree]) for tree in TREES}
    for tree in TREES:
        t = identity[tree]
        step(f"{tree:<6} {t['path']}  {(t['commit'] or 'not a git tree')[:12]}"
             f"{' + uncommitted changes' if t['dirty'] else ''}")
    names = {tree: migration_names(trees.paths[tree]) for tree in TREES}
    if not names["before"] <= names["after"]:
        sys.exit(f"the before tree has migrations the after tree lacks ({sorted(names['before'] - names['after'])}): "
                 "the comparison runs both trees on one database, migrated by the after tree")
    # The after tree migrates (its schema holds the before tree's: new tables only, which the
    # before tree never reads) and so its writes pay for what it adds.
    trees.loader = "after" if names["after"] - names["before"] else "before"
    output = {"args": {k: v for k, v in vars(args).items() if k != "pg_url"}, "settings": settings,
              "trees": identity, "engines": {}}
    for engine in args.engines:
        output["engines"][engine] = run_engine(engine, trees, args, settings, folder)
    output["seconds"] = round(time.monotonic() - _T0, 1)

    print("## ilab_memory: before vs after\n")
    for tree in TREES:
        t = identity[tree]
        print(f"- {tree}: `{t['path']}` at {(t['commit'] or '?')[:12]}{' + uncommitted changes' if t['dirty'] else ''}")
    if json.loads(args.before_settings):
        print(f"- before tree's facade with `ILAB_MEMORY` overrides `{args.before_settings}` (core phase)")
    if args.after_words_only:
        print("- after tree with `EMBEDDER = None` (words only)")
    print(f"- run time {output['seconds'] / 60:.1f} min"
          + "".join(f"; {e} {r['seconds'] / 60:.1f} min (load {r['load_seconds']:.0f} s)"
                    for e, r in output["engines"].items()) + "\n")
    failed = []
    for engine, result in output["engines"].items():
        print(markdown(engine, result, settings))
        failed += [f"{engine} {r['operation']} {r['metric']} {r['ratio']:.2f}×" for r in result["rows"]
                   if r["pass"] is False]
    guards = sum(1 for result in output["engines"].values() for r in result["rows"] if r["pass"] is not None)
    print(f"**{guards - len(failed)} of {guards} guards pass**" + (": failed " + "; ".join(failed) if failed else "."))
    if args.quick:
        print("\n(--quick is a smoke test of the mechanics: too few calls and seconds for the verdicts to mean "
              "anything; the exit status ignores them.)")
    output["failed"] = failed
    if args.json:
        with open(args.json, "w") as f:
            json.dump(output, f, indent=1)
    return 1 if failed and not args.quick else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:  # a worker, server or check failed: 2, not a guard's 1
        print(f"compare: {error}", file=sys.stderr)
        sys.exit(2)
