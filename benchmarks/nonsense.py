"""Queries with no answer, for the benchmarks: random letter strings and unrelated questions.

A user asks for something none of their memories holds; the right answer is ``[]`` (or very
little, each result marked as found by meaning only). Two families, per user:

* **letters** (seeded, ``random.Random``), three kinds taking turns:
  ``consonants`` ("zxqvt", "bkrtnd mfgh"), ``pronounceable`` non-words ("blorft", "zhenk
  tramp..."; built from onsets, vowels and codas) and ``keyboard`` noise ("asdkjh qwpeo": runs
  along one row of a QWERTY keyboard). A string is dropped when any of its words is a word of
  the user's memories or of ``known`` (every memory of the set and every question of the bank),
  so a made-up word that happens to be real never counts as nonsense.
* **unrelated** everyday questions, from ``unrelated_questions.json`` beside this file
  ("What is the capital city of Mongolia?", "¿Cuántos habitantes tiene Lima?"): for each user,
  only those sharing no content word (``tokens`` minus ``STOP_WORDS``) with that user's
  memories. The file is benchmark data; the library never reads it.

``summarize`` reports, per kind: how many were asked, the share that returned ``[]``, the mean
number of results of the others, how many of those returned more than 2, and how many of
their results were found by meaning only (breakdown ``relevance`` None: no word matched).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "unrelated_questions.json"
LETTER_KINDS = ("consonants", "pronounceable", "keyboard")
CONSONANTS = "bcdfghjklmnpqrstvwxz"
ONSETS = ("b", "bl", "br", "d", "dr", "f", "fl", "fr", "g", "gl", "gr", "k", "kl", "kr", "m", "n", "p", "pl",
          "pr", "sk", "sl", "sn", "sp", "st", "str", "t", "tr", "v", "vr", "z", "zh", "sh", "th", "qu")
VOWELS = ("a", "e", "i", "o", "u", "oo", "ou", "ai", "ee", "y")
CODAS = ("rft", "rk", "nd", "mp", "sk", "lb", "rg", "nk", "ft", "lk", "rm", "x", "zz", "sh", "rp", "ng", "b",
         "g", "p", "t", "rb", "lch", "mb", "rz", "")
KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _consonant_word(rng: random.Random) -> str:
    return "".join(rng.choice(CONSONANTS) for _ in range(rng.randint(4, 9)))


def _pronounceable_word(rng: random.Random) -> str:
    syllables = rng.choice((1, 2, 2))
    word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(syllables))
    return word if len(word) >= 4 else word + rng.choice(("rft", "nk", "zz", "mp"))


def _keyboard_word(rng: random.Random) -> str:
    row = rng.choice(KEYBOARD_ROWS)
    length = rng.randint(4, 7)
    start = rng.randrange(len(row))
    word = []
    position = start
    for _ in range(length):  # a finger wandering along the row, one or two keys at a time
        word.append(row[position])
        position = min(max(position + rng.choice((-2, -1, 1, 1, 2, 3)), 0), len(row) - 1)
    return "".join(word)


MAKERS = {"consonants": _consonant_word, "pronounceable": _pronounceable_word, "keyboard": _keyboard_word}


def letter_queries(rng: random.Random, n: int, *, vocabulary: set[str], known: set[str]) -> list[tuple[str, str]]:
    """``n`` (kind, query) pairs, kinds taking turns, each query one to three made-up words
    none of which is in ``vocabulary`` or ``known``."""
    from ilab_memory.services.search import tokens

    queries: list[tuple[str, str]] = []
    tries = 0
    while len(queries) < n and tries < 100 * n + 100:
        tries += 1
        kind = LETTER_KINDS[len(queries) % len(LETTER_KINDS)]
        words = [MAKERS[kind](rng) for _ in range(rng.choice((1, 2, 2, 3) if kind == "keyboard" else (1, 1, 2)))]
        query = " ".join(words)
        if any(token in vocabulary or token in known for token in tokens(query)):
            continue
        queries.append((kind, query))
    return queries


def load_questions(path: Path = QUESTIONS) -> dict[str, list[str]]:
    """{"english": [...], "spanish": [...], "conversations": [...]}"""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: value for key, value in data.items() if isinstance(value, list)}


def content_words(text: str) -> set[str]:
    from ilab_memory.services.search import STOP_WORDS, tokens

    return set(tokens(text)) - STOP_WORDS


def unrelated_for(bank: list[str], vocabulary: set[str]) -> list[str]:
    """The questions of ``bank`` that share no content word with ``vocabulary``."""
    return [q for q in bank if not content_words(q) & vocabulary]


def bank_words(questions: dict[str, list[str]]) -> set[str]:
    from ilab_memory.services.search import tokens

    return {token for bank in questions.values() for q in bank for token in tokens(q)}


def outcome(kind: str, user_id: str, query: str, results) -> dict:
    """One query's record: how many results, how many found by meaning only (and of those how
    many are marked weak), how many are weak in all, the best value."""
    meaning_only = [r for r in results if r.score.breakdown.get("relevance") is None]
    return {"kind": kind, "user_id": user_id, "query": query, "results": len(results),
            "meaning_only": len(meaning_only),
            "meaning_only_weak": sum(bool(r.score.breakdown.get("weak")) for r in meaning_only),
            "weak": sum(bool(r.score.breakdown.get("weak")) for r in results),
            "top_value": results[0].score.value if results else 0.0}


def summarize(records: list[dict]) -> dict:
    """Per kind and over all (``all letters``, ``all unrelated``, ``all``): asked, empty,
    empty_share, mean_results (of the non-empty), over_two (non-empty with more than 2 results),
    results and meaning_only (over the non-empty ones' results), top_value median and 95th
    percentile over every query (0 for an empty one)."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(record["kind"], []).append(record)
    letters = [r for r in records if r["kind"] in LETTER_KINDS]
    unrelated = [r for r in records if r["kind"] not in LETTER_KINDS]
    if letters and unrelated:
        groups["all letters"] = letters
        groups["all unrelated"] = unrelated
    groups["all"] = records

    def one(rows: list[dict]) -> dict:
        answered = [r for r in rows if r["results"]]
        tops = sorted(r["top_value"] for r in rows)
        return {
            "asked": len(rows), "empty": len(rows) - len(answered),
            "empty_share": (len(rows) - len(answered)) / len(rows) if rows else 0.0,
            "mean_results": sum(r["results"] for r in answered) / len(answered) if answered else 0.0,
            "over_two": sum(r["results"] > 2 for r in answered),
            "results": sum(r["results"] for r in answered),
            "meaning_only": sum(r["meaning_only"] for r in answered),
            "top_value_median": tops[len(tops) // 2] if tops else 0.0,
            "top_value_p95": tops[min(int(len(tops) * 0.95), len(tops) - 1)] if tops else 0.0,
        }

    order = [*LETTER_KINDS, "unrelated English", "unrelated Spanish", "unrelated", "all letters", "all unrelated",
             "all"]
    kinds = sorted(groups, key=lambda k: (k.startswith("all"), order.index(k) if k in order else 5.5, k))
    return {kind: one(groups[kind]) for kind in kinds}


def print_summary(summaries: dict[str, dict], title: str) -> None:
    """One row per kind; per system (``hybrid``, ``lexical``...): the share that returned
    ``[]``, the mean number of results of the others, how many of the others returned more
    than 2, and of the others' results how many were found by meaning only."""
    systems = list(summaries)
    width = 31
    print(f"\n{title}")
    print(f"{'':28}" + "".join(f"{name:^{width}}" for name in systems))
    print(f"{'kind':22}{'asked':>6}" + f"{'[]':>7}{'mean n':>7}{'>2':>5}{'meaning':>12}" * len(systems))
    first = summaries[systems[0]]
    for kind in first:
        cells = ""
        for name in systems:
            s = summaries[name].get(kind)
            if s is None:
                cells += f"{'-':>{width}}"
                continue
            cells += (f"{s['empty_share']:>7.0%}{s['mean_results']:>7.2f}{s['over_two']:>5d}"
                      f"{s['meaning_only']:>6d}/{s['results']:<5d}")
        print(f"{kind[:22]:22}{first[kind]['asked']:6d}{cells}")
    print("([]: share returning nothing; mean n: results of the others; >2: others with more than 2 results; "
          "meaning: of their results, found by meaning only)")


def empty_by_group(first: list[dict], second: list[dict], *, with_kinds: bool) -> dict[str, tuple[dict, dict]]:
    """Two runs' records as {group: ({user and query: 1 if it returned []}, the same of the
    second run)}: every query, letter strings, unrelated questions, and (``with_kinds``) each kind."""
    groups: dict[str, tuple[dict, dict]] = {}
    for records, side in ((first, 0), (second, 1)):
        for r in records:
            family = "all letters" if r["kind"] in LETTER_KINDS else "all unrelated"
            for group in ("all", family, *((r["kind"],) if with_kinds else ())):
                groups.setdefault(group, ({}, {}))[side][f"{r['user_id']}\0{r['query']}"] = float(r["results"] == 0)
    return groups
