"""Recall on real conversations: LongMemEval_S through the public facade, beside BM25 and dense-only.

    .venv/bin/python -m benchmarks.conversations [--data DIR] [--questions N] [--levels session,turn,whole]
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.conversations --questions 12

Each question of ``longmemeval-dev.json`` is its own user. Its haystack sessions are saved in
date order with the clock at each session's date, then the question is searched with the clock
at the question's date. Three granularities:

* ``session``: each chat session one observation (title its first user turn, content its user
  turns as ``user: …`` lines, LongMemEval's user-turn key). recall_any@5, recall_all@5,
  recall_all@10 (LongMemEval's metrics) and the standard nDCG@10 (binary gains) over the answer
  sessions.
* ``turn``: each user turn one observation. recall_all@5 / @10 of the turns that hold the
  answer, and hit@5, over the questions whose answer is in a user turn.
* ``whole``: each session one observation holding the whole conversation (``user: …`` /
  ``assistant: …``), for long memories; the first ``--whole-questions`` questions only.

Beside ``ours`` (``mem_search``) the same run ranks the same observations with plain BM25
(Okapi, k1 1.5, b 0.75, Lucene's idf, over the same title and content, every query word) and with our stored vectors alone
(``dense``). A ``nonsense`` pass searches each user for random letter strings and for questions
on subjects that user's conversations never touch: the share that returns nothing.

Embedding the slice costs tens of minutes on two cores, so vectors are kept in a cache file
(``--vector-cache``, keyed by the model and the exact text): a rerun embeds only new texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone as dt_timezone
from pathlib import Path

from benchmarks.search_quality import setup_django

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
DEFAULT_CACHE = Path(__file__).resolve().parent / ".vector-cache"
LEVELS = ("session", "turn", "whole")
TITLE_CHARS = 120
K1, B = 1.5, 0.75

# Subjects a user's chats do not touch are checked against that user's own words before use.
UNRELATED = (
    "What is the boiling point of liquid nitrogen in kelvin?",
    "Which firmware version does the submarine sonar array run?",
    "How many moons does Neptune have?",
    "What did the tax auditor say about my cryptocurrency mining rig?",
    "Who won the curling championship in Reykjavik?",
    "What is my blood type according to the hematology lab?",
    "Which lighthouse keeper did I interview for the podcast?",
    "What torque do the helicopter rotor bolts need?",
)


# -- data ---------------------------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21``, as UTC."""
    day, clock = text.split(" (")[0], text.split(") ")[1]
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=dt_timezone.utc)


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
                yield date, title_of(turn["content"]), turn["content"], f"{session['id']}#{i}", bool(turn.get("has_answer"))
            continue
        shown = user_turns if level == "session" else [t for t in turns if t["content"].strip()]
        content = "\n".join(f"{t['role']}: {t['content']}" for t in shown)
        yield date, title_of(user_turns[0]["content"]), content, session["id"], session["id"] in answers


# -- the embedding cache --------------------------------------------------------------------------


class CachedEmbedder:
    """The configured embedder, remembering every vector it made in a file (benchmark only)."""

    def __init__(self, inner, path: Path):
        import numpy as np

        self.inner, self.model_id, self.dimensions = inner, inner.model_id, inner.dimensions
        self.path = path / (hashlib.sha1(inner.model_id.encode()).hexdigest()[:12] + ".npz")
        self.vectors: dict[str, object] = {}
        self.new = 0
        if self.path.exists():
            with np.load(self.path) as stored:
                self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"]))

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()

    def embed_passages(self, texts):
        import numpy as np

        keys = [self._key("passage", t) for t in texts]
        todo = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in self.vectors]
        if todo:
            for (k, _), vector in zip(todo, self.inner.embed_passages([t for _, t in todo])):
                self.vectors[k] = vector
            self.new += len(todo)
            if self.new >= 256:
                self.save()
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, self.dimensions), "float32")

    def embed_query(self, text):
        key = self._key("query", text)
        if key not in self.vectors:
            self.vectors[key] = self.inner.embed_query(text)
            self.new += 1
        return self.vectors[key]

    def save(self):
        import numpy as np

        if not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        np.savez(self.path.with_suffix(".tmp.npz"), keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        os.replace(self.path.with_suffix(".tmp.npz"), self.path)
        self.new = 0


# -- rankers beside ours ------------------------------------------------------------------------


def bm25_ranking(docs: dict[str, list[str]], query: list[str], k: int = 10) -> list[str]:
    """Plain Okapi BM25 over ``docs`` ({id: tokens}), any query word."""
    n = len(docs)
    average = sum(map(len, docs.values())) / max(n, 1)
    frequency: dict[str, int] = defaultdict(int)
    for words in docs.values():
        for word in set(words):
            frequency[word] += 1
    scores = {}
    for doc_id, words in docs.items():
        counts: dict[str, int] = defaultdict(int)
        for word in words:
            counts[word] += 1
        score = 0.0
        for word in set(query):
            tf = counts.get(word, 0)
            if tf:
                idf = math.log(1 + (n - frequency[word] + 0.5) / (frequency[word] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(words) / average))
        if score > 0:
            scores[doc_id] = score
    return sorted(scores, key=scores.get, reverse=True)[:k]


def dense_ranking(embedder, user_id: str, query: str, k: int = 10) -> list[str]:
    from ilab_memory import vectors

    cosines = vectors.similarities(
        user_id=user_id, model_id=embedder.model_id, dimensions=embedder.dimensions,
        query=embedder.embed_query(query), n=k, using="default", max_bytes=256 * 1024 * 1024,
    )
    return [str(pk) for pk in sorted(cosines, key=cosines.get, reverse=True)[:k]]


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


def run_level(level: str, questions: list[dict], *, mem, embedder, config, details: bool) -> dict:
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
                result = mem.mem_save(user_id, title, content, type="conversation")
            pk = result.observation.id.replace("-", "")
            key_of.setdefault(pk, key)
            docs[user_id][pk] = tokens(f"{title} {content}")
            if is_answer:
                relevant[user_id].add(key_of[pk])
            saved += 1
    loaded = time.monotonic()
    embed_waiting(config=config)
    embedder.save()
    embedded = time.monotonic()

    systems = {"ours": {}, "bm25": {}, "dense": {}}
    top_values: list[float] = []
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        if not relevant[user_id]:
            continue  # the answer is not in a user turn (turn level): not scored
        with time_machine.travel(parse_date(q["question_date"]), tick=False):
            results = mem.mem_search(user_id, q["question"], limit=10)
        found = [r.id.replace("-", "") for r in results]
        top_values.append(results[0].score.value if results else 0.0)
        rankings = {
            "ours": found,
            "bm25": bm25_ranking(docs[user_id], tokens(q["question"])),
            "dense": [pk.replace("-", "") for pk in dense_ranking(embedder, user_id, q["question"])],
        }
        for name, ids in rankings.items():
            systems[name][q["question_id"]] = (q["question_type"], metrics(keys_of(ids, key_of), relevant[user_id], level))
        if details and systems["ours"][q["question_id"]][1]["recall_all@5"] < 1:
            print(f"  miss {q['question_id']} [{q['question_type']}] {q['question']!r}: want {sorted(relevant[user_id])} "
                  f"got {keys_of(found, key_of)[:5]}")
    searched = time.monotonic()
    report = {
        "level": level, "questions": len(systems["ours"]), "observations": saved,
        "seconds": {"load": round(loaded - started, 1), "embed": round(embedded - loaded, 1),
                    "search": round(searched - embedded, 1)},
        "systems": {name: summarize(per_question) for name, per_question in systems.items()},
        "top_value_median": sorted(top_values)[len(top_values) // 2] if top_values else 0.0,
    }
    report["nonsense"] = nonsense(mem, docs, questions, level)
    print_level(report)
    ObservationVector.objects.all().delete()
    Observation.objects.all().delete()
    Session.objects.all().delete()
    return report


def summarize(per_question: dict) -> dict:
    """Mean of each metric over all questions and per question type."""
    def mean(rows):
        names = rows[0].keys() if rows else ()
        return {name: sum(r[name] for r in rows) / len(rows) for name in names} | {"n": len(rows)}

    by_type: dict[str, list] = defaultdict(list)
    for question_type, row in per_question.values():
        by_type[question_type].append(row)
    return {"all": mean([row for _, row in per_question.values()]),
            "types": {t: mean(rows) for t, rows in sorted(by_type.items())}}


def nonsense(mem, docs: dict, questions: list[dict], level: str) -> dict:
    """Share of random letter strings and unrelated questions that return no result, searched at
    the question's date like the question."""
    import time_machine

    from ilab_memory.services.search import STOP_WORDS, tokens

    rng = random.Random(7)
    asked = empty = 0
    tops = []
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        vocabulary = {word for words in docs[user_id].values() for word in words}
        letters = ["".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(rng.randint(6, 10))) for _ in range(2)]
        unrelated = [u for u in UNRELATED if not (set(tokens(u)) - STOP_WORDS) & vocabulary]
        for query in letters + unrelated[:2]:
            asked += 1
            with time_machine.travel(parse_date(q["question_date"]), tick=False):
                results = mem.mem_search(user_id, query, limit=10)
            empty += not results
            tops.append(results[0].score.value if results else 0.0)
    tops.sort()
    return {"asked": asked, "empty": empty, "share": empty / asked if asked else 0.0,
            "top_value_median": tops[len(tops) // 2] if tops else 0.0, "top_value_p95": tops[int(len(tops) * 0.95)] if tops else 0.0}


def print_level(report: dict) -> None:
    """One row per question type; each cell ours / bm25 / dense."""
    level, systems = report["level"], report["systems"]
    order = ["recall_any@5", "recall_all@5", "recall_all@10", "hit@5", "ndcg@10"]
    names = sorted(systems["ours"]["all"].keys() - {"n"}, key=order.index)
    print(f"\n== {level} level: {report['questions']} questions, {report['observations']} observations, "
          f"seconds {report['seconds']}   (each cell: {' / '.join(systems)})")
    print(f"{'type':26}{'n':>4}" + "".join(f"{name:>22}" for name in names))
    for label in ["all", *systems["ours"]["types"]]:
        rows = [s["all"] if label == "all" else s["types"][label] for s in systems.values()]
        cells = ["/".join(f"{row[name]:.3f}" for row in rows) for name in names]
        print(f"{label[:26]:26}{rows[0]['n']:4d}" + "".join(f"{cell:>22}" for cell in cells))
    n = report["nonsense"]
    print(f"nonsense and unrelated queries with no result: {n['empty']}/{n['asked']} ({n['share']:.0%}); "
          f"their best result's value: median {n['top_value_median']:.3f}, 95th percentile {n['top_value_p95']:.3f}; "
          f"the questions' best result's value: median {report['top_value_median']:.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(EVAL), help="folder holding longmemeval-dev.json")
    parser.add_argument("--questions", type=int, help="only the first N questions (types taking turns)")
    parser.add_argument("--levels", default="session,turn,whole", help="comma-separated: " + ",".join(LEVELS))
    parser.add_argument("--whole-questions", type=int, default=10, help="questions at the whole-session level")
    parser.add_argument("--vector-cache", default=str(DEFAULT_CACHE), help="folder of the vector cache")
    parser.add_argument("--details", action="store_true", help="print each question ours misses")
    parser.add_argument("--json", help="write the report to this file")
    args = parser.parse_args(argv)
    levels = [level for level in args.levels.split(",") if level]
    if set(levels) - set(LEVELS):
        parser.error(f"--levels takes {', '.join(LEVELS)}")

    data = json.loads((Path(args.data) / "longmemeval-dev.json").read_text(encoding="utf-8"))
    questions = round_robin(data["questions"])[: args.questions]

    setup_django()
    from django.db import connection

    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.embeddings import configured_embedder

    embedder = CachedEmbedder(configured_embedder("default"), Path(args.vector_cache))
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    reports = []
    try:
        # Inline: no background thread, so the load and the embedding are timed apart.
        mem = ILabMemory(embedder=embedder, embedding_mode="inline")
        config = get_config({"EMBEDDER": embedder, "EMBEDDING_MODE": "inline"})
        print(f"engine: {connection.vendor}   model: {embedder.model_id}")
        for level in levels:
            subset = questions[: args.whole_questions] if level == "whole" else questions
            reports.append(run_level(level, subset, mem=mem, embedder=embedder, config=config, details=args.details))
    finally:
        embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    if args.json:
        Path(args.json).write_text(json.dumps({"engine": connection.vendor, "levels": reports}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
