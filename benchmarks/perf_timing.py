"""Latency samples (p50/p95) of calls timed in turns, and progress notes on stderr."""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable


def sample(seconds: list[float]) -> dict:
    """p50, p95, p99 and mean in milliseconds, and the throughput of one caller (calls per second)."""
    ms = sorted(s * 1000 for s in seconds)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    mean = statistics.fmean(ms)
    return {"n": len(ms), "p50": statistics.median(ms), "p95": cuts[94], "p99": cuts[98], "mean": mean,
            "per_second": 1000 / mean}


def measure(calls: dict[str, Callable[[int], object]], *, iterations: int, warmup: int = 3,
            rotate: bool = True) -> dict[str, dict]:
    """Time each call ``iterations`` times, all of them in turns, each turn in a new order
    (shuffled with a fixed seed).

    The machine is shared and its speed drifts within a minute: taking turns makes a slow moment
    hit every contender alike, so their ratios hold still. The order changes so that no call
    always follows the same one: a call right after a heavy one (a common-term search over
    10,000 memories) runs on cold caches, and a fixed neighbour made that a call's own cost.
    ``rotate=False`` keeps the listed order in every turn, for calls that depend on each other
    (a session's start before its save).
    """
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    rng = random.Random(0)
    for i in range(warmup + iterations):
        order = rng.sample(names, len(names)) if rotate else names
        for name in order:
            started = time.perf_counter()
            calls[name](i)
            if i >= warmup:
                times[name].append(time.perf_counter() - started)
    return {name: sample(times[name]) for name in names}


def step(message: str) -> None:
    """A note on stderr, so stdout stays the report."""
    sys.stderr.write(f"  {message}\n")
    sys.stderr.flush()


def line(name: str, got: dict) -> str:
    return f"{name:<40} p50 {got['p50']:8.2f} ms  p95 {got['p95']:8.2f} ms  {got['per_second']:8.1f}/s"
