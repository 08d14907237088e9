"""The expiry sweep over a large store: how fast it erases, and how long each of its transactions
holds the database (SQLite's write lock, PostgreSQL's row locks) while other users work.

    python -m benchmarks.perf_expiry                       # SQLite file, 100,000 memories
    DATABASE_URL=postgres://USER@HOST:5432/DB python -m benchmarks.perf_expiry   # PostgreSQL
    python -m benchmarks.perf_expiry --memories 20000      # smaller

One engine per run, on a new database (``perf_env``). ``--memories`` memories of ``--users``
users are written in bulk through the ORM (the search index fills as it would): 45 % of type
"conversation" last written 120 days ago under a ``RETENTION`` of 90 days, 45 % past their
``expires_at``, 10 % live; every memory has a stored vector (384 dimensions, as the default
model's), one in five an earlier revision. A reader of 1,000 live memories searches (words
only) before and during the sweep, and a writer saves a memory of its own during it, each in a
thread of its own with its own connection.

Every transaction of the sweep is timed from its start to its commit: a batch of
``services.expiry.BATCH_SIZE`` memories, and on SQLite the search index's merge steps after
them. The longest is the longest time another writer waits for the lock (the target: at most a
second).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
import time
from datetime import timedelta

from .perf_data import analyze, random_vectors, write_history
from .perf_timing import sample, step

RETENTION = {"conversation": timedelta(days=90)}
DIMENSIONS = 384
BUILD_BATCH = 2_000
READER = "reader"
WRITER = "writer"
SAVE_EVERY = 0.05  # seconds between the writer's saves


def write_expiring(users: int, memories: int) -> dict[str, int]:
    """The swept users' memories, in bulk; returns how many of each kind."""
    from django.db import transaction
    from django.utils import timezone

    from ilab_memory.models import Observation, ObservationRevision, ObservationVector, Session, SessionStatus

    rng = random.Random(7)
    now = timezone.now()
    written = now - timedelta(days=120)
    kinds = {"retention": 0, "expires_at": 0, "live": 0}
    per_user = memories // users
    for u in range(users):
        user_id = f"swept-{u}"
        for start in range(0, per_user, BUILD_BATCH):
            with transaction.atomic():
                session = Session.objects.create(user_id=user_id, status=SessionStatus.COMPLETED, started_at=written,
                                                 last_activity_at=written, ended_at=written, summary="bench")
                observations = []
                for j in range(start, min(start + BUILD_BATCH, per_user)):
                    roll = rng.random()
                    kind = "retention" if roll < 0.45 else "expires_at" if roll < 0.9 else "live"
                    kinds[kind] += 1
                    observations.append(Observation(
                        user_id=user_id, session=session, type="conversation" if kind == "retention" else "manual",
                        title=f"Conversation snippet {j}", content=f"We talked about the trip, item {j} of {user_id}.",
                        dedupe_hash=hashlib.sha256(f"{user_id}:{j}".encode()).hexdigest(),
                        created_at=written, updated_at=written, last_seen_at=written, happened_at=written,
                        expires_at=now - timedelta(hours=1) if kind == "expires_at" else None,
                    ))
                Observation.objects.bulk_create(observations)
                ObservationVector.objects.bulk_create(
                    random_vectors(observations, "bench:384", DIMENSIONS, now=now, rng=rng))
                ObservationRevision.objects.bulk_create([
                    ObservationRevision(observation=o, user_id=user_id, revision=1, type=o.type, title=o.title,
                                        content="an earlier version", happened_at=written, written_at=written,
                                        replaced_at=written)
                    for o in observations[::5]])
        step(f"built {user_id}")
    return kinds


class Timed:
    """``services.expiry.atomic_with_retry`` with a stopwatch: each of the sweep's transactions
    from its start to its commit, sorted into batches (they return a count) and merge steps."""

    def __init__(self, real):
        self.real, self.batches, self.merges = real, [], []

    def __call__(self, fn, *, using):
        began = []

        def timed_fn():
            began.append(time.perf_counter())  # the transaction has begun: on SQLite, the lock is held
            return fn()

        result = self.real(timed_fn, using=using)
        (self.merges if isinstance(result, bool) else self.batches).append(time.perf_counter() - began[-1])
        return result


class Loop(threading.Thread):
    """Calls ``call`` until stopped, timing each call, on a database connection of its own."""

    def __init__(self, call):
        super().__init__(daemon=True)
        self.call, self.times, self.stop = call, [], threading.Event()

    def run(self):
        from django.db import connections

        try:
            i = 0
            while not self.stop.is_set():
                started = time.perf_counter()
                self.call(i)
                self.times.append(time.perf_counter() - started)
                i += 1
        finally:
            connections.close_all()


def figures(name: str, seconds: list[float]) -> str:
    got = sample(seconds)
    return (f"- {name}: {got['n']} calls, p50 {got['p50']:.2f} ms, p95 {got['p95']:.2f} ms, "
            f"max {max(seconds) * 1000:.1f} ms")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf_expiry", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)

    from .perf_env import library, versions

    mem = library(embedding_runner=None, embedder=None, retention=RETENTION)
    from ilab_memory.models import Observation
    from ilab_memory.services import expiry

    step("building")
    started = time.perf_counter()
    kinds = write_expiring(args.users, args.memories)
    write_history(READER, 1_000)
    analyze()
    step(f"built in {time.perf_counter() - started:.0f} s: {kinds}")

    def search(i):
        mem.mem_search(READER, "service")

    def save(i):
        mem.mem_save(WRITER, f"Note {i}", f"Written while the sweep runs, {i}.")
        time.sleep(SAVE_EVERY)  # a busy user's pace, not a flood that starves the sweep

    before = Loop(search)
    before.start()
    time.sleep(5)
    before.stop.set()
    before.join()

    timed = Timed(expiry.atomic_with_retry)
    expiry.atomic_with_retry = timed
    checkpoints = []
    real_checkpoint = expiry.checkpoint_wal

    def checkpoint(using):
        started = time.perf_counter()
        real_checkpoint(using)
        checkpoints.append(time.perf_counter() - started)

    expiry.checkpoint_wal = checkpoint
    reader, writer = Loop(search), Loop(save)
    reader.start()
    writer.start()
    started = time.perf_counter()
    erased = mem.mem_erase_expired()
    elapsed = time.perf_counter() - started
    for thread in (reader, writer):
        thread.stop.set()
        thread.join()
    expired = kinds["retention"] + kinds["expires_at"]
    assert erased == expired, (erased, expired)
    assert Observation.objects.filter(user_id__startswith="swept-").count() == kinds["live"]

    result = {
        "versions": versions(),
        "memories": args.memories, "erased": erased, "seconds": elapsed, "rows_per_second": erased / elapsed,
        "batch_size": expiry.BATCH_SIZE, "batches": len(timed.batches),
        "longest_batch_ms": max(timed.batches) * 1000, "batch": sample(timed.batches),
        "checkpoint_ms": checkpoints[0] * 1000 if checkpoints else None, "merge_steps": len(timed.merges),
        "longest_merge_step_ms": max(timed.merges, default=0) * 1000,
        "search_before": sample(before.times), "search_during": sample(reader.times),
        "save_during": sample([t - SAVE_EVERY for t in writer.times]),
    }
    print(f"## Expiry sweep ({result['versions']['engine']}, load {result['versions']['load']})\n")
    print(f"- erased {erased:,} of {args.memories:,} memories in {elapsed:.1f} s: "
          f"{result['rows_per_second']:,.0f} memories/s")
    print(f"- {len(timed.batches)} batches of {expiry.BATCH_SIZE}: p50 {result['batch']['p50']:.0f} ms, "
          f"longest {result['longest_batch_ms']:.0f} ms")
    if timed.merges:
        print(f"- {len(timed.merges)} search index merge steps, longest {result['longest_merge_step_ms']:.0f} ms")
    if checkpoints:
        print(f"- the write-ahead log's checkpoint after them: {checkpoints[0] * 1000:.0f} ms")
    print(figures("search of another user before the sweep", before.times))
    print(figures("the same search during the sweep", reader.times))
    print(figures(f"save of another user during the sweep (one every {SAVE_EVERY * 1000:.0f} ms)",
                  [t - SAVE_EVERY for t in writer.times]))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
