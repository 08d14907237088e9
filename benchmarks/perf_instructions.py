"""Instructions per HTTP request, counted by callgrind: each endpoint next to the bare DRF floor.

    ILAB_MEMORY_EMBEDDER= .venv/bin/python -m benchmarks.perf_instructions [--requests 100] [--only NAME,...]
    ILAB_MEMORY_EMBEDDER= DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.perf_instructions

Throughput ratios (``perf_http``) move with a shared machine's load; an instruction count does
not: the same code, inputs and environment count the same whatever else runs. So this is the
before/after measure of a change to a face or a service. Each endpoint of ``perf_http`` (same
data, same requests, same bodies) runs through the WSGI application gunicorn serves there
(``benchmarks.perf_http_floor``: the demo site with the floor routes) in a process under
``valgrind --tool=callgrind``, twice: ``WARM + N`` and ``WARM + 3N`` requests. The difference
over ``2N`` is one request's count, with start-up and warm-up cancelled out.

What is counted is the Python process alone: not gunicorn's HTTP parsing (the same for every
endpoint, about half the floor's count again), and on PostgreSQL not the server's own work
(``perf_http`` reads its CPU). The ratio is the floor's count over the endpoint's; needs
valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .perf_env import create_scratch
from .perf_http import FLOORS, OWN_WAY, ROOT, scenarios
from .perf_timing import step

WARM = 30


def slug(name: str) -> str:
    """A scenario's name on the command line: "GET context/" is ``get-context``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def every_scenario() -> dict:
    """Every perf_http scenario (the list's own-way floor included), by ``slug``."""
    return {slug(s[0]): s for s in (*scenarios(), *OWN_WAY.values())}


def drive(name: str, count: int, accounts_file: str) -> None:
    """In the counted process: ``WARM + count`` requests of ``name`` through the WSGI handler."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    from .perf_http_floor import application

    _, method, body, path_of = every_scenario()[name]
    accounts = json.loads(Path(accounts_file).read_text())
    for n in range(WARM + count):
        k = n % len(accounts)
        path, _, query = path_of(accounts[k]).partition("?")
        # perf_http's template (run tag, account, request number, …); a fixed body has no fields.
        data = (body % (f"i{os.getpid()}", k, n, k, n) if "%" in body else body).encode()
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr, "CONTENT_LENGTH": str(len(data)), "HTTP_ACCEPT": "application/json",
            "HTTP_AUTHORIZATION": f"Token {accounts[k]['token']}",
        }
        if body:
            environ["CONTENT_TYPE"] = "application/json"
        statuses = []
        content = b"".join(application(environ, lambda status, headers, exc_info=None: statuses.append(status)))
        if not statuses[0].startswith("2"):
            raise SystemExit(f"{name}: {statuses[0]} {content[:200]!r}")


def counted(name: str, count: int, accounts_file: str, env: dict) -> int:
    """Instructions of one process driving ``WARM + count`` requests of ``name``."""
    command = [sys.executable, "-m", "benchmarks.perf_instructions", "drive", name, str(count), accounts_file]
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def per_request(name: str, requests: int, accounts_file: str, env: dict) -> int:
    # Once outside valgrind first: writes the bytecode caches, which the counted runs then share.
    subprocess.run([sys.executable, "-m", "benchmarks.perf_instructions", "drive", name, "1", accounts_file],
                   cwd=ROOT, env=env, check=True)
    few, more = counted(name, requests, accounts_file, env), counted(name, 3 * requests, accounts_file, env)
    return round((more - few) / (2 * requests))


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf_instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100, help="N: the counted runs drive N and 3N requests")
    parser.add_argument("--only", help=f"comma-separated, from: {', '.join(every_scenario())}")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    known = every_scenario()
    names = args.only.split(",") if args.only else list(known)
    unknown = sorted(set(names) - set(known))
    if unknown:
        parser.error(f"unknown endpoints: {', '.join(unknown)}")

    scratch = create_scratch("instructions")
    env = {**scratch.env(), "DJANGO_DEBUG": "0", "DJANGO_SETTINGS_MODULE": "project.settings"}
    prepared = subprocess.run([sys.executable, "-m", "benchmarks.perf_http", "prepare", "16"],
                              cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as accounts:
        accounts.write(prepared.stdout.strip().splitlines()[-1])
    try:
        counts = {}
        for name in names:
            counts[name] = per_request(name, args.requests, accounts.name, env)
            step(f"{name:<14} {counts[name]:>12,} instructions per request")
    finally:
        os.unlink(accounts.name)

    floors = {method: slug(floor) for method, floor in FLOORS.items()}
    own_way = {slug(name): slug(own[0]) for name, own in OWN_WAY.items()}
    rows = []
    for name in names:
        method = known[name][1]
        floor = counts.get(floors[method]) if name not in floors.values() and name not in own_way.values() else None
        own = counts.get(own_way.get(name, ""))
        rows.append({"endpoint": known[name][0], "name": name, "instructions": counts[name],
                     "floor_ratio": floor / counts[name] if floor else None,
                     "own_way_ratio": own / counts[name] if own else None})
    print(f"\n### Instructions per request ({scratch.vendor}; the Python process only)\n")
    print("| endpoint | instructions | floor ÷ endpoint | DRF's own way ÷ endpoint |")
    print("|---|---:|---:|---:|")
    for row in rows:
        cells = [f"{row[key]:.2f}" if row[key] else "–" for key in ("floor_ratio", "own_way_ratio")]
        print(f"| {row['endpoint']} | {row['instructions']:,} | {cells[0]} | {cells[1]} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"vendor": scratch.vendor, "results": rows}, indent=2))
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["drive"]:
    drive(sys.argv[2], int(sys.argv[3]), sys.argv[4])
elif __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
