"""Time in search: does a date phrase's boost bring the answer up, and does a wrong one ever hide it?

    .venv/bin/python -m benchmarks.time_search [--modes words,hybrid] [--saving live,imported] [--boosts 1.5]
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.time_search --details --json time.json

The set, ``benchmarks/time_dev.json``: four users (two English, two Spanish, each in their own
time zone) with everyday agent memories over 2025 (decisions, meetings, bugs, preferences,
trips), each with the local time it happened, and questions with a date phrase ("what did we
decide last week about the deploy?", "¿qué hablamos ayer?", "in March", "hace dos días", "el mes
pasado"), each with its answer and the local time it is asked at. ``reading`` is ``right`` when
the answer happened in the period the phrase names and ``wrong`` when the phrase misleads (the
user misremembers: the answer happened outside it), so a boost there can only cost rank.

The year is replayed in order: each memory is saved through the facade with its ``happened_at``
when its time comes, and each question is asked when its time comes, with ``now`` its asking
time and ``time_zone`` its user's, so only what was saved before it can answer it. Two ways of
saving (``--saving``):

* ``live``: the clock at the moment it happened, as an agent saving as things happen (the
  recency tie-breaker then favours the newest).
* ``imported``: the clock at the real time, as an import of a history: every memory is equally
  new, and only ``happened_at`` tells them apart in time.

Each question is searched once per ``--boosts`` value (``fusion.PERIOD_BOOST`` set here; 1.0,
search without the boost, always runs, by default beside the library's value) and per mode:
``words`` (``EMBEDDER`` None) and ``hybrid`` (the default e5 model; every memory saved so far
embedded before each question, through the vector cache). The answer's rank among 50 results
gives the mean rank (a miss counts as 51), MRR, hit@1/5/10, per language and per reading;
"pushed out" counts the questions whose answer was in the top 10 without the boost and is not
with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from benchmarks.embedders import model_embedder
from benchmarks.search_quality import setup_django

DATA = Path(__file__).resolve().parent / "time_dev.json"
DEFAULT_CACHE = Path(__file__).resolve().parent / ".vector-cache"
MODES = ("words", "hybrid")
SAVINGS = ("live", "imported")
RANKED = 50  # results read per question: a rank beyond 10 is still told apart from a miss
MISS = RANKED + 1


def local(text: str, zone: str) -> datetime:
    """A set's local ``2025-03-14T10:00`` in the user's time zone, as UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)


def timeline(data: dict) -> list[tuple[datetime, str, dict]]:
    """Every save and question of the set at its moment, in order; a save before a question
    asked at the same moment."""
    zones = {user: info["time_zone"] for user, info in data["users"].items()}
    events = [(local(m["happened_at"], zones[m["user"]]), "save", m) for m in data["memories"]]
    events += [(local(q["asked_at"], zones[q["user"]]), "ask", q) for q in data["questions"]]
    return sorted(events, key=lambda event: (event[0], event[1] == "ask"))


def rank_of(results, answer_id: str) -> int:
    ids = [r.id for r in results]
    return ids.index(answer_id) + 1 if answer_id in ids else MISS


def period_of(results) -> dict | None:
    """The period the search read in the query (the same in every result's breakdown)."""
    return results[0].score.breakdown.get("period") if results else None


def replay(data: dict, *, saving: str, facades: dict, boosts: list[float], config) -> list[dict]:
    """The year in order; one row per question, mode and boost: the answer's rank and the period read."""
    import time_machine

    from ilab_memory.services.embedding import embed_waiting
    from ilab_memory.services.search import fusion

    zones = {user: info["time_zone"] for user, info in data["users"].items()}
    language = {user: info["language"] for user, info in data["users"].items()}
    # A save through a facade without an embedder queues no vector: save through the hybrid one.
    saver = facades.get("hybrid") or facades["words"]
    ids: dict[str, str] = {}
    rows = []
    chosen = fusion.PERIOD_BOOST
    try:
        for moment, kind, item in timeline(data):
            if kind == "save":
                clock = time_machine.travel(moment, tick=False) if saving == "live" else nullcontext()
                with clock:
                    saved = saver.mem_save(f"{saving}-{item['user']}", item["title"], item["content"],
                                           type=item["type"], happened_at=moment)
                ids[item["key"]] = saved.observation.id
                continue
            if "hybrid" in facades:
                embed_waiting(config=config)
            user, question = f"{saving}-{item['user']}", f"{item['user']} {item['asked_at']} {item['query']}"
            for mode, facade in facades.items():
                for boost in boosts:
                    fusion.PERIOD_BOOST = boost
                    results = facade.mem_search(user, item["query"], limit=RANKED, now=moment,
                                                time_zone=zones[item["user"]])
                    rows.append({"saving": saving, "mode": mode, "boost": boost, "question": question,
                                 "language": language[item["user"]], "reading": item["reading"],
                                 "query": item["query"], "answer": item["answer"],
                                 "rank": rank_of(results, ids[item["answer"]]), "period": period_of(results)})
    finally:
        fusion.PERIOD_BOOST = chosen
    return rows


def check_readings(data: dict, rows: list[dict]) -> list[str]:
    """Questions whose period, as read, does not agree with their ``reading``: a ``right`` one
    whose answer is outside the period read (or no period read), a ``wrong`` one whose answer is inside."""
    zones = {user: info["time_zone"] for user, info in data["users"].items()}
    happened = {m["key"]: local(m["happened_at"], zones[m["user"]]) for m in data["memories"]}
    problems, seen = [], set()
    for row in rows:
        if row["question"] in seen:
            continue
        seen.add(row["question"])
        period = row["period"]
        inside = period is not None and (datetime.fromisoformat(period["start"]) <= happened[row["answer"]]
                                         < datetime.fromisoformat(period["end"]))
        if inside != (row["reading"] == "right"):
            read = "nothing" if period is None else (
                f"{period['phrase']!r} {period['start'][:10]}..{period['end'][:10]}")
            problems.append(f"{row['reading']:5} {row['query']!r}: read {read}")
    return problems


def summarize(rows: list[dict]) -> dict:
    ranks = [row["rank"] for row in rows]
    n = len(ranks)
    return {"n": n, "mean_rank": sum(ranks) / n, "mrr": sum(1 / r if r <= RANKED else 0 for r in ranks) / n,
            "hit@1": sum(r <= 1 for r in ranks) / n, "hit@5": sum(r <= 5 for r in ranks) / n,
            "hit@10": sum(r <= 10 for r in ranks) / n}


def report(rows: list[dict], boosts: list[float]) -> dict:
    """{saving: {mode: {group: {boost: metrics}}}}, groups each language and reading, and
    ``pushed_out`` (answers in the top 10 at boost 1.0, out of it at the boost) per boost."""
    cells: dict = defaultdict(list)
    by_question: dict = {}
    for row in rows:
        key = (row["saving"], row["mode"])
        for group in ("all", row["language"], f"{row['language']} {row['reading']}", row["reading"]):
            cells[(*key, group, row["boost"])].append(row)
        by_question[(*key, row["question"], row["boost"])] = row["rank"]
    out: dict = defaultdict(lambda: defaultdict(dict))
    for (saving, mode, group, boost), members in cells.items():
        metrics = summarize(members)
        if 1.0 in boosts:
            unboosted = [(by_question[(saving, mode, r["question"], 1.0)], r["rank"]) for r in members]
            metrics["pushed_out"] = sum(before <= 10 < rank for before, rank in unboosted)
            metrics["better"] = sum(rank < before for before, rank in unboosted)
            metrics["worse"] = sum(rank > before for before, rank in unboosted)
        out[saving][mode].setdefault(group, {})[boost] = metrics
    return json.loads(json.dumps(out))


GROUP_ORDER = ("all", "en", "es", "right", "wrong", "en right", "en wrong", "es right", "es wrong")


def print_report(summary: dict, *, engine: str) -> None:
    for saving, modes in summary.items():
        for mode, groups in modes.items():
            print(f"\n{engine}, saved {saving}, {mode}")
            print(f"{'group':10}{'n':>4}{'boost':>7}{'mean rank':>11}{'MRR':>7}{'hit@1':>7}{'hit@5':>7}"
                  f"{'hit@10':>8}{'better':>8}{'worse':>7}{'pushed out':>12}")
            for group in sorted(groups, key=GROUP_ORDER.index):
                for boost, m in groups[group].items():
                    print(f"{group:10}{m['n']:4d}{float(boost):7.2f}{m['mean_rank']:11.2f}{m['mrr']:7.3f}"
                          f"{m['hit@1']:7.3f}{m['hit@5']:7.3f}{m['hit@10']:8.3f}"
                          f"{m.get('better', 0):8d}{m.get('worse', 0):7d}{m.get('pushed_out', 0):12d}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="the dated set (default: benchmarks/time_dev.json)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ",".join(MODES))
    parser.add_argument("--saving", default=",".join(SAVINGS), help="comma-separated: " + ",".join(SAVINGS))
    parser.add_argument("--boosts", help="PERIOD_BOOST values to search with, comma-separated (default: the "
                        "library's; 1.0, no boost, always)")
    parser.add_argument("--vector-cache", default=str(DEFAULT_CACHE), help="folder of the vector cache")
    parser.add_argument("--details", action="store_true",
                        help="print each question whose rank the boost changes")
    parser.add_argument("--json", help="write every question's ranks and the summary to this file")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.modes.split(",") if mode]
    savings = [saving for saving in args.saving.split(",") if saving]
    if not modes or set(modes) - set(MODES) or not savings or set(savings) - set(SAVINGS):
        parser.error(f"--modes takes {', '.join(MODES)}; --saving takes {', '.join(SAVINGS)}")
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))

    setup_django()
    from django.db import connection

    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.services.search import fusion

    chosen = [float(value) for value in args.boosts.split(",")] if args.boosts else [fusion.PERIOD_BOOST]
    boosts = sorted(set(chosen) | {1.0})

    embedder = model_embedder("e5", args.vector_cache) if "hybrid" in modes else None
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    rows = []
    try:
        facades = {}
        if "words" in modes:
            facades["words"] = ILabMemory(embedder=None, embedding_runner=None)
        if "hybrid" in modes:
            facades["hybrid"] = ILabMemory(embedder=embedder, embedding_runner=None)
        config = get_config({"EMBEDDER": embedder, "EMBEDDING_RUNNER": None})
        for saving in savings:
            rows += replay(data, saving=saving, facades=facades, boosts=boosts, config=config)
    finally:
        if embedder is not None:
            embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    summary = report(rows, boosts)
    print(f"engine: {connection.vendor}   memories: {len(data['memories'])}   "
          f"questions: {len(data['questions'])} "
          f"({sum(q['reading'] == 'wrong' for q in data['questions'])} with a misleading phrase)")
    for problem in check_readings(data, rows):
        print(f"  reading differs from the set's: {problem}")
    print_report(summary, engine=connection.vendor)
    if args.details:
        ranks = {(r["saving"], r["mode"], r["question"], r["boost"]): r["rank"] for r in rows}
        for row in rows:
            before = ranks[(row["saving"], row["mode"], row["question"], 1.0)]
            if row["boost"] != 1.0 and row["rank"] != before:
                print(f"  {row['saving']} {row['mode']} x{row['boost']} {row['reading']}: "
                      f"{before} -> {row['rank']} {row['query']!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({"engine": connection.vendor, "boosts": boosts,
                                               "summary": summary,
                                               "rows": rows}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
