"""What Prometheus metrics add to a save's and a search's p50: the same calls with ``METRICS``
on and off, in turns (each turn flips which goes first), on an embedded SQLite file.

    PYTHONPATH=. .venv/bin/python benchmarks/metrics_overhead.py [--turns 400] [--memories 2000] [--semantic]

Words only by default (no embedder): the cheapest save and search, so the metrics' share is the
largest it gets; ``--semantic`` embeds each query with the default model, as sites do. Not part
of the test suite: it prints its figures, and docs/deploy.md keeps the last ones.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from benchmarks.perf_timing import sample

WORDS = [
    "tea", "coffee", "deploy", "gunicorn", "postgres", "cats", "dogs", "python", "django", "memory", "agent", "search",
    "vector", "summary", "session", "garden", "music", "travel", "budget", "invoice", "meeting",
    "alice", "bob", "carol",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--semantic", action="store_true")
    args = parser.parse_args()

    from ilab_memory import ILabMemory, metrics

    folder = tempfile.mkdtemp(prefix="ilab_memory_metrics_")
    # No runner: a thread embedding beside the timed calls would be noise of its own.
    mem = ILabMemory.from_path(Path(folder) / "mem.db", embedding_runner=None,
                               embedder="default" if args.semantic else None)
    from django.test import override_settings

    assert metrics.prometheus_client is not None, "install the metrics extra (prometheus-client)"
    rng = random.Random(45)
    for i in range(args.memories):
        mem.mem_save(f"user{i % 20}", " ".join(rng.sample(WORDS, 3)), " ".join(rng.sample(WORDS, 12)))
    modes = {"on": override_settings(ILAB_MEMORY={"METRICS": True}),
             "off": override_settings(ILAB_MEMORY={"METRICS": False})}
    times = {(mode, op): [] for mode in modes for op in ("save", "search")}

    def run(mode: str, turn: int) -> None:
        user = f"user{turn % 20}"
        with modes[mode]:
            start = time.perf_counter()
            mem.mem_save(user, f"Note {turn} {mode}", " ".join(rng.sample(WORDS, 12)))
            times[mode, "save"].append(time.perf_counter() - start)
            query = " ".join(rng.sample(WORDS, 2))
            start = time.perf_counter()
            mem.mem_search(user, query)
            times[mode, "search"].append(time.perf_counter() - start)

    for turn in range(args.turns):
        for mode in (("on", "off") if turn % 2 else ("off", "on")):
            run(mode, turn)
    # The instrument alone, around an empty body: what the metrics add to any call, without the
    # noise of a shared machine that the p50s above carry.
    alone = {}
    for mode in ("off", "on"):
        with modes[mode]:
            start = time.perf_counter()
            for _ in range(20_000):
                with metrics.timed("save"):
                    pass
            alone[mode] = (time.perf_counter() - start) / 20_000 * 1e6
    print(f"the timing alone: off {alone['off']:.1f} µs, on {alone['on']:.1f} µs per call")
    for op in ("save", "search"):
        on, off = sample(times["on", op])["p50"], sample(times["off", op])["p50"]
        added = (alone["on"] - alone["off"]) / 1000 / off * 100
        print(f"{op:6} p50  off {off:7.3f} ms   on {on:7.3f} ms   {100 * (on - off) / off:+5.1f} %  "
              f"({args.turns} turns; the timing alone: {added:.2f} % of off's p50)")


if __name__ == "__main__":
    main()
