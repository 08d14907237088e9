"""Search relevance on a graded query set: mem_search next to an engram-like baseline.

    .venv/bin/python -m benchmarks.search_quality [path/to/search-dev.json] [--details]
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.search_quality

Loads the set into a fresh test database (SQLite by default, PostgreSQL with DATABASE_URL),
runs every query as its own user through the real search, and prints nDCG@10 (gains = the
grades), recall@10 of grade-2 items and MRR of the first grade-2 item. The baseline, computed in
the same run on the same engine and index, is how engram searches: every word quoted and
required, equal field weights, no fallback. Errors and rows of another user are counted too;
both must be 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from datetime import timedelta
from pathlib import Path

DEFAULT_SET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "search-dev.json"
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

    from ilab_memory.services import search

    phrases = [tuple(search.tokens(word)) for word in query.split()]
    phrases = [p for p in phrases if p]
    if not phrases:
        return []
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            match = " AND ".join(search._fts5_phrase(p) for p in phrases)
            cursor.execute(
                f"""SELECT o.id FROM {search.SQLITE_TABLE} JOIN {search.OBSERVATION_TABLE} o
                    ON o.id = {search.SQLITE_TABLE}.observation_id
                    WHERE {search.SQLITE_TABLE} MATCH %s AND o.user_id = %s AND o.deleted_at IS NULL
                    ORDER BY bm25({search.SQLITE_TABLE}, 1.0, 1.0, 1.0, 0.0, 0.0) LIMIT %s""",
                [match, user_id, limit],
            )
        else:
            tsquery = " & ".join(search._tsquery_phrase(p) for p in phrases)
            cursor.execute(
                f"""SELECT o.id FROM {search.OBSERVATION_TABLE} o
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


def evaluate(data: dict, run, owner_of: dict[str, str]) -> dict:
    """``run(user_id, query) -> [set keys]``; metrics averaged over the queries."""
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr": 0.0, "errors": 0, "other_user_rows": 0}
    per_query = []
    for q in data["queries"]:
        try:
            ranked = run(q["user_id"], q["query"])
        except Exception as error:  # counted and reported: the target is zero
            totals["errors"] += 1
            per_query.append((q, [], f"{type(error).__name__}: {error}"))
            continue
        totals["other_user_rows"] += sum(owner_of[key] != q["user_id"] for key in ranked)
        grades = q["relevant"]
        totals["ndcg@10"] += ndcg(ranked, grades)
        totals["recall@10"] += recall(ranked, grades)
        totals["mrr"] += reciprocal_rank(ranked, grades)
        per_query.append((q, ranked, None))
    n = len(data["queries"])
    for metric in ("ndcg@10", "recall@10", "mrr"):
        totals[metric] /= n
    totals["per_query"] = per_query
    return totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=str(DEFAULT_SET), help="the graded set (JSON)")
    parser.add_argument("--details", action="store_true", help="print each query that is not perfect")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.path).read_text(encoding="utf-8"))

    setup_django()
    from django.db import connection

    from ilab_memory.services.search import observation_search

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        keys = load(data)  # {observation id as 32 hex digits: set key}
        owner_of = {item["key"]: item["user_id"] for item in data["observations"]}

        def ours(user_id, query):
            results = observation_search(user_id=user_id, query=query, limit=K)
            return [keys[result.id.replace("-", "")] for result in results]

        def baseline(user_id, query):
            return [keys[i] for i in baseline_search(user_id=user_id, query=query)]

        results = {"mem_search": evaluate(data, ours, owner_of), "baseline": evaluate(data, baseline, owner_of)}
        engine = connection.vendor
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(f"engine: {engine}   queries: {len(data['queries'])}   observations: {len(data['observations'])}")
    print(f"{'':12}{'nDCG@10':>9}{'recall@10':>11}{'MRR':>7}{'errors':>8}{'other-user':>12}")
    for name, r in results.items():
        print(f"{name:12}{r['ndcg@10']:9.4f}{r['recall@10']:11.4f}{r['mrr']:7.4f}{r['errors']:8d}{r['other_user_rows']:12d}")
    gain = results["mem_search"]["ndcg@10"] - results["baseline"]["ndcg@10"]
    print(f"nDCG@10 above the baseline: {gain:+.3f}")
    if args.details:
        for q, ranked, error in results["mem_search"]["per_query"]:
            score = ndcg(ranked, q["relevant"])
            if error or score < 0.999:
                print(f"{q['id']} {score:.2f} {q['query']!r} want {q['relevant']} got {ranked[:5]} {error or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
