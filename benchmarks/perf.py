"""How fast ilab_memory is for its users: p50/p95, throughput, growth with the history.

    .venv/bin/python -m benchmarks.perf                                   # every phase on SQLite
    DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.perf   # SQLite, then PostgreSQL
    .venv/bin/python -m benchmarks.perf --phases writes --json out.json   # one phase, figures also as JSON
    .venv/bin/python -m benchmarks.perf --quick                           # small sizes, a minute or two

Phases (``perf_core``, ``perf_hybrid``, ``perf_http``, ``perf_client``): ``writes`` (start, save,
revise, end), ``reads`` (context, words-only search), ``scopes`` (the same calls in the shared
space and in a scope, side by side), ``hybrid`` (search with the query embedded, searches
during an embedding backlog, embedding throughput), ``http`` (the API through the WSGI handler,
its reads beside DRF's generic views), ``client`` (``MemoryClient``'s save and search against
the site under uvicorn, beside the same requests over raw urllib). Each phase runs on each
engine in a process of its own, on a new database; with ``DATABASE_URL`` set, both engines run
in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

PHASES = ("writes", "reads", "scopes", "hybrid", "http", "client")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated: " + ", ".join(PHASES))
    parser.add_argument("--engines",
                        help="sqlite,postgresql (default: sqlite, and postgresql when DATABASE_URL is set)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    parser.add_argument("--sizes", help="memories of the measured users (default 100,10000)")
    parser.add_argument("--iterations", type=int, help="timed calls of each operation (default 200)")
    parser.add_argument("--backlog", type=int, help="hybrid: memories saved in a row, then searched (300)")
    parser.add_argument("--embed-memories", type=int, help="hybrid: memories embedded for throughput (200)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--phase", help=argparse.SUPPRESS)  # in a child: run this phase here
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default_sizes = [100, 2_000] if args.quick else [100, 10_000]
    args.sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else default_sizes
    args.iterations = args.iterations or (30 if args.quick else 200)
    args.backlog = args.backlog or (40 if args.quick else 300)
    args.embed_memories = args.embed_memories or (20 if args.quick else 200)
    default = "sqlite,postgresql" if os.environ.get("DATABASE_URL") else "sqlite"
    args.engines = (args.engines or default).split(",")
    return args


def run_phase(args) -> dict:
    """In the child: a new database, then one phase's figures."""
    from . import perf_env

    if args.phase == "http":
        perf_env.site()
        from . import perf_http

        results = perf_http.run(iterations=args.iterations)
    elif args.phase == "client":
        perf_env.site(embedder=False)
        from . import perf_client

        results = perf_client.run(iterations=args.iterations)
    elif args.phase == "hybrid":
        from . import perf_hybrid

        mem = perf_env.library()
        results = perf_hybrid.run(mem, sizes=args.sizes, iterations=max(20, args.iterations // 4),
                                  backlog=args.backlog, embed_memories=args.embed_memories)
    else:
        from . import perf_core

        mem = perf_env.library(embedding_runner=None)
        perf_core.load(args.sizes, scoped=args.phase == "scopes")
        measure = {"writes": perf_core.writes, "reads": perf_core.reads, "scopes": perf_core.scopes}[args.phase]
        results = measure(mem, sizes=args.sizes, iterations=args.iterations)
    return {"phase": args.phase, "versions": perf_env.versions(), "results": results}


def in_child(phase: str, engine: str, argv: list[str]) -> dict:
    env = dict(os.environ)
    if engine == "sqlite":
        env.pop("DATABASE_URL", None)
    elif not env.get("DATABASE_URL"):
        raise SystemExit("postgresql: set DATABASE_URL to a server where databases can be created")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # the model's threads sleep between calls
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    try:
        subprocess.run([sys.executable, "-m", "benchmarks.perf", *argv, "--phase", phase, "--out", out],
                       env=env, check=True)
        with open(out) as result:
            return json.load(result)
    finally:
        os.unlink(out)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.phase:
        with open(args.out, "w") as out:
            json.dump(run_phase(args), out)
        return 0
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        print(f"unknown phase(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    runs = []
    for engine in args.engines:
        for phase in phases:
            print(f"== {phase} on {engine} ==", file=sys.stderr)
            runs.append({"engine": engine, **in_child(phase, engine, argv)})
    from .perf_report import render

    print(render(runs))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(runs, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
