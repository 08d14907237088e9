"""Choose search's constants and rules on the tuning half; read the checking half once, at the end.

    .venv/bin/python -m benchmarks.tune                                  # the tuning half, as the library is
    .venv/bin/python -m benchmarks.tune --rules                          # and with each rule of fusion.RULES off
    .venv/bin/python -m benchmarks.tune --vary fusion.WEAK_CAP=2,3,5 --vary calibration.NULL_SHARE=0.04,0.15
    .venv/bin/python -m benchmarks.tune --levels session,turn --json var/tuning.json
    .venv/bin/python -m benchmarks.tune --phase after-saves --levels ''     # right after the saves
    .venv/bin/python -m benchmarks.tune --half checking --json var/checking.json   # once, at the end
    DATABASE_URL=postgres://... .venv/bin/python -m benchmarks.tune      # the same on PostgreSQL

Every set lives in ``benchmarks/data`` and is split **by user** into two halves, so a clone
reproduces every figure:

* ``meaning-tuning.json`` / ``meaning-checking.json``: our meaning set (14 people, seven kinds of
  query, unrelated questions per user), written in two halves by user;
* ``search-dev.json`` (words) and ``search-semantic-dev.json`` (meaning, the first set): their
  users taking turns, the first to the tuning half;
* ``longmemeval-dev.json`` (LongMemEval_S, MIT; user turns only): each question its own user,
  the questions taking turns by type, the first to the tuning half; ``--levels`` session and turn.

Everything is loaded once into a fresh test database and embedded (the vector cache of
benchmarks/embedders.py), then each **variant** runs every query (``--phase after-saves``: each
variant on fresh saves, nothing embedded but what each search's budget embeds): the library as it is
(``as-is``), ``everything`` (the same ranking with nothing left out: no weak cap, no tail), each
rule off (``--rules``) and each value of ``--vary MODULE.CONSTANT=v1,v2`` (modules of
``ilab_memory.services.search``), and the library by words alone (``words only``). Per variant:
nDCG@10 per kind of meaning query and on the words set, LongMemEval recall_all@5, the unrelated
questions (at most 3 results, meaning-only ones marked weak, none at all) and letter strings (none
at all); and, against ``as-is``, the mean difference of each with its 95 % paired bootstrap interval
(benchmarks/stats.py). BM25 and dense-only (our vectors alone) rank the same queries once.

A rule stays only if it pays beyond its interval on the tuning half; a win of one or two
questions is noise. The checking half is read once, when the choices are made (docs/search.md
says which figures were read when).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import random
import sys
from pathlib import Path

from benchmarks import nonsense
from benchmarks.conversations import memories, parse_date, round_robin
from benchmarks.conversations import metrics as conversation_metrics
from benchmarks.embedders import model_embedder
from benchmarks.rankers import bm25_ranking, dense_ranking
from benchmarks.search_quality import K, load, ndcg, queue_as_written, setup_django, tag_of

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_CACHE = Path(__file__).resolve().parent / ".vector-cache"
HALVES = ("tuning", "checking")
LETTERS_PER_USER = 20
# The rules that leave results out: off together, the same ranking returns everything.
LEAVE_OUT = ("weak-cap",)


# -- the halves ----------------------------------------------------------------------------------


def taking_turns(items: list, half: str) -> list:
    """Every other item, the first to the tuning half."""
    return items[HALVES.index(half)::2]


def graded_half(path: Path, half: str) -> dict:
    """A graded set's users taking turns (in order of appearance), this half's."""
    data = json.loads(path.read_text(encoding="utf-8"))
    users = set(taking_turns(list(dict.fromkeys(o["user_id"] for o in data["observations"])), half))
    return {**data, "observations": [o for o in data["observations"] if o["user_id"] in users],
            "queries": [q for q in data["queries"] if q["user_id"] in users]}


def conversation_half(half: str, data_dir: Path = DATA) -> list[dict]:
    data = json.loads((data_dir / "longmemeval-dev.json").read_text(encoding="utf-8"))
    return taking_turns(round_robin(data["questions"]), half)


# -- loading -------------------------------------------------------------------------------------


class Loaded:
    """What one half put in the database: the graded sets (each with {observation id: key}),
    the conversations per level, and BM25's documents per user."""

    def __init__(self):
        self.graded: dict[str, tuple[dict, dict]] = {}
        self.conversations: dict[str, dict] = {}
        self.documents: dict[str, dict[str, list[str]]] = {}


def english_only(data: dict) -> dict:
    """The users of a graded set who write in English (most of their words more frequent in
    English than in Spanish, by wordfreq), and their queries in English for English memories."""
    from wordfreq import word_frequency

    from ilab_memory.services.search import tokens

    words: dict[str, list[str]] = {}
    for item in data["observations"]:
        words.setdefault(item["user_id"], []).extend(tokens(f"{item['title']} {item['content']}"))
    english = {user for user, found in words.items()
               if 2 * sum(word_frequency(w, "en") >= word_frequency(w, "es") for w in found) > len(found)}
    crossing = ("[cross", "[crosslingual")
    return {**data, "observations": [o for o in data["observations"] if o["user_id"] in english],
            "queries": [q for q in data["queries"] if q["user_id"] in english and not q["note"].startswith(crossing)],
            "unrelated": [u for u in data.get("unrelated", []) if u["user_id"] in english and u["lang"] == "en"]}


def load_half(half: str, levels: list[str], data_dir: Path = DATA, english: bool = False) -> Loaded:
    from ilab_memory.services.search import tokens

    loaded = Loaded()
    sets = {"meaning": data_dir / f"meaning-{half}.json", "words": data_dir / "search-dev.json",
            "meaning-first": data_dir / "search-semantic-dev.json"}
    for name, path in sets.items():
        data = json.loads(path.read_text(encoding="utf-8")) if name == "meaning" else graded_half(path, half)
        data = english_only(data) if english else data
        keys = load(data)
        loaded.graded[name] = (data, keys)
        for item in data["observations"]:
            text = f"{item['title']} {item['topic_key'] or ''} {item['content']}"
            loaded.documents.setdefault(item["user_id"], {})[item["key"]] = tokens(text)
    questions = conversation_half(half, data_dir)
    for level in levels:
        loaded.conversations[level] = load_conversations(questions, level, loaded.documents)
    return loaded


def load_conversations(questions: list[dict], level: str, documents: dict) -> dict:
    """Each question's haystack saved as its user at ``level``, through the facade, at each
    session's date: {"questions", "key_of" (observation id: session or turn key), "relevant"}."""
    import time_machine

    from ilab_memory import ILabMemory
    from ilab_memory.services.search import tokens

    mem = ILabMemory(embedder=None, embedding_runner=None)
    key_of, relevant = {}, {}
    for q in questions:
        user_id = f"{level}-{q['question_id']}"
        relevant[user_id] = set()
        for date, title, content, key, is_answer in memories(q, level):
            with time_machine.travel(date, tick=False):
                saved = mem.mem_save(user_id, title, content, type="conversation", happened_at=date)
            pk = saved.observation.id.replace("-", "")
            key_of.setdefault(pk, key)
            documents.setdefault(user_id, {})[key_of[pk]] = tokens(f"{title} {content}")
            if is_answer:
                relevant[user_id].add(key_of[pk])
    return {"questions": [q for q in questions if relevant[f"{level}-{q['question_id']}"]],
            "key_of": key_of, "relevant": relevant}


# -- one variant ---------------------------------------------------------------------------------


def run_variant(loaded: Loaded, search) -> dict:
    """Every query of the half through ``search(user_id, query, now=None) -> results``: each
    query's metric, keyed "set:query id", and the no-answer queries' outcomes."""
    per_query, outcomes = {}, []
    for name, (data, keys) in loaded.graded.items():
        for q in data["queries"]:
            ranked = [keys[r.id.replace("-", "")] for r in search(q["user_id"], q["query"])]
            per_query[f"{name}:{q['id']}"] = {"ndcg@10": ndcg(ranked, q["relevant"]), "tag": tag_of(q)}
        for item in data.get("unrelated", []):
            kind = "unrelated, sharing a word" if item["shares_word"] else "unrelated"
            outcomes.append(nonsense.outcome(kind, item["user_id"], item["query"],
                                             search(item["user_id"], item["query"])))
    for user_id, query in letter_strings(loaded):
        outcomes.append(nonsense.outcome("letters", user_id, query, search(user_id, query)))
    for level, c in loaded.conversations.items():
        for q in c["questions"]:
            user_id, asked = f"{level}-{q['question_id']}", parse_date(q["question_date"])
            ranked = list(dict.fromkeys(c["key_of"][r.id.replace("-", "")]
                                        for r in search(user_id, q["question"], now=asked)))
            row = conversation_metrics(ranked, c["relevant"][user_id], level)
            per_query[f"{level}:{q['question_id']}"] = {"recall_all@5": row["recall_all@5"], "tag": q["question_type"]}
    return {"per_query": per_query, "outcomes": outcomes}


def letter_strings(loaded: Loaded) -> list[tuple[str, str]]:
    """LETTERS_PER_USER random letter strings for each user of the graded sets (seeded)."""
    users = {item["user_id"] for data, _ in loaded.graded.values() for item in data["observations"]}
    known = {w for words in loaded.documents.values() for doc in words.values() for w in doc}
    asked = []
    for user_id in sorted(users):
        rng = random.Random(f"letters:{user_id}")
        asked += [(user_id, query) for _, query in nonsense.letter_queries(rng, LETTERS_PER_USER, vocabulary=set(),
                                                                            known=known)]
    return asked


def baselines(loaded: Loaded, embedder) -> dict:
    """BM25 and dense-only over the same graded queries and conversations: {ranker: per_query}."""
    from ilab_memory.services.search import tokens

    found = {"bm25": {}, "dense": {}}
    for name, (data, keys) in loaded.graded.items():
        for q in data["queries"]:
            bm25 = bm25_ranking(loaded.documents[q["user_id"]], tokens(q["query"]), k=K)
            dense = [keys[pk.replace("-", "")] for pk in dense_ranking(embedder, q["user_id"], q["query"], k=K)]
            for ranker, ranked in (("bm25", bm25), ("dense", dense)):
                found[ranker][f"{name}:{q['id']}"] = {"ndcg@10": ndcg(ranked, q["relevant"]), "tag": tag_of(q)}
    for level, c in loaded.conversations.items():
        for q in c["questions"]:
            user_id = f"{level}-{q['question_id']}"
            bm25 = bm25_ranking(loaded.documents[user_id], tokens(q["question"]), k=K)
            dense = list(dict.fromkeys(c["key_of"][pk.replace("-", "")]
                                       for pk in dense_ranking(embedder, user_id, q["question"], k=K)))
            for ranker, ranked in (("bm25", bm25), ("dense", dense)):
                row = conversation_metrics(ranked, c["relevant"][user_id], level)
                found[ranker][f"{level}:{q['question_id']}"] = {"recall_all@5": row["recall_all@5"],
                                                                "tag": q["question_type"]}
    return found


def clear() -> None:
    from ilab_memory.models import Observation, ObservationVector, Session

    ObservationVector.objects.all().delete()
    Observation.objects.all().delete()
    Session.objects.all().delete()


# -- variants ------------------------------------------------------------------------------------


def variants(rules: bool, vary: list[str], drop: list[str] = ()) -> list[tuple[str, dict, frozenset | None]]:
    """(name, {module.CONSTANT: value}, rules in force or None for the library's)."""
    from ilab_memory.services.search import fusion

    found = [("as-is", {}, None), ("everything", {}, fusion.ACTIVE - set(LEAVE_OUT))]
    if rules:
        found += [(f"without {rule}", {}, fusion.ACTIVE - {rule}) for rule in fusion.RULES if rule in fusion.ACTIVE]
    for names in drop:
        found.append((f"without {names}", {}, fusion.ACTIVE - set(names.split(","))))
    for spec in vary:
        if "&" in spec:  # one variant of several constants: A=1&B=2
            pairs = [part.partition("=") for part in spec.split("&")]
            found.append((spec, {name: _number(value) for name, _, value in pairs}, None))
            continue
        name, _, values = spec.partition("=")
        for value in values.split(","):
            found.append((f"{name}={value}", {name: _number(value)}, None))
    return found


def _number(text: str):
    return float(text) if "." in text or text == "inf" else int(text)


@contextlib.contextmanager
def applied(constants: dict, rules: frozenset | None):
    """The library with ``constants`` (``module.NAME`` of ilab_memory.services.search) and ``rules``."""
    from ilab_memory import vectors
    from ilab_memory.services.search import fusion

    saved = []
    for dotted, value in constants.items():
        module_name, _, attribute = dotted.rpartition(".")
        module = importlib.import_module(f"ilab_memory.services.search.{module_name}")
        saved.append((module, attribute, getattr(module, attribute)))
        setattr(module, attribute, value)
    active = fusion.ACTIVE
    if rules is not None:
        fusion.ACTIVE = rules
    vectors.matrices.clear()  # what is derived from a user's vectors (the null) is read again
    try:
        yield
    finally:
        fusion.ACTIVE = active
        for module, attribute, value in saved:
            setattr(module, attribute, value)
        vectors.matrices.clear()


# -- the report ----------------------------------------------------------------------------------


def summary(result: dict) -> dict:
    """Means per group of queries ("meaning" and each of its kinds, "words", "meaning-first",
    "session", "turn") and, per kind of query with no answer, the shares that matter."""
    groups: dict[str, list[float]] = {}
    for key, row in result["per_query"].items():
        group = key.split(":")[0]
        value = row.get("ndcg@10", row.get("recall_all@5"))
        groups.setdefault(group, []).append(value)
        if group == "meaning":
            groups.setdefault(f"meaning {row['tag']}", []).append(value)
    means = {group: sum(values) / len(values) for group, values in groups.items()}
    quiet = {}
    for kind in ("letters", "unrelated", "unrelated, sharing a word"):
        rows = [o for o in result["outcomes"] if o["kind"] == kind]
        if not rows:
            continue
        meaning_only = sum(o["meaning_only"] for o in rows)
        quiet[kind] = {"asked": len(rows), "empty": sum(not o["results"] for o in rows) / len(rows),
                       "at_most_3": sum(o["results"] <= 3 for o in rows) / len(rows),
                       "mean_results": sum(o["results"] for o in rows) / len(rows),
                       "meaning_only_weak": (sum(o["meaning_only_weak"] for o in rows) / meaning_only
                                             if meaning_only else 1.0)}
    return {"means": means, "quiet": quiet}


def paired_groups(first: dict, second: dict) -> dict:
    """``first`` against ``second`` per group of queries (the per_query of two variants)."""
    from benchmarks.stats import paired

    def group(per_query, name):
        return {k: r.get("ndcg@10", r.get("recall_all@5")) for k, r in per_query.items()
                if k.split(":")[0] == name or (name.startswith("meaning ") and k.startswith("meaning:")
                                                and f"meaning {r['tag']}" == name)}

    names = sorted({k.split(":")[0] for k in first} | {f"meaning {r['tag']}" for k, r in first.items()
                                                       if k.startswith("meaning:")})
    return {name: paired(group(first, name), group(second, name)) for name in names if group(second, name)}


def print_report(results: dict, rankers: dict) -> None:
    from benchmarks.stats import describe

    summaries = {name: summary(r) for name, r in results.items()}
    groups = sorted(next(iter(summaries.values()))["means"])
    print(f"\n{'variant':34}" + "".join(f"{g[:14]:>15}" for g in groups))
    for name, s in summaries.items():
        print(f"{name[:34]:34}" + "".join(f"{s['means'].get(g, float('nan')):15.3f}" for g in groups))
    for ranker, per_query in rankers.items():
        s = summary({"per_query": per_query, "outcomes": []})
        print(f"{ranker:34}" + "".join(f"{s['means'].get(g, float('nan')):15.3f}" for g in groups))
    print(f"\n{'variant':34}{'kind':28}{'asked':>6}{'[]':>7}{'<=3':>7}{'mean n':>8}{'weak':>7}")
    for name, s in summaries.items():
        for kind, q in s["quiet"].items():
            print(f"{name[:34]:34}{kind:28}{q['asked']:6d}{q['empty']:7.0%}{q['at_most_3']:7.0%}"
                  f"{q['mean_results']:8.2f}{q['meaning_only_weak']:7.0%}")
    base = results["as-is"]["per_query"]
    print("\nEach variant against as-is (mean difference, 95 % paired bootstrap interval, sign test):")
    for name, result in results.items():
        if name == "as-is":
            continue
        for group, compared in paired_groups(result["per_query"], base).items():
            if abs(compared["difference"]) > 1e-9 or compared["low"] < -1e-9 or compared["high"] > 1e-9:
                print(f"  {name[:34]:34} {group:28} {describe(compared)}")
    for ranker, per_query in rankers.items():
        for group, compared in paired_groups(base, per_query).items():
            if group in ("session", "turn", "meaning", "words"):
                print(f"  as-is - {ranker:26} {group:28} {describe(compared)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", default="tuning", choices=HALVES)
    parser.add_argument("--data", default=str(DATA), help="the folder of the sets (default: benchmarks/data)")
    parser.add_argument("--levels", default="session", help="LongMemEval levels: session,turn (none: '')")
    parser.add_argument("--phase", default="embedded", choices=("embedded", "after-saves"),
                        help="every memory embedded, or right after the saves (each variant on fresh saves)")
    parser.add_argument("--rules", action="store_true", help="also run with each rule of fusion.RULES off")
    parser.add_argument("--vary", action="append", default=[], metavar="MODULE.NAME=V1,V2",
                        help="also run with each value of a constant of ilab_memory.services.search "
                             "(A=1&B=2: one variant of both)")
    parser.add_argument("--drop", action="append", default=[], metavar="RULE,RULE",
                        help="also run with these rules of fusion.RULES off together")
    parser.add_argument("--model", default="e5", choices=("e5", "minilm"))
    parser.add_argument("--english", action="store_true",
                        help="only the users who write in English and their English queries (an English model)")
    parser.add_argument("--vector-cache", default=str(DEFAULT_CACHE), help="folder of the vector cache")
    parser.add_argument("--json", help="write every variant's per-query metrics and outcomes here")
    args = parser.parse_args(argv)
    levels = [level for level in args.levels.split(",") if level]

    setup_django()
    from django.db import connection

    from ilab_memory import ILabMemory
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embed_waiting, queue_missing

    embedder = model_embedder(args.model, args.vector_cache)
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        mem = ILabMemory(embedder=embedder, embedding_runner=None, search_embed_milliseconds=None)

        def search(user_id, query, now=None):
            return mem.mem_search(user_id, query, limit=K, now=now, time_zone="UTC" if now else None)

        print(f"half: {args.half}   engine: {connection.vendor}   model: {embedder.model_id}   levels: {levels}"
              f"   phase: {args.phase}")
        results, rankers = {}, {}
        config = get_config({"EMBEDDER": embedder, "EMBEDDING_RUNNER": None})
        if args.phase == "embedded":
            loaded = load_half(args.half, levels, Path(args.data), args.english)
            queue_missing(config=config)
            embed_waiting(config=config)
            embedder.save()
            rankers = baselines(loaded, embedder)
        for name, constants, rules in variants(args.rules, args.vary, args.drop):
            if args.phase == "after-saves":  # the same saves for each, nothing embedded but the searches' budgets
                clear()
                loaded = load_half(args.half, levels, Path(args.data), args.english)
                queue_as_written(config=config)
            with applied(constants, rules):
                results[name] = run_variant(loaded, search)
        words = ILabMemory(embedder=None, embedding_runner=None)
        results["words only"] = run_variant(loaded, lambda user_id, query, now=None: words.mem_search(
            user_id, query, limit=K, now=now, time_zone="UTC" if now else None))
    finally:
        embedder.save()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print_report(results, rankers)
    if args.json:
        Path(args.json).write_text(json.dumps({"half": args.half, "engine": connection.vendor,
                                               "model": embedder.model_id,
                                               "results": results, "rankers": rankers}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
