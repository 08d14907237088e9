"""Time in search: does a date phrase's period bring the answer up, and does a wrong one ever hide it?

    .venv/bin/python -m benchmarks.time_search [--modes words,hybrid] [--saving live,imported] [--weights 0.5]
    .venv/bin/python -m benchmarks.time_search --half tuning --weights 0.25,0.5,0.75   # choose here
    .venv/bin/python -m benchmarks.time_search --half checking                         # once, at the end
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.time_search --details --json time.json

The set, ``benchmarks/time_dev.json``: four users (two English, two Spanish, each in their own
time zone) with everyday agent memories over 2025 (decisions, meetings, bugs, preferences,
trips), each with the local time it happened, and questions with a date phrase ("what did we
decide last week about the deploy?", "¿qué hablamos ayer?", "in March", "hace dos días", "el mes
pasado"), each with its answer and the local time it is asked at. ``reading`` is ``right`` when
the answer happened in the period the phrase names and ``wrong`` when the phrase misleads (the
user misremembers: the answer happened outside it), so the period there can only cost rank.
Questions of ``kind`` ``topic`` name a subject and a date; ``generic`` ones name a kind of
memory and a date only ("what did we decide last week?", "¿qué falló ayer?"), made from the set's
own memories: one per decision, meeting, bug, trip and appointment, asked the day, the week or
the month after it, each memory of that kind in the period an answer. ``--half`` keeps the
users of one half (tuning: e1 and s2; checking: e2 and s1).

The year is replayed in order: each memory is saved through the facade with its ``happened_at``
when its time comes, and each question is asked when its time comes, with ``now`` its asking
time and ``time_zone`` its user's, so only what was saved before it can answer it. Two ways of
saving (``--saving``):

* ``live``: the clock at the moment it happened, as an agent saving as things happen (the
  recency tie-breaker then favours the newest).
* ``imported``: the clock at the real time, as an import of a history: every memory is equally
  new, and only ``happened_at`` tells them apart in time.

Each question is searched once per ``--weights`` value (``fusion.PERIOD_WEIGHT`` set here; 0,
search that does not count the period, always runs, by default beside the library's value) and
per mode: ``words`` (``EMBEDDER`` None) and ``hybrid`` (the default e5 model; every memory saved
so far embedded before each question, through the vector cache). The first answer's rank among
50 results gives the mean rank (a miss counts as 51), MRR, hit@1/5/10, per language, reading and
kind; "pushed out" counts the questions whose answer was in the top 10 without the period and is
not with it. Each weight's MRR against the library's comes with its 95 % paired bootstrap interval.
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
HALVES = {"tuning": ("e1", "s2"), "checking": ("e2", "s1")}  # by user: one English, one Spanish each


def half_of(data: dict, half: str | None) -> dict:
    """``data`` with only the users of ``half`` (None: every user)."""
    if half is None:
        return data
    users = HALVES[half]
    return {**data, "users": {user: info for user, info in data["users"].items() if user in users},
            "memories": [m for m in data["memories"] if m["user"] in users],
            "questions": [q for q in data["questions"] if q["user"] in users]}


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


def answers_of(question: dict) -> list[str]:
    """The keys of a question's answers: a topic question has one, a generic one ("what did we
    decide last week?") every memory of its kind that happened in the period."""
    return question.get("answers") or [question["answer"]]


def rank_of(results, answer_ids: list[str]) -> int:
    """The rank of the first answer among ``results``; MISS when none is there."""
    ids = [r.id for r in results]
    return min((ids.index(answer) + 1 for answer in answer_ids if answer in ids), default=MISS)


def period_of(query: str, *, now: datetime, zone: str) -> dict | None:
    """The period search reads in ``query`` asked at ``now`` in ``zone`` (as its breakdown says it;
    read here, since a search that finds nothing has no breakdown)."""
    from ilab_memory.services.search.periods import read_period

    period = read_period(query, now=now, time_zone=ZoneInfo(zone))
    return None if period is None else {"phrase": period.phrase, "start": period.start.isoformat(),
                                        "end": period.end.isoformat()}


def replay(data: dict, *, saving: str, facades: dict, weights: list[float], config) -> list[dict]:
    """The year in order; one row per question, mode and weight: the answer's rank and the period read."""
    import time_machine

    from ilab_memory.services.embedding import embed_waiting
    from ilab_memory.services.search import fusion

    zones = {user: info["time_zone"] for user, info in data["users"].items()}
    language = {user: info["language"] for user, info in data["users"].items()}
    # A save through a facade without an embedder queues no vector: save through the hybrid one.
    saver = facades.get("hybrid") or facades["words"]
    ids: dict[str, str] = {}
    rows = []
    chosen = fusion.PERIOD_WEIGHT
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
            answers, period = answers_of(item), period_of(item["query"], now=moment, zone=zones[item["user"]])
            for mode, facade in facades.items():
                for weight in weights:
                    fusion.PERIOD_WEIGHT = weight
                    results = facade.mem_search(user, item["query"], limit=RANKED, now=moment,
                                                time_zone=zones[item["user"]])
                    rows.append({"saving": saving, "mode": mode, "weight": weight, "question": question,
                                 "language": language[item["user"]], "reading": item["reading"],
                                 "kind": item.get("kind", "topic"), "query": item["query"],
                                 "answers": answers, "period": period,
                                 "rank": rank_of(results, [ids[key] for key in answers])})
    finally:
        fusion.PERIOD_WEIGHT = chosen
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
        inside = period is not None and all(
            datetime.fromisoformat(period["start"]) <= happened[key] < datetime.fromisoformat(period["end"])
            for key in row["answers"])
        if inside != (row["reading"] == "right"):
            read = "nothing" if period is None else (
                f"{period['phrase']!r} {period['start'][:10]}..{period['end'][:10]}")
            problems.append(f"{row['reading']:5} {row['query']!r}: read {read}")
    return problems


def reciprocal(rank: int) -> float:
    return 1 / rank if rank <= RANKED else 0.0


def summarize(rows: list[dict]) -> dict:
    ranks = [row["rank"] for row in rows]
    n = len(ranks)
    return {"n": n, "mean_rank": sum(ranks) / n, "mrr": sum(map(reciprocal, ranks)) / n,
            "hit@1": sum(r <= 1 for r in ranks) / n, "hit@5": sum(r <= 5 for r in ranks) / n,
            "hit@10": sum(r <= 10 for r in ranks) / n}


def report(rows: list[dict], *, library: float) -> dict:
    """{saving: {mode: {group: {weight: metrics}}}}, groups each language, reading and kind;
    against weight 0 (the period not counted): ``pushed_out`` (answers in its top 10, out of it
    at the weight), ``better`` and ``worse``; against the ``library``'s weight, ``mrr_vs_library``
    (the mean MRR difference with its paired bootstrap interval)."""
    from benchmarks.stats import paired

    cells: dict = defaultdict(list)
    by_question: dict = {}
    for row in rows:
        key = (row["saving"], row["mode"])
        for group in ("all", row["language"], f"{row['language']} {row['reading']}", row["reading"], row["kind"]):
            cells[(*key, group, row["weight"])].append(row)
        by_question[(*key, row["question"], row["weight"])] = row["rank"]
    out: dict = defaultdict(lambda: defaultdict(dict))
    for (saving, mode, group, weight), members in cells.items():
        metrics = summarize(members)
        before = [(by_question[(saving, mode, r["question"], 0.0)], r["rank"]) for r in members]
        metrics["pushed_out"] = sum(first <= 10 < rank for first, rank in before)
        metrics["better"] = sum(rank < first for first, rank in before)
        metrics["worse"] = sum(rank > first for first, rank in before)
        if weight != library:
            ours = {r["question"]: reciprocal(r["rank"]) for r in members}
            theirs = {r["question"]: reciprocal(by_question[(saving, mode, r["question"], library)]) for r in members}
            metrics["mrr_vs_library"] = paired(ours, theirs)
        out[saving][mode].setdefault(group, {})[weight] = metrics
    return json.loads(json.dumps(out))


GROUP_ORDER = ("all", "en", "es", "right", "wrong", "en right", "en wrong", "es right", "es wrong", "topic",
               "generic")


def print_report(summary: dict, *, engine: str, library: float) -> None:
    for saving, modes in summary.items():
        for mode, groups in modes.items():
            print(f"\n{engine}, saved {saving}, {mode}; MRR against the library's weight ({library}), "
                  "95 % paired bootstrap interval")
            print(f"{'group':10}{'n':>4}{'weight':>7}{'mean rank':>11}{'MRR':>7}{'hit@1':>7}{'hit@5':>7}"
                  f"{'hit@10':>8}{'better':>8}{'worse':>7}{'pushed out':>12}   MRR − library's")
            for group in sorted(groups, key=GROUP_ORDER.index):
                for weight, m in groups[group].items():
                    against = m.get("mrr_vs_library")
                    shown = "" if against is None else (
                        f"   {against['difference']:+.3f} [{against['low']:+.3f}, {against['high']:+.3f}]")
                    print(f"{group:10}{m['n']:4d}{float(weight):7.2f}{m['mean_rank']:11.2f}{m['mrr']:7.3f}"
                          f"{m['hit@1']:7.3f}{m['hit@5']:7.3f}{m['hit@10']:8.3f}"
                          f"{m['better']:8d}{m['worse']:7d}{m['pushed_out']:12d}{shown}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="the dated set (default: benchmarks/time_dev.json)")
    parser.add_argument("--half", choices=sorted(HALVES), help="only the users of this half (default: every user)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ",".join(MODES))
    parser.add_argument("--saving", default=",".join(SAVINGS), help="comma-separated: " + ",".join(SAVINGS))
    parser.add_argument("--weights", help="PERIOD_WEIGHT values to search with, comma-separated (default: the "
                        "library's; 0, the period not counted, always)")
    parser.add_argument("--vector-cache", default=str(DEFAULT_CACHE), help="folder of the vector cache")
    parser.add_argument("--details", action="store_true",
                        help="print each question whose rank the period changes")
    parser.add_argument("--json", help="write every question's ranks and the summary to this file")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.modes.split(",") if mode]
    savings = [saving for saving in args.saving.split(",") if saving]
    if not modes or set(modes) - set(MODES) or not savings or set(savings) - set(SAVINGS):
        parser.error(f"--modes takes {', '.join(MODES)}; --saving takes {', '.join(SAVINGS)}")
    data = half_of(json.loads(Path(args.data).read_text(encoding="utf-8")), args.half)

    setup_django()
    from django.db import connection

    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.services.search import fusion

    library = fusion.PERIOD_WEIGHT
    chosen = [float(value) for value in args.weights.split(",")] if args.weights else []
    weights = sorted(set(chosen) | {0.0, library})

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
            rows += replay(data, saving=saving, facades=facades, weights=weights, config=config)
    finally:
        if embedder is not None:
            embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    summary = report(rows, library=library)
    print(f"engine: {connection.vendor}   half: {args.half or 'both'}   memories: {len(data['memories'])}   "
          f"questions: {len(data['questions'])} "
          f"({sum(q['reading'] == 'wrong' for q in data['questions'])} with a misleading phrase, "
          f"{sum(q.get('kind') == 'generic' for q in data['questions'])} generic)")
    for problem in check_readings(data, rows):
        print(f"  reading differs from the set's: {problem}")
    print_report(summary, engine=connection.vendor, library=library)
    if args.details:
        ranks = {(r["saving"], r["mode"], r["question"], r["weight"]): r["rank"] for r in rows}
        for row in rows:
            before = ranks[(row["saving"], row["mode"], row["question"], 0.0)]
            if row["weight"] != 0.0 and row["rank"] != before:
                print(f"  {row['saving']} {row['mode']} weight {row['weight']} {row['reading']} {row['kind']}: "
                      f"{before} -> {row['rank']} {row['query']!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({"engine": connection.vendor, "half": args.half, "weights": weights,
                                               "summary": summary, "rows": rows}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
