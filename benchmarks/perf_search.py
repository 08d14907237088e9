"""mem_search as the table grows (10k, 100k, 1M rows; users of 1,000 observations each).

The searched users are the first few, present at every size, so what grows between sizes is
the table (and the engine's posting lists), not the user's own history.

Lexical only (``ILabMemory(embedder=None)``): this phase times the full-text engine as the table
grows, next to its floor (one engine query). The histories have no vectors, so with the default
embedder a search would only add the query's embedding; hybrid search, with every memory
embedded, is the ``hybrid`` phase (perf_hybrid).
"""

from __future__ import annotations

from .perf_data import COMMON_TERM, BulkLoad, HistoryWriter, rare_term
from .perf_floor import Floor
from .perf_timing import measure, step

PER_USER = 1_000
SEARCHED_USERS = 5


def user_name(k: int) -> str:
    return f"user-{k:05d}"


NOTE = "mem_search lexical only (ILabMemory(embedder=None)); hybrid search is the hybrid phase"


def run(mem, scratch, *, sizes: list[int], rare_iterations: int = 100, common_iterations: int = 40) -> list[dict]:
    from ilab_memory import ILabMemory

    mem = ILabMemory(using=mem.using, embedder=None)
    step(NOTE)
    writer = HistoryWriter()
    floor = Floor(scratch.raw_connection(), scratch.vendor)
    results: list[dict] = []
    users_so_far = 0
    for size in sorted(sizes):
        wanted = max(size // PER_USER, SEARCHED_USERS)
        if wanted > users_so_far:
            with BulkLoad():
                writer.add_users([(user_name(k), PER_USER) for k in range(users_so_far, wanted)],
                                 label=f"table to {size:,} rows")
            users_so_far = wanted

        def user_of(i: int) -> str:
            return user_name(i % SEARCHED_USERS)

        def rare_of(i: int) -> str:
            # A term planted in 4 rows of this user (see perf_data.rare_term).
            k = i % SEARCHED_USERS
            return rare_term(k * PER_USER + (i * 37) % PER_USER)

        cases = (
            ("search rare term", rare_of, rare_iterations),
            ("search common term", lambda i: COMMON_TERM, common_iterations),
        )
        for op, term_of, n in cases:
            hits = len(mem.mem_search(user_of(0), term_of(0)))
            ours = measure(lambda i: mem.mem_search(user_of(i), term_of(i)), iterations=n)
            floor_sample = measure(lambda i: floor.search(user_of(i), term_of(i)), iterations=n)
            results.append({"group": "search", "op": op, "size": size, "ours": ours.__dict__,
                            "floor": floor_sample.__dict__, "hits": hits})
            step(f"{op:<22} {size:>9,} rows  p50 {ours.p50:8.2f} ms  p95 {ours.p95:8.2f} ms  "
                 f"floor p50 {floor_sample.p50:8.2f} ms  ({hits} results)")
    return results
