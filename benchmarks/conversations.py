"""Recall on real conversations: LongMemEval_S through the public facade, beside BM25 and dense-only.

    .venv/bin/python -m benchmarks.conversations [--split dev|val] [--questions N] [--levels session,turn,whole]
    .venv/bin/python -m benchmarks.conversations --phases after-saves --levels session   # before the vectors only
    .venv/bin/python -m benchmarks.conversations --model minilm --questions 12 --json minilm.json
    .venv/bin/python -m benchmarks.conversations --types temporal-reasoning --levels session --period-weight 0
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.conversations --questions 12
    .venv/bin/python -m benchmarks.conversations --compare before.json after.json
    .venv/bin/python -m benchmarks.conversations --agreement sqlite.json postgresql.json

Each question of ``longmemeval-dev.json`` (``--split val``: ``longmemeval-val.json``, to confirm
a change chosen on dev, never to choose one) is its own user. Its haystack sessions are saved in
date order with the clock at each session's date and ``happened_at`` that date, then the question
is searched with the clock and ``now`` at the question's date (the data's dates carry no time
zone: UTC), so a date phrase ("last Saturday", "two weeks ago") is read as the user meant it and
favours the sessions of that period. Three granularities:

* ``session``: each chat session one observation (title its first user turn, content its user
  turns as ``user: …`` lines, LongMemEval's user-turn key). recall_any@5, recall_all@5,
  recall_all@10 (LongMemEval's metrics) and the standard nDCG@10 (binary gains) over the answer
  sessions.
* ``turn``: each user turn one observation. recall_all@5 / @10 of the turns that hold the
  answer, and hit@5, over the questions whose answer is in a user turn.
* ``whole``: each session one observation holding the whole conversation (``user: …`` /
  ``assistant: …``), for long memories; the first ``--whole-questions`` questions only.

Two states of the same saved memories, each a phase (``--phases``, default both, in this order),
always with ``EMBEDDING_RUNNER = None`` (no thread embeds behind the benchmark's back):

* ``after-saves``: right after the saves, nothing embedded but what each search embeds itself
  before it reads: its budget of its user's newest waiting memories (``SEARCH_EMBED_BUDGET``;
  ``SEARCH_EMBED_MILLISECONDS`` None by default, so that the budget alone decides and the state
  does not depend on the machine or on the cache; ``--search-embed-ms`` sets it).
* ``embedded``: every memory embedded (``embed_waiting``), then the questions; then the
  nonsense pass.

Beside ``ours`` (``mem_search``) the same run ranks the same observations with plain BM25
(Okapi, k1 1.5, b 0.75, Lucene's idf, over the same title and content, every query word), with
the same library searching by words alone (``words``: ``EMBEDDER`` None) and, once embedded,
with our stored vectors alone (``dense``). Every question's metrics are kept (``--json``), and
ours is compared with each other ranker question by question: the mean difference with a 95 %
paired bootstrap interval and a sign test (benchmarks/stats.py); ``--compare`` does the same for
two runs' JSON.

The ``nonsense`` pass (benchmarks/nonsense.py) asks each user ``--nonsense`` random letter
strings (consonants, pronounceable non-words, keyboard noise) and up to ``--unrelated``
questions on subjects that user's conversations never touch (the ``conversations`` list of
benchmarks/unrelated_questions.json, each kept only if it shares no content word with the
user's memories), through ours and words: the share that returns nothing, how many results the
others return, and how many of those were found by meaning only.

``--model e5`` (default: the library's default embedder) or ``minilm`` (all-MiniLM-L6-v2,
benchmarks/minilm.py, benchmarks/requirements-minilm.txt). Embedding the slice costs tens of
minutes on two cores, so vectors are kept in a cache file per model (``--vector-cache``, keyed
by the model and the exact text): a rerun embeds only new texts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.embedders import CachedEmbedder, model_embedder  # noqa: F401 (CachedEmbedder: re-exported)
from benchmarks.rankers import bm25_ranking, dense_ranking
from benchmarks.search_quality import setup_django

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
DEFAULT_CACHE = Path(__file__).resolve().parent / ".vector-cache"
LEVELS = ("session", "turn", "whole")
TITLE_CHARS = 120

PHASES = ("after-saves", "embedded")
SYSTEM_ORDER = ("ours", "bm25", "dense", "words")


# -- data ---------------------------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21``, as UTC."""
    day, clock = text.split(" (")[0], text.split(") ")[1]
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def title_of(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= TITLE_CHARS:
        return text
    return text[:TITLE_CHARS].rsplit(" ", 1)[0] + " …"


def round_robin(questions: list[dict]) -> list[dict]:
    """Questions taking turns by type, so any prefix (``--questions N``) covers every type."""
    by_type: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        by_type[q["question_type"]].append(q)
    queues = [by_type[t] for t in sorted(by_type)]
    ordered = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def memories(question: dict, level: str):
    """(date, title, content, key, relevant) per observation to save, in date order. ``key``
    names the session or turn; ``relevant`` whether it holds the answer at that level."""
    answers = set(question["answer_session_ids"])
    for session in sorted(question["haystack"], key=lambda s: parse_date(s["date"])):
        date, turns = parse_date(session["date"]), session["turns"]
        user_turns = [t for t in turns if t["role"] == "user" and t["content"].strip()]
        if not user_turns:
            continue
        if level == "turn":
            for i, turn in enumerate(user_turns):
                key = f"{session['id']}#{i}"
                yield date, title_of(turn["content"]), turn["content"], key, bool(turn.get("has_answer"))
            continue
        shown = user_turns if level == "session" else [t for t in turns if t["content"].strip()]
        content = "\n".join(f"{t['role']}: {t['content']}" for t in shown)
        yield date, title_of(user_turns[0]["content"]), content, session["id"], session["id"] in answers


# CachedEmbedder lives in benchmarks.embedders, the rankers beside ours (BM25, dense-only) in
# benchmarks.rankers; imported here for the callers that name them from here.


# -- metrics -------------------------------------------------------------------------------------


def keys_of(ranked_ids: list[str], key_of: dict[str, str]) -> list[str]:
    """Observation ids to their session or turn keys, repeats dropped (a duplicate save shares one)."""
    return list(dict.fromkeys(key_of[i] for i in ranked_ids))


def metrics(ranked: list[str], relevant: set[str], level: str) -> dict[str, float]:
    def recall_all(k):
        return float(relevant <= set(ranked[:k]))

    if level == "turn":
        return {"recall_all@5": recall_all(5), "recall_all@10": recall_all(10),
                "hit@5": float(bool(relevant & set(ranked[:5])))}
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:10]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return {"recall_any@5": float(bool(relevant & set(ranked[:5]))), "recall_all@5": recall_all(5),
            "recall_all@10": recall_all(10), "ndcg@10": dcg / ideal}


# -- a run ---------------------------------------------------------------------------------------


def search_all(level: str, questions: list[dict], *, mems: dict, docs: dict, relevant: dict, key_of: dict,
               embedder, dense: bool, details: bool) -> tuple[dict, list[float], dict]:
    """Every scored question through each facade of ``mems`` ({name: ILabMemory}), BM25 and, if
    ``dense``, our vectors alone: {system: {question id: {"type": ..., metric: value}}}, the
    value of ours' best result per question, and each facade's top ten keys per question
    ({system: {question id: [key, ...]}}, for ``--agreement``)."""
    import time_machine

    from ilab_memory.services.search import tokens

    per_question: dict[str, dict] = {name: {} for name in ("ours", "bm25", "dense", "words") if name in mems
                                     or name == "bm25" or (name == "dense" and dense)}
    top_values: list[float] = []
    ranked: dict[str, dict] = {name: {} for name in mems}
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        if not relevant[user_id]:
            continue  # the answer is not in a user turn (turn level): not scored
        rankings = {}
        asked = parse_date(q["question_date"])
        with time_machine.travel(asked, tick=False):
            for name, mem in mems.items():  # ours first: its search embeds its budget
                results = mem.mem_search(user_id, q["question"], limit=10, now=asked, time_zone="UTC")
                rankings[name] = [r.id.replace("-", "") for r in results]
                if name == "ours":
                    top_values.append(results[0].score.value if results else 0.0)
        rankings["bm25"] = bm25_ranking(docs[user_id], tokens(q["question"]))
        if dense:
            rankings["dense"] = [pk.replace("-", "") for pk in dense_ranking(embedder, user_id, q["question"])]
        for name, ids in rankings.items():
            per_question[name][q["question_id"]] = {"type": q["question_type"]} | metrics(
                keys_of(ids, key_of), relevant[user_id], level)
            if name in ranked:
                ranked[name][q["question_id"]] = keys_of(ids, key_of)
        if details and per_question["ours"][q["question_id"]]["recall_all@5"] < 1:
            print(f"  miss {q['question_id']} [{q['question_type']}] {q['question']!r}: "
                  f"want {sorted(relevant[user_id])} got {keys_of(rankings['ours'], key_of)[:5]}")
    return per_question, top_values, ranked


def comparisons(per_question: dict) -> dict:
    """Ours against each other ranker, question by question, for every metric."""
    from benchmarks.stats import paired

    ours = per_question["ours"]
    names = [m for m in next(iter(ours.values()), {}) if m != "type"]
    return {f"ours-{other}": {m: paired({q: r[m] for q, r in ours.items()},
                                        {q: r[m] for q, r in per_question[other].items()}) for m in names}
            for other in ("bm25", "words", "dense") if other in per_question}


def run_level(level: str, questions: list[dict], *, mem, words, embedder, config, phases: list[str], details: bool,
              letters: int = 6, unrelated: int = 6) -> dict:
    import time_machine

    from ilab_memory.models import Observation, ObservationVector, Session
    from ilab_memory.services.embedding import embed_waiting
    from ilab_memory.services.search import tokens

    started = time.monotonic()
    key_of: dict[str, str] = {}
    docs: dict[str, dict[str, list[str]]] = {}
    relevant: dict[str, set[str]] = {}
    saved = 0
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        docs[user_id], relevant[user_id] = {}, set()
        for date, title, content, key, is_answer in memories(q, level):
            with time_machine.travel(date, tick=False):
                result = mem.mem_save(user_id, title, content, type="conversation", happened_at=date)
            pk = result.observation.id.replace("-", "")
            key_of.setdefault(pk, key)
            docs[user_id][pk] = tokens(f"{title} {content}")
            if is_answer:
                relevant[user_id].add(key_of[pk])
            saved += 1
    seconds = {"load": round(time.monotonic() - started, 1)}
    report = {"level": level, "questions": sum(bool(r) for r in relevant.values()), "observations": saved,
              "seconds": seconds}
    shared = {"docs": docs, "relevant": relevant, "key_of": key_of, "embedder": embedder, "details": details}
    if "after-saves" in phases:
        clock = time.monotonic()
        per_question, _, _ = search_all(level, questions, mems={"ours": mem, "words": words}, dense=False, **shared)
        seconds["search after the saves"] = round(time.monotonic() - clock, 1)
        report["after_saves"] = {
            "systems": {name: summarize(rows) for name, rows in per_question.items()},
            "per_question": per_question, "comparisons": comparisons(per_question),
            "embedded_by_searches": ObservationVector.objects.filter(model_id__isnull=False).count(),
        }
    if "embedded" in phases:
        clock = time.monotonic()
        embed_waiting(config=config)
        embedder.save()
        seconds["embed"] = round(time.monotonic() - clock, 1)
        clock = time.monotonic()
        per_question, top_values, ranked = search_all(level, questions, mems={"ours": mem, "words": words}, dense=True,
                                                      **shared)
        seconds["search"] = round(time.monotonic() - clock, 1)
        report["systems"] = {name: summarize(rows) for name, rows in per_question.items()}
        report["per_question"] = per_question
        report["rankings"] = ranked
        report["comparisons"] = comparisons(per_question)
        report["top_value_median"] = sorted(top_values)[len(top_values) // 2] if top_values else 0.0
        if letters or unrelated:
            clock = time.monotonic()
            report["nonsense"] = nonsense(mem, words, docs, questions, level, letters=letters, unrelated=unrelated)
            seconds["nonsense"] = round(time.monotonic() - clock, 1)
    print_level(report)
    ObservationVector.objects.all().delete()
    Observation.objects.all().delete()
    Session.objects.all().delete()
    return report


def summarize(per_question: dict) -> dict:
    """Mean of each metric over all questions and per question type."""
    def mean(rows):
        names = [name for name in rows[0] if name != "type"] if rows else ()
        return {name: sum(r[name] for r in rows) / len(rows) for name in names} | {"n": len(rows)}

    by_type: dict[str, list] = defaultdict(list)
    for row in per_question.values():
        by_type[row["type"]].append(row)
    return {"all": mean(list(per_question.values())),
            "types": {t: mean(rows) for t, rows in sorted(by_type.items())}}


def nonsense(mem, words, docs: dict, questions: list[dict], level: str, *, letters: int, unrelated: int) -> dict:
    """Each user asked ``letters`` random letter strings and up to ``unrelated`` questions on
    subjects their conversations never touch (no content word shared), at the question's date
    like the question, through ours and words: benchmarks.nonsense's summary per kind, every
    query's outcome, and (as before) the share of all of them that ours answered with nothing."""
    import time_machine

    from benchmarks import nonsense as queries

    bank = queries.load_questions()["conversations"]
    known = queries.bank_words({"conversations": bank})
    asked = []
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        vocabulary = {word for tokens in docs[user_id].values() for word in tokens}
        rng = random.Random(f"nonsense:{q['question_id']}")
        mine = queries.letter_queries(rng, letters, vocabulary=vocabulary, known=known)
        pool = queries.unrelated_for(bank, vocabulary)
        mine += [("unrelated", u) for u in rng.sample(pool, min(unrelated, len(pool)))]
        asked += [(q, user_id, kind, query) for kind, query in mine]
    records: dict[str, list] = {"ours": [], "words": []}
    for q, user_id, kind, query in asked:
        asked = parse_date(q["question_date"])
        with time_machine.travel(asked, tick=False):
            for name, facade in (("ours", mem), ("words", words)):
                results = facade.mem_search(user_id, query, limit=10, now=asked, time_zone="UTC")
                records[name].append(queries.outcome(kind, user_id, query, results))
    summary = {name: queries.summarize(rows) for name, rows in records.items()}
    everything = summary["ours"]["all"]
    return {"asked": everything["asked"], "empty": everything["empty"], "share": everything["empty_share"],
            "top_value_median": everything["top_value_median"], "top_value_p95": everything["top_value_p95"],
            "summary": summary, "records": records}


def print_table(title: str, systems: dict) -> None:
    """One row per question type; each cell the systems' values in SYSTEM_ORDER."""
    order = ["recall_any@5", "recall_all@5", "recall_all@10", "hit@5", "ndcg@10"]
    present = [name for name in SYSTEM_ORDER if name in systems]
    names = sorted(systems["ours"]["all"].keys() - {"n"}, key=order.index)
    width = 6 * len(present) + 3
    print(f"{title}   (each cell: {' / '.join(present)})")
    print(f"{'type':26}{'n':>4}" + "".join(f"{name:>{width}}" for name in names))
    for label in ["all", *systems["ours"]["types"]]:
        rows = [systems[s]["all"] if label == "all" else systems[s]["types"][label] for s in present]
        cells = ["/".join(f"{row[name]:.3f}" for row in rows) for name in names]
        print(f"{label[:26]:26}{rows[0]['n']:4d}" + "".join(f"{cell:>{width}}" for cell in cells))


def print_comparisons(compared: dict) -> None:
    from benchmarks.stats import describe

    for pair, by_metric in compared.items():
        for metric, result in by_metric.items():
            if metric not in ("recall_all@5", "recall_all@10", "ndcg@10"):
                continue  # the others are in the JSON
            print(f"  {pair.replace('-', ' - ')} {metric}: {describe(result)}")


def print_level(report: dict) -> None:
    level = report["level"]
    print(f"\n== {level} level: {report['questions']} questions, {report['observations']} observations, "
          f"seconds {report['seconds']}")
    if "after_saves" in report:
        after = report["after_saves"]
        print_table(f"right after the saves ({after['embedded_by_searches']} of {report['observations']} memories "
                    "embedded by the searches' budgets)", after["systems"])
        print_comparisons({k: v for k, v in after["comparisons"].items() if k in ("ours-words", "ours-bm25")})
    if "systems" in report:
        print_table("every memory embedded", report["systems"])
        print_comparisons({k: v for k, v in report["comparisons"].items() if k in ("ours-bm25", "ours-words")})
    if "after_saves" in report and "per_question" in report:
        from benchmarks.stats import describe, paired

        before, after = report["after_saves"]["per_question"]["ours"], report["per_question"]["ours"]
        for metric in ("recall_all@5", "recall_all@10"):
            result = paired({q: r[metric] for q, r in before.items()}, {q: r[metric] for q, r in after.items()})
            print(f"  ours after the saves - ours embedded {metric}: {describe(result)}")
    if "nonsense" in report:
        from benchmarks.nonsense import print_summary

        n = report["nonsense"]
        print_summary(n["summary"], f"nonsense and unrelated queries ({level} level)")
        print(f"their best result's value (ours): median {n['top_value_median']:.3f}, 95th percentile "
              f"{n['top_value_p95']:.3f}; the questions' best result's value: median {report['top_value_median']:.3f}")


def compare(first: str, second: str, system: str = "ours") -> int:
    """Two runs' JSON, question by question: each metric of ``system`` in each level and phase
    both hold, and the share of nonsense and unrelated queries returning nothing."""
    from benchmarks.nonsense import empty_by_group
    from benchmarks.stats import describe, paired

    a, b = (json.loads(Path(p).read_text()) for p in (first, second))
    print(f"first: {first} ({a.get('model', '?')}, {a.get('split', '?')})   second: {second} "
          f"({b.get('model', '?')}, {b.get('split', '?')})   {system}, first - second over the questions both ran")
    levels_b = {report["level"]: report for report in b["levels"]}
    for ra in a["levels"]:
        rb = levels_b.get(ra["level"])
        if rb is None:
            continue
        for phase, pick in (("after the saves", lambda r: r.get("after_saves", {}).get("per_question")),
                            ("embedded", lambda r: r.get("per_question"))):
            pa, pb = pick(ra), pick(rb)
            if not pa or not pb:
                if pa or pb:
                    print(f"{ra['level']} {phase}: only one run has per-question metrics")
                continue
            if system not in pa or system not in pb:
                continue
            metrics_ = [m for m in next(iter(pa[system].values())) if m != "type"]
            for metric in metrics_:
                result = paired({q: r[metric] for q, r in pa[system].items()},
                                {q: r[metric] for q, r in pb[system].items()})
                print(f"{ra['level']} {phase} {metric} {result['first']:.3f} vs {result['second']:.3f} "
                      f"(n {result['n']}): {describe(result)}")
        na = ra.get("nonsense", {}).get("records", {}).get(system)
        nb = rb.get("nonsense", {}).get("records", {}).get(system)
        if na and nb:
            for group, (ea, eb) in empty_by_group(na, nb, with_kinds=False).items():
                result = paired(ea, eb)
                if result["n"]:
                    print(f"{ra['level']} nonsense ({group}) returned [] "
                          f"{result['first']:.0%} vs {result['second']:.0%} (n {result['n']}): {describe(result)}")
    return 0


def agreement(first: str, second: str) -> int:
    """Two runs' JSON (one per engine): how often ours, and words alone, put the same first
    result and the same top three first, per level."""
    a, b = (json.loads(Path(p).read_text()) for p in (first, second))
    levels_b = {report["level"]: report for report in b["levels"]}
    for ra in a["levels"]:
        rb = levels_b.get(ra["level"], {})
        for system, ranked_a in ra.get("rankings", {}).items():
            ranked_b = rb.get("rankings", {}).get(system, {})
            both = sorted(set(ranked_a) & set(ranked_b))
            if not both:
                continue
            first_same = sum(ranked_a[q][:1] == ranked_b[q][:1] for q in both)
            top3 = sum(set(ranked_a[q][:3]) == set(ranked_b[q][:3]) for q in both)
            print(f"{ra['level']} {system}: same first result {first_same}/{len(both)} "
                  f"({first_same / len(both):.0%}), same top-3 {top3}/{len(both)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(EVAL), help="folder holding longmemeval-dev.json and -val.json")
    parser.add_argument("--split", default="dev", choices=("dev", "val"),
                        help="dev to tune on, val to confirm on (never choose a parameter by val)")
    parser.add_argument("--questions", type=int, help="only the first N questions (types taking turns)")
    parser.add_argument("--types", help="comma-separated question types to keep (default: all)")
    parser.add_argument("--levels", default="session,turn,whole", help="comma-separated: " + ",".join(LEVELS))
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated: " + ",".join(PHASES))
    parser.add_argument("--whole-questions", type=int, default=10, help="questions at the whole-session level")
    parser.add_argument("--model", default="e5", choices=("e5", "minilm"),
                        help="e5: the default embedder; minilm: all-MiniLM-L6-v2 (benchmarks/minilm.py)")
    parser.add_argument("--search-embed-ms", type=int, default=None,
                        help="SEARCH_EMBED_MILLISECONDS (default none: a search's budget alone decides)")
    parser.add_argument("--nonsense", type=int, default=6, help="random letter strings per user (0: none)")
    parser.add_argument("--unrelated", type=int, default=6, help="unrelated questions per user, at most (0: none)")
    parser.add_argument("--vector-cache", default=str(DEFAULT_CACHE), help="folder of the vector cache")
    parser.add_argument("--period-weight", type=float,
                        help="fusion.PERIOD_WEIGHT for this run (0: the period not counted; default: the library's)")
    parser.add_argument("--details", action="store_true", help="print each question ours misses")
    parser.add_argument("--json", help="write the report, with every question's metrics, to this file")
    parser.add_argument("--compare", nargs=2, metavar="RUN.json", help="paired differences of two runs' --json")
    parser.add_argument("--system", default="ours", help="the ranker --compare compares (ours, words, bm25, dense)")
    parser.add_argument("--agreement", nargs=2, metavar="RUN.json",
                        help="two runs' --json (SQLite and PostgreSQL): the same first results?")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare, system=args.system)
    if args.agreement:
        return agreement(*args.agreement)
    levels = [level for level in args.levels.split(",") if level]
    if set(levels) - set(LEVELS):
        parser.error(f"--levels takes {', '.join(LEVELS)}")
    phases = [p for p in args.phases.split(",") if p]
    if not phases or set(phases) - set(PHASES):
        parser.error(f"--phases takes {', '.join(PHASES)}")
    phases = [p for p in PHASES if p in phases]

    data = json.loads((Path(args.data) / f"longmemeval-{args.split}.json").read_text(encoding="utf-8"))
    kept = set(args.types.split(",")) if args.types else None
    questions = round_robin([q for q in data["questions"] if kept is None or q["question_type"] in kept])
    questions = questions[: args.questions]

    setup_django()
    from django.db import connection

    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.services.search import fusion

    if args.period_weight is not None:
        fusion.PERIOD_WEIGHT = args.period_weight
    embedder = model_embedder(args.model, args.vector_cache)
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    reports = []
    try:
        # Inline: no background thread, so the load and the embedding are timed apart, and right
        # after the saves nothing but the searches' budgets embeds.
        overrides = {"embedder": embedder, "embedding_runner": None, "search_embed_milliseconds": args.search_embed_ms}
        mem = ILabMemory(**overrides)
        words = ILabMemory(embedder=None, embedding_runner=None)
        config = get_config({key.upper(): value for key, value in overrides.items()})
        print(f"engine: {connection.vendor}   model: {embedder.model_id}   split: {args.split}"
              f"   phases: {', '.join(phases)}"
              f"   search budget: {config.SEARCH_EMBED_BUDGET} memories, {args.search_embed_ms} ms"
              f"   period weight: {fusion.PERIOD_WEIGHT}")
        for level in levels:
            subset = questions[: args.whole_questions] if level == "whole" else questions
            reports.append(run_level(level, subset, mem=mem, words=words, embedder=embedder, config=config,
                                     phases=phases, details=args.details, letters=args.nonsense,
                                     unrelated=args.unrelated))
    finally:
        embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.json:
        report = {"engine": connection.vendor, "model": embedder.model_id, "split": args.split,
                  "period_weight": fusion.PERIOD_WEIGHT, "phases": phases, "levels": reports}
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
