"""MCP tool calls over HTTP next to the DRF endpoint for the same operation: same server, same run.

``python -m benchmarks.perf_mcp [--seconds 10] [--workers 2] [--clients 4]`` (SQLite by default;
``DATABASE_URL`` for PostgreSQL). One uvicorn serving ``project.asgi:application`` (DEBUG off)
answers both faces: the API at ``/api/memory/`` and MCP at ``/mcp/``. The data is the HTTP
benchmark's (``benchmarks.perf_http.prepare``: one account and token per client, 1,000
observations each). The load generator is this process: one thread per client, each with its own
``http.client`` connection and token, one request after another for a fixed time (capped in
count), operation by operation, alternating the two faces. MCP requests are what a connected
client sends for a call on the stateless endpoint: one POST of a ``tools/call`` message (built
with the SDK's own types), answered with one JSON body. Throughput is completed calls per second
of wall time; latency is per call, as the client sees it. Clients and server share the machine.
Target (issue 15): each MCP tool at least 70 % of the matching endpoint's throughput.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from urllib.parse import quote

from .perf_env import create_scratch
from .perf_http import ROOT, Budget, _free_port

MAX_REQUESTS = 5_000  # per operation and face, across clients
TARGET = 0.70


def mcp_body(i: int, tool: str, arguments: dict) -> str:
    import mcp_types

    request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=i, method="tools/call",
                                       params={"name": tool, "arguments": arguments})
    return request.model_dump_json(by_alias=True, exclude_none=True)


def operations():
    """(name, DRF request(i, k, account), MCP (tool, arguments)(i, k, account)).

    Saving comes last: a search first embeds the memories saved since the last one (inline
    embedding mode), which would be timed as search otherwise.
    """
    return [
        ("start", lambda i, k, a: ("POST", "/api/memory/sessions/start/", "{}"),
         lambda i, k, a: ("mem_session_start", {})),
        ("search (rare term)", lambda i, k, a: ("GET", f"/api/memory/observations/search/?q={quote(a['rare'])}", None),
         lambda i, k, a: ("mem_search", {"query": a["rare"]})),
        ("context", lambda i, k, a: ("GET", "/api/memory/context/", None),
         lambda i, k, a: ("mem_context", {})),
        ("save", lambda i, k, a: ("POST", "/api/memory/observations/", json.dumps(
            {"title": f"drf {k} {i}", "content": f"client {k} wrote note {i} about the service"})),
         lambda i, k, a: ("mem_save", {"title": f"mcp {k} {i}", "content": f"client {k} wrote note {i} about the service"})),
    ]


class Caller(threading.Thread):
    def __init__(self, port, request, *, deadline, budget):
        super().__init__(daemon=True)
        self.port, self.request, self.deadline, self.budget = port, request, deadline, budget
        self.latencies: list[float] = []
        self.errors = 0

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        i = 0
        while time.monotonic() < self.deadline and self.budget.take():
            method, path, body, headers, check = self.request(i)
            started = time.perf_counter()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                payload = response.read()
                ok = check(response.status, payload)
            except (OSError, http.client.HTTPException):
                connection.close()
                ok = False
            self.latencies.append(time.perf_counter() - started)
            self.errors += not ok
            i += 1
        connection.close()


def drf_request(make, k, account):
    def request(i):
        method, path, body = make(i, k, account)
        headers = {"Accept": "application/json", "Authorization": f"Token {account['token']}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return method, path, body, headers, lambda status, payload: 200 <= status < 300

    return request


def mcp_request(make, k, account):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25", "Authorization": f"Bearer {account['token']}"}

    def check(status, payload):
        if status != 200:
            return False
        answer = json.loads(payload)
        return "result" in answer and not answer["result"].get("isError")

    def request(i):
        tool, arguments = make(i, k, account)
        return "POST", "/mcp/", mcp_body(i, tool, arguments), headers, check

    return request


def load(port, accounts, make, face, *, seconds) -> dict:
    budget = Budget(MAX_REQUESTS)
    started = time.monotonic()
    callers = [Caller(port, face(make, k, a), deadline=started + seconds, budget=budget)
               for k, a in enumerate(accounts)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    elapsed = time.monotonic() - started
    ms = sorted(t * 1000 for c in callers for t in c.latencies)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return {"calls": len(ms), "errors": sum(c.errors for c in callers), "throughput": len(ms) / elapsed,
            "p50": statistics.median(ms), "p99": cuts[98]}


def warm_up(port: int, accounts: list[dict]) -> None:
    """One untimed search per account: it embeds the account's pending memories (inline mode)."""
    for account in accounts:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        connection.request("GET", f"/api/memory/observations/search/?q={quote(account['rare'])}",
                           headers={"Authorization": f"Token {account['token']}"})
        connection.getresponse().read()
        connection.close()


def wait_until_serving(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/memory/context/")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("uvicorn did not start serving in time")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf_mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="time per operation and face")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--clients", type=int, default=4, help="client threads")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    scratch = create_scratch("mcp")
    env = {**scratch.env(), "DJANGO_DEBUG": "0", "DJANGO_SETTINGS_MODULE": "project.settings"}
    prepared = subprocess.run([sys.executable, "-m", "benchmarks.perf_http", "prepare", str(args.clients)],
                              cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True)
    accounts = json.loads(prepared.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(args.workers), "--log-level", "warning", "--no-access-log"],
        cwd=ROOT, env=env,
    )
    results = []
    try:
        wait_until_serving(port)
        warm_up(port, accounts)
        print(f"uvicorn: {args.workers} workers, {scratch.vendor}; {args.clients} client threads, "
              f"{args.seconds:g}s or {MAX_REQUESTS} calls per operation and face", file=sys.stderr)
        for name, drf, mcp in operations():
            for face, make, kind in (("DRF", drf, drf_request), ("MCP", mcp, mcp_request)):
                result = {"operation": name, "face": face, **load(port, accounts, make, kind, seconds=args.seconds)}
                results.append(result)
                print(f"  {name:<20} {face}  {result['calls']:>6} calls  {result['throughput']:7.1f}/s  "
                      f"p50 {result['p50']:7.2f} ms  p99 {result['p99']:7.2f} ms  errors {result['errors']}",
                      file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=30)

    print("\n| operation | DRF calls/s | DRF p50 / p99 ms | MCP calls/s | MCP p50 / p99 ms | MCP / DRF |")
    print("|---|---|---|---|---|---|")
    failed = False
    for drf, mcp in zip(results[::2], results[1::2]):
        ratio = mcp["throughput"] / drf["throughput"] if drf["throughput"] else 0.0
        failed |= ratio < TARGET or bool(drf["errors"] or mcp["errors"])
        print(f"| {drf['operation']} | {drf['throughput']:.0f} | {drf['p50']:.1f} / {drf['p99']:.1f} | "
              f"{mcp['throughput']:.0f} | {mcp['p50']:.1f} / {mcp['p99']:.1f} | {ratio:.0%} |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"vendor": scratch.vendor, "workers": args.workers, "clients": args.clients,
                       "results": results}, out, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
