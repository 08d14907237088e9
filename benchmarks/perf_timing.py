"""Latency samples (p50/p95) and a progress line for long data generation."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Sample:
    """Latencies of one operation, in milliseconds."""

    n: int
    p50: float
    p95: float
    mean: float
    # Median CPU time of the calling thread. On a shared machine wall time includes waiting for
    # a CPU; thread CPU time does not. It covers SQLite's work (in-process) but not PostgreSQL's
    # (another process), so it is a load-independent view for SQLite only.
    cpu_p50: float | None = None

    @classmethod
    def of(cls, seconds: list[float], cpu_seconds: list[float] | None = None) -> "Sample":
        ms = sorted(s * 1000 for s in seconds)
        p95 = statistics.quantiles(ms, n=20, method="inclusive")[18] if len(ms) > 1 else ms[0]
        cpu = statistics.median(c * 1000 for c in cpu_seconds) if cpu_seconds else None
        return cls(n=len(ms), p50=statistics.median(ms), p95=p95, mean=statistics.fmean(ms), cpu_p50=cpu)


def measure(
    fn: Callable[[int], object],
    *,
    iterations: int,
    warmup: int = 3,
    before: Callable[[int], object] | None = None,
    cpu_clock: Callable[[], float] = time.thread_time,
) -> Sample:
    """Time ``fn(i)`` ``iterations`` times after ``warmup`` untimed calls.

    ``before(i)`` runs untimed ahead of each call (e.g. to end the session a "new" start needs).
    ``cpu_clock``: the calling thread's CPU time by default; ``time.process_time`` also counts
    the threads a call starts (the embedding model's OpenMP threads).
    """
    times, cpu_times = [], []
    for i in range(warmup + iterations):
        if before is not None:
            before(i)
        started, cpu_started = time.perf_counter(), cpu_clock()
        fn(i)
        elapsed, cpu = time.perf_counter() - started, cpu_clock() - cpu_started
        if i >= warmup:
            times.append(elapsed)
            cpu_times.append(cpu)
    return Sample.of(times, cpu_times)


def measure_interleaved(
    calls: dict[str, Callable[[int], object]],
    *,
    iterations: int,
    warmup: int = 3,
    before: dict[str, Callable[[int], object]] | None = None,
    cpu_clock: Callable[[], float] = time.thread_time,
) -> dict[str, Sample]:
    """Time several calls in turns (a, b, c, b, c, a, …), ``iterations`` times each.

    On a shared machine a slow minute then hits every contender alike, instead of whichever
    happened to run during it, so the ratios between them hold still. ``before[name](i)`` runs
    untimed ahead of that call, as in ``measure``; ``cpu_clock`` as in ``measure``.
    """
    before = before or {}
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu_times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(warmup + iterations):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            if name in before:
                before[name](i)
            started, cpu_started = time.perf_counter(), cpu_clock()
            calls[name](i)
            elapsed, cpu = time.perf_counter() - started, cpu_clock() - cpu_started
            if i >= warmup:
                times[name].append(elapsed)
                cpu_times[name].append(cpu)
    return {name: Sample.of(times[name], cpu_times[name]) for name in names}


class Progress:
    """``label  n/total  pct  rows/s`` on one terminal line, redrawn at most 5 times a second."""

    def __init__(self, label: str, total: int, stream=sys.stderr):
        self.label, self.total, self.stream = label, total, stream
        self.done = 0
        self.started = self.last_drawn = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last_drawn >= 0.2 or self.done >= self.total:
            self.last_drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.done / max(now - self.started, 1e-9)
        pct = 100 * self.done / max(self.total, 1)
        self.stream.write(f"\r  {self.label:<28} {self.done:>9,}/{self.total:,} {pct:5.1f}%  {rate:>9,.0f}/s")
        self.stream.flush()

    def finish(self, note: str = "") -> None:
        self._draw(time.monotonic())
        elapsed = time.monotonic() - self.started
        self.stream.write(f"  {elapsed:6.1f}s {note}\n")
        self.stream.flush()


def step(message: str) -> None:
    """A one-line note on stderr, so stdout stays the results."""
    sys.stderr.write(f"  {message}\n")
    sys.stderr.flush()
