"""The search sets of benchmarks/data and the background bank: well formed, split by user, and
the bank shares no question, nor a near copy of one, with any set."""

import json
import re
import unicodedata
from pathlib import Path

import pytest

from benchmarks import tune
from ilab_memory.services.search import STOP_WORDS, calibration

DATA = Path(tune.DATA)
KINDS = ("[paraphrase]", "[question]", "[category]", "[cross-es-en]", "[cross-en-es]", "[negative-distractor]",
         "[identifier]")


def halves():
    return {half: json.loads((DATA / f"meaning-{half}.json").read_text(encoding="utf-8")) for half in tune.HALVES}


def words(text: str) -> set[str]:
    """Content words: accents and case folded, a question's function words left out."""
    text = "".join(c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c))
    return {w for w in re.split(r"[^a-z0-9ñ]+", text) if w} - STOP_WORDS


def near(a: str, b: str) -> bool:
    """The same content words, or at least two shared making up 80 % of the shorter one's."""
    first, second = words(a), words(b)
    shared = first & second
    return bool(first and second) and (first == second or (len(shared) >= 2
                                                            and len(shared) >= 0.8 * min(len(first), len(second))))


def every_question() -> list[str]:
    found = []
    for path in DATA.glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        found += [q.get("query") or q.get("question") for q in data.get("queries", data.get("questions", []))]
        found += [u["query"] for u in data.get("unrelated", [])]
    bank = json.loads((DATA.parent / "unrelated_questions.json").read_text(encoding="utf-8"))
    return found + [q for value in bank.values() if isinstance(value, list) for q in value]


def test_the_background_bank_shares_no_question_and_no_near_copy_with_any_set():
    questions = every_question()
    assert len(questions) > 900  # (a count only: a failure must not print the checking half)
    assert [line for line in calibration.bank() if any(near(line, q) for q in questions)] == []


def test_near_copies_are_caught():
    assert near("How do I remove a red wine stain from a carpet?", "how do i remove a red wine stain from carpet")
    assert not near("what is the capital of australia", "what is the capital of peru")


def test_the_meaning_set_has_its_size_its_kinds_and_two_halves_of_different_people():
    sets = halves()
    users = {half: {o["user_id"] for o in data["observations"]} for half, data in sets.items()}
    assert not users["tuning"] & users["checking"]
    assert sum(map(len, users.values())) >= 12
    assert sum(len(data["observations"]) for data in sets.values()) >= 500
    queries = [q for data in sets.values() for q in data["queries"]]
    assert len(queries) >= 300
    for kind in KINDS:
        assert sum(q["note"].startswith(kind) for q in queries) >= 40, kind


@pytest.mark.parametrize("half", tune.HALVES)
def test_every_query_is_graded_on_its_own_users_memories(half):
    data = halves()[half]
    owner = {o["key"]: o["user_id"] for o in data["observations"]}
    assert len(owner) == len(data["observations"])
    for q in data["queries"]:
        assert q["note"].startswith(KINDS), q["id"]
        assert 2 in q["relevant"].values() and {owner[key] for key in q["relevant"]} == {q["user_id"]}, q["id"]
    per_user = {}
    for u in data["unrelated"]:
        per_user.setdefault(u["user_id"], []).append(u)
    for user_id, asked in per_user.items():
        assert {u["lang"] for u in asked} == {"en", "es"}
        assert 2 * sum(u["shares_word"] is not None for u in asked) == len(asked), user_id


def test_the_graded_sets_split_by_user_into_halves():
    for name in ("search-dev.json", "search-semantic-dev.json"):
        tuning, checking = (tune.graded_half(DATA / name, half) for half in tune.HALVES)
        assert tuning["queries"] and checking["queries"]
        assert not {o["user_id"] for o in tuning["observations"]} & {o["user_id"] for o in checking["observations"]}
    tuning, checking = (tune.conversation_half(half) for half in tune.HALVES)
    assert len(tuning) == len(checking) == 30
    assert not {q["question_id"] for q in tuning} & {q["question_id"] for q in checking}


def test_every_query_and_memory_of_the_sets_holds_a_word():
    from ilab_memory.services.search import lexicon

    texts = every_question()
    for path in DATA.glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        texts += [f"{o['title']} {o['content']}" for o in data.get("observations", [])]
    assert len(texts) > 1500
    assert sum(not lexicon.has_words(text) for text in texts) == 0  # a count: the checking half is not printed
