"""One user among many: the same user's reads and writes timed alone and among other users, in turns.

    python -m benchmarks.scale --alone URL_OR_FILE --crowd URL_OR_FILE [--iterations 30]

Both databases are loaded first by ``benchmarks.scale_data`` with the same ``--memories``: the
one named ``--alone`` with ``--users 1``, the other with as many users as the run is about.
Its user ``user-00000`` is then the same 1,000 memories in both, and each operation runs on
one database, then the other, ``--iterations`` times, so a busy machine slows both alike.
Reported: p50 and p95 in ms of each, and the ratio crowd / alone (the targets of
docs/scaling.md: reads ≤ 1.5× at p50 and ≤ 2× at p95, writes ≤ 1.2×).

A PostgreSQL argument is a URL (``postgres://…``), anything else a SQLite file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter

from .scale_data import FIRST_USER, Writer, database_settings

USER = FIRST_USER


def setup(alone: str, crowd: str) -> None:
    import django
    from django.conf import settings

    def settings_for(where: str) -> dict:
        return database_settings(where, None) if "://" in where else database_settings(None, where)

    settings.configure(
        INSTALLED_APPS=["ilab_memory"], USE_TZ=True, TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        DATABASES={"default": settings_for(alone), "crowd": settings_for(crowd)},
        ILAB_MEMORY={"EMBEDDING_RUNNER": None},
    )
    django.setup()


def query_words(memories: int) -> dict[str, str]:
    """Words of the user's own memories: one in a few of them, three of about 2 % each, and the
    most common one (in most of them)."""
    frequency = Counter()
    for title, content in Writer().texts(0, memories):
        frequency.update({word.strip(".").lower() for word in f"{title} {content}".split()})
    ranked = frequency.most_common()
    rare = next(word for word, n in reversed(ranked) if n >= 2 and len(word) > 4 and word.isalpha())
    middle = [word for word, n in ranked if 0.015 * memories <= n <= 0.03 * memories and word.isalpha()]
    return {"rare term": rare, "three words": " ".join(middle[:3]), "common term": ranked[0][0]}


def operations(memories: int) -> dict:
    """{name: operation(mem, words_only_mem, i)} for one database's facades."""
    words = query_words(memories)

    def save(mem, _, i):
        mem.mem_save(USER, f"Benchmark note {i}", f"A note saved while benchmarking, number {i}.")

    def update(mem, _, i):
        first = mem.mem_list_observations(USER, limit=1)[0]
        mem.mem_update(USER, first.id, content=f"Revised while benchmarking, {i}.")

    def words_search(query):
        return lambda mem, words_only, i: words_only.mem_search(USER, query)

    return {
        **{f"words: {kind}": words_search(query) for kind, query in words.items()},
        "hybrid: three words": lambda mem, _, i: mem.mem_search(USER, words["three words"]),
        "hybrid: question": lambda mem, _, i: mem.mem_search(USER, "what did we decide about the deployment"),
        "context": lambda mem, _, i: mem.mem_context(USER),
        "list": lambda mem, _, i: mem.mem_list_observations(USER, limit=20),
        "save": save,
        "update": update,
        "export": lambda mem, _, i: mem.mem_export(USER),
    }


def timed(operation, *args) -> float:
    started = time.perf_counter()
    operation(*args)
    return (time.perf_counter() - started) * 1000


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def erasures(facades: dict, memories: int) -> dict[str, list[float]]:
    """A user of ``memories`` memories written, then erased, in each database, in turns."""
    from .scale_data import load

    times = {name: [] for name in facades}
    for round_ in range(3):
        victim = 90_000 + round_
        for name, (mem, _) in facades.items():
            load(users=1, memories=memories, first=victim, vectors="none", using=mem.using, bulk=False,
                 report=lambda *_: None)
            times[name].append(timed(mem.mem_forget_user, f"user-{victim:05d}"))
    return times


def run(*, alone: str, crowd: str, iterations: int, memories: int, only: str = "") -> list[dict]:
    setup(alone, crowd)
    from ilab_memory import ILabMemory
    from ilab_memory.services.embedding import embed_waiting

    databases = {"alone": "default", "crowd": "crowd"}
    facades = {name: (ILabMemory(using=using), ILabMemory(using=using, EMBEDDER=None))
               for name, using in databases.items()}
    samples = {name: {} for name in facades}
    for using in databases.values():
        # An earlier run's saves wait for a vector; a hybrid search would embed them (its budget).
        embed_waiting(user_id=USER, using=using)
    for op_name, operation in operations(memories).items():
        if not op_name.startswith(only):
            continue
        for name, (mem, words_only) in facades.items():  # a first call of each: caches, plans
            operation(mem, words_only, -1)
        for i in range(iterations):
            for name, (mem, words_only) in facades.items():
                samples[name].setdefault(op_name, []).append(timed(operation, mem, words_only, i))
    if "erasure".startswith(only):
        for name, times in erasures(facades, memories).items():
            samples[name]["erasure of a user"] = times
    if "expiry sweep".startswith(only):
        for name, (mem, _) in facades.items():
            mem.mem_erase_expired()  # the first sweep erases what expired; the next is the steady one
            samples[name]["expiry sweep"] = [timed(mem.mem_erase_expired) for _ in range(3)]
    rows = []
    for op_name in samples["alone"]:
        alone_p50, alone_p95 = percentiles(samples["alone"][op_name])
        crowd_p50, crowd_p95 = percentiles(samples["crowd"][op_name])
        rows.append({"operation": op_name, "alone_p50": alone_p50, "alone_p95": alone_p95, "crowd_p50": crowd_p50,
                     "crowd_p95": crowd_p95, "ratio_p50": crowd_p50 / alone_p50, "ratio_p95": crowd_p95 / alone_p95})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alone", required=True)
    parser.add_argument("--crowd", required=True)
    parser.add_argument("--memories", type=int, default=1000, help="per user, as loaded")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--only", default="", help="the operations whose name starts with this ('words', 'hybrid', …)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run(alone=args.alone, crowd=args.crowd, iterations=args.iterations, memories=args.memories,
               only=args.only)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'operation':24} {'alone p50/p95':>16} {'crowd p50/p95':>16} {'ratio p50/p95':>14}")
    for row in rows:
        print(f"{row['operation']:24} {row['alone_p50']:7.1f} /{row['alone_p95']:7.1f} "
              f"{row['crowd_p50']:7.1f} /{row['crowd_p95']:7.1f} {row['ratio_p50']:6.2f} /{row['ratio_p95']:5.2f}")


if __name__ == "__main__":
    main()
