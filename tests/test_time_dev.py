"""The dated development set of benchmarks/time_search.py reads as labelled.

Each question's date phrase, read by ``read_period`` at its asking time in its user's zone, names
a period holding its answer when the set says the phrase is right, and one missing it when the
set says the phrase misleads: the benchmark's two groups mean what they say, and a change to
the reading of 82 real English and Spanish phrases shows here.
"""

import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from benchmarks.time_search import local
from ilab_memory.services.search.periods import read_period

pytestmark = pytest.mark.engine_independent

SET = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "time_dev.json").read_text("utf-8"))
ZONES = {user: info["time_zone"] for user, info in SET["users"].items()}
HAPPENED = {m["key"]: local(m["happened_at"], ZONES[m["user"]]) for m in SET["memories"]}


@pytest.mark.parametrize("question", SET["questions"], ids=lambda q: q["query"])
def test_each_phrase_holds_its_answer_only_when_labelled_right(question):
    zone = ZoneInfo(ZONES[question["user"]])
    asked = local(question["asked_at"], ZONES[question["user"]])
    period = read_period(question["query"], now=asked, time_zone=zone)
    assert HAPPENED[question["answer"]] < asked
    inside = period is not None and HAPPENED[question["answer"]] in period
    assert inside == (question["reading"] == "right"), period


def test_the_set_has_both_languages_and_misleading_phrases():
    languages = {SET["users"][q["user"]]["language"] for q in SET["questions"]}
    assert languages == {"en", "es"}
    assert sum(q["reading"] == "wrong" for q in SET["questions"]) >= 20
