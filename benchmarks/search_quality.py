"""Search relevance on graded query sets: hybrid mem_search, its lexical half, and a baseline.

    .venv/bin/python -m benchmarks.search_quality [SET.json ...] [--details] [--json out.json]
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.search_quality
    .venv/bin/python -m benchmarks.search_quality --agreement sqlite.json postgresql.json

Loads each set (default: both development sets in ../shared/eval) into a fresh test database
(SQLite by default, PostgreSQL with DATABASE_URL), embeds it as ``ilab_memory_embed`` would,
runs every query as its own user through the real search, and prints nDCG@10 (gains = the
grades), recall@10 of grade-2 items and MRR of the first grade-2 item, overall and per tag (the
``[tag]`` that starts a query's note). Three searches in the same run on the same engine and
index: ``hybrid`` (the default, words and meaning), ``lexical`` (EMBEDDER None) and
``baseline``, how engram searches: every word quoted and required, equal field weights, no
fallback. Errors and rows of another user are counted too; both must be 0. ``--agreement``
compares the top-3 of two runs' JSON (one per engine).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from datetime import timedelta
from pathlib import Path

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
DEFAULT_SETS = [EVAL / "search-dev.json", EVAL / "search-semantic-dev.json"]
K = 10


def setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()


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


def baseline_search(*, user_id: str, query: str, limit: int = K, using: str = "default") -> list[str]:
    """engram's search: each whitespace word quoted, all required, equal weights, no fallback."""
    from django.db import connections

    from ilab_memory.services.search.postgresql import tsquery_phrase
    from ilab_memory.services.search.query import tokens
    from ilab_memory.services.search.sqlite import SQLITE_TABLE, fts5_phrase
    from ilab_memory.services.search.tables import OBSERVATION_TABLE

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
    """``run(user_id, query) -> [set keys]``; metrics averaged over the queries and per tag."""
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr": 0.0, "errors": 0, "other_user_rows": 0}
    tags: dict[str, list] = {}
    rankings = {}
    for q in data["queries"]:
        try:
            ranked = run(q["user_id"], q["query"])
        except Exception as error:  # counted and reported: the target is zero
            totals["errors"] += 1
            ranked = []
            print(f"error in {q['id']}: {type(error).__name__}: {error}", file=sys.stderr)
        rankings[q["id"]] = ranked
        totals["other_user_rows"] += sum(owner_of[key] != q["user_id"] for key in ranked)
        grades = q["relevant"]
        scores = (ndcg(ranked, grades), recall(ranked, grades), reciprocal_rank(ranked, grades))
        for metric, value in zip(("ndcg@10", "recall@10", "mrr"), scores):
            totals[metric] += value
        tags.setdefault(tag_of(q), []).append(scores)
    n = len(data["queries"])
    for metric in ("ndcg@10", "recall@10", "mrr"):
        totals[metric] /= n
    totals["tags"] = {
        tag: {"n": len(rows), "ndcg@10": sum(r[0] for r in rows) / len(rows), "mrr": sum(r[2] for r in rows) / len(rows)}
        for tag, rows in sorted(tags.items())
    }
    totals["rankings"] = rankings
    return totals


def run_set(path: Path, *, details: bool, embedder=None) -> dict:
    from django.db import connection

    from ilab_memory.conf import get_config
    from ilab_memory.models import Observation, ObservationVector, Session
    from ilab_memory.services.embedding import embed_waiting, queue_missing
    from ilab_memory.services.search import observation_search

    data = json.loads(path.read_text(encoding="utf-8"))
    keys = load(data)  # {observation id as 32 hex digits: set key}
    hybrid = get_config({"EMBEDDER": embedder}) if embedder is not None else None
    queue_missing(config=hybrid)
    embed_waiting(config=hybrid)
    owner_of = {item["key"]: item["user_id"] for item in data["observations"]}
    lexical_only = get_config({"EMBEDDER": None})

    def searcher(config=None):
        def run(user_id, query):
            results = observation_search(user_id=user_id, query=query, limit=K, config=config)
            return [keys[result.id.replace("-", "")] for result in results]

        return run

    def baseline(user_id, query):
        return [keys[i] for i in baseline_search(user_id=user_id, query=query)]

    results = {
        "hybrid": evaluate(data, searcher(hybrid), owner_of),
        "lexical": evaluate(data, searcher(lexical_only), owner_of),
        "baseline": evaluate(data, baseline, owner_of),
    }
    print(f"\n{path.name}   engine: {connection.vendor}   queries: {len(data['queries'])}   "
          f"observations: {len(data['observations'])}")
    print(f"{'':10}{'nDCG@10':>9}{'recall@10':>11}{'MRR':>7}{'errors':>8}{'other-user':>12}")
    for name, r in results.items():
        print(f"{name:10}{r['ndcg@10']:9.3f}{r['recall@10']:11.3f}{r['mrr']:7.3f}{r['errors']:8d}{r['other_user_rows']:12d}")
    print(f"{'tag':26}{'n':>3}" + "".join(f"{name + ' nDCG':>15}" for name in results))
    for tag in results["hybrid"]["tags"]:
        print(f"{tag[:26]:26}{results['hybrid']['tags'][tag]['n']:3d}"
              + "".join(f"{r['tags'][tag]['ndcg@10']:15.3f}" for r in results.values()))
    if details:
        for q in data["queries"]:
            ranked = results["hybrid"]["rankings"][q["id"]]
            score = ndcg(ranked, q["relevant"])
            if score < 0.999:
                print(f"  {q['id']} {score:.2f} {q['query']!r} want {q['relevant']} got {ranked[:5]}")
    ObservationVector.objects.all().delete()
    Observation.objects.all().delete()
    Session.objects.all().delete()
    return {name: {k: v for k, v in r.items()} for name, r in results.items()}


def agreement(first: Path, second: Path) -> int:
    """Share of queries whose hybrid top-3 is the same in two runs (two engines)."""
    a, b = (json.loads(Path(p).read_text()) for p in (first, second))
    for name in a:
        for search in ("hybrid", "lexical"):
            ra, rb = a[name][search]["rankings"], b[name][search]["rankings"]
            n = len(ra)
            first = sum(ra[q][:1] == rb.get(q, [])[:1] for q in ra)
            as_set = sum(set(ra[q][:3]) == set(rb.get(q, [])[:3]) for q in ra)
            in_order = sum(ra[q][:3] == rb.get(q, [])[:3] for q in ra)
            print(f"{name} {search}: same first result {first}/{n}, same top-3 {as_set}/{n} "
                  f"({as_set / n:.0%}), in the same order {in_order}/{n} ({in_order / n:.0%})")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(p) for p in DEFAULT_SETS], help="graded sets (JSON)")
    parser.add_argument("--details", action="store_true", help="print each query that is not perfect")
    parser.add_argument("--json", help="write the metrics and rankings to this file")
    parser.add_argument("--agreement", nargs=2, metavar="RUN.json", help="compare the top-3 of two runs")
    parser.add_argument("--vector-cache", help="keep the vectors in this folder (benchmarks.conversations' cache)")
    args = parser.parse_args(argv)
    if args.agreement:
        return agreement(*args.agreement)

    setup_django()
    from django.db import connection

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        embedder = None
        if args.vector_cache:
            from benchmarks.conversations import CachedEmbedder
            from ilab_memory.embeddings import configured_embedder

            embedder = CachedEmbedder(configured_embedder("default"), Path(args.vector_cache))
        report = {Path(path).name: run_set(Path(path), details=args.details, embedder=embedder) for path in args.paths}
        if embedder is not None:
            embedder.save()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
