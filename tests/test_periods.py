"""Date phrases of search queries read into periods by the real dateparser, in the user's zone."""

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.time_search import answers_of
from benchmarks.time_search import local as in_zone
from ilab_memory.services.search.periods import Period, read_period

pytestmark = pytest.mark.engine_independent

NEW_YORK = ZoneInfo("America/New_York")
# Saturday 2026-12-05 01:00 UTC: still Friday 4 December in New York.
NOW = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)


def local(*parts) -> datetime:
    return datetime(*parts, tzinfo=NEW_YORK)


def read(query: str, now: datetime = NOW, zone=NEW_YORK) -> Period | None:
    return read_period(query, now=now, time_zone=zone)


def test_yesterday_is_the_day_before_the_users_today():
    period = read("yesterday")
    assert (period.start, period.end) == (datetime(2026, 12, 3, 5, tzinfo=UTC), datetime(2026, 12, 4, 5, tzinfo=UTC))
    assert period.phrase == "yesterday"


def test_the_same_moment_in_utc_is_another_day():
    period = read("yesterday", zone=UTC)
    assert (period.start, period.end) == (datetime(2026, 12, 4, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC))


@pytest.mark.parametrize(("query", "phrase", "start", "end"), [
    ("what did I do yesterday", "yesterday", local(2026, 12, 3), local(2026, 12, 4)),
    ("qué dije ayer sobre python", "ayer", local(2026, 12, 3), local(2026, 12, 4)),
    ("today", "today", local(2026, 12, 4), local(2026, 12, 5)),
    ("notas de hoy", "hoy", local(2026, 12, 4), local(2026, 12, 5)),
    ("two days ago", "two days ago", local(2026, 12, 2), local(2026, 12, 3)),
    ("¿qué pasó hace dos días?", "hace dos días", local(2026, 12, 2), local(2026, 12, 3)),
    ("hace 2 dias", "hace 2 dias", local(2026, 12, 2), local(2026, 12, 3)),
    ("on 3 May 2025", "3 May 2025", local(2025, 5, 3), local(2025, 5, 4)),
    ("el 3 de mayo de 2025", "3 de mayo de 2025", local(2025, 5, 3), local(2025, 5, 4)),
    ("deploy 2025-05-03 rollback", "2025-05-03", local(2025, 5, 3), local(2025, 5, 4)),
    ("on monday", "monday", local(2026, 11, 30), local(2026, 12, 1)),
    ("this week", "this week", local(2026, 11, 30), local(2026, 12, 7)),
    ("esta semana", "esta semana", local(2026, 11, 30), local(2026, 12, 7)),
    ("what did we decide last week about the deploy", "last week", local(2026, 11, 23), local(2026, 11, 30)),
    ("la semana pasada hablamos de python", "la semana pasada", local(2026, 11, 23), local(2026, 11, 30)),
    ("three weeks ago", "three weeks ago", local(2026, 11, 9), local(2026, 11, 16)),
    ("hace tres semanas", "hace tres semanas", local(2026, 11, 9), local(2026, 11, 16)),
    ("a week ago", "a week ago", local(2026, 11, 23), local(2026, 11, 30)),
    ("in March", "in March", local(2026, 3, 1), local(2026, 4, 1)),
    ("reuniones en marzo", "en marzo", local(2026, 3, 1), local(2026, 4, 1)),
    ("in May", "in May", local(2026, 5, 1), local(2026, 6, 1)),
    ("last month", "last month", local(2026, 11, 1), local(2026, 12, 1)),
    ("el mes pasado", "el mes pasado", local(2026, 11, 1), local(2026, 12, 1)),
    ("hace un mes", "hace un mes", local(2026, 11, 1), local(2026, 12, 1)),
    ("in 2024", "in 2024", local(2024, 1, 1), local(2025, 1, 1)),
    ("last year", "last year", local(2025, 1, 1), local(2026, 1, 1)),
    ("el año pasado", "el año pasado", local(2025, 1, 1), local(2026, 1, 1)),
])
def test_phrases_name_their_day_week_month_or_year(query, phrase, start, end):
    period = read(query)
    assert (period.phrase, period.start, period.end) == (phrase, start, end)


@pytest.mark.parametrize("query", [
    "how many devices do I use in a day?",
    "how many plants did I get in the last four months?",
    "how much faster than my previous year's time?",
    "we meet once a week",
    "a week of rain",
    "dos semanas de vacaciones",
    "in two weeks",
])
def test_a_unit_without_a_word_placing_it_in_time_is_a_length_not_a_period(query):
    # Phrases of LongMemEval's questions that dateparser reads as dates: "in a day" as tomorrow,
    # "four months" as the month four months ago, "year" as today.
    assert read(query) is None


def test_a_month_alone_is_the_latest_one_not_in_the_future():
    assert read("in March").start == local(2026, 3, 1)
    in_february = datetime(2026, 2, 10, 12, tzinfo=UTC)
    assert read("in March", now=in_february).start == local(2025, 3, 1)
    assert read("en marzo", now=in_february).end == local(2025, 4, 1)


@pytest.mark.parametrize("query", [
    "python deploy may fail",
    "what is the capital of Mongolia",
    "we sat by the sea",
    "¿dónde está mi mar favorito?",
    "version 2 of the api",
    "meeting notes",
    "the second option",
    "now what",
    "sun and sat",
    "python 3.12 release notes",
    "port 8080 is busy",
    "standup por la mañana",
    "what did I say an hour ago",
    "daily standup",
    "mi mes favorito",
    "",
    "   ",
])
def test_queries_without_a_date_phrase_name_no_period(query):
    assert read(query) is None


def test_a_period_holds_its_start_and_not_its_end():
    period = read("yesterday")
    assert period.start in period
    assert local(2026, 12, 3, 23, 59) in period
    assert period.end not in period
    assert local(2026, 12, 2, 23, 59) not in period


def test_a_period_spans_a_daylight_saving_change():
    period = read("in March")  # New York moves its clocks on 8 March
    assert (period.end - period.start).total_seconds() == (31 * 24 - 1) * 3600


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="now must be an aware datetime"):
        read_period("yesterday", now=datetime(2026, 12, 5), time_zone=UTC)


@settings(max_examples=200, deadline=None)
@given(query=st.text(max_size=120) | st.lists(st.sampled_from(
    ["in", "en", "de", "el", "last", "may", "mayo", "2025", "3", "hace", "días", "week", "ago", "yesterday",
     "9999", "1900", "2025-13-45", "31/02/2025", "the", "dos", "mar", "año", "pasado", "x"]), max_size=8).map(" ".join))
def test_any_text_gives_none_or_an_aware_nonempty_period(query):
    period = read(query)
    if period is not None:
        assert period.start.utcoffset() is not None and period.end.utcoffset() is not None
        assert period.start < period.end
        assert period.phrase in query


@pytest.mark.parametrize("query", ["0² last week", "version ²³", "in ٢٠٢٥", "error ¹2"])
def test_digits_of_other_forms_are_read_or_left_without_error(query):
    # "²".isdigit() is True, yet int("²") fails: only decimal digits are read as numbers.
    read_period(query, now=datetime(2026, 1, 15, 9, 0, tzinfo=UTC), time_zone=UTC)


# -- The dated development set of benchmarks/time_search.py reads as labelled ----------------------

SET = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "time_dev.json").read_text("utf-8"))
ZONES = {user: info["time_zone"] for user, info in SET["users"].items()}
HAPPENED = {m["key"]: in_zone(m["happened_at"], ZONES[m["user"]]) for m in SET["memories"]}
TYPES = {m["key"]: m["type"] for m in SET["memories"]}


@pytest.mark.parametrize("question", SET["questions"], ids=lambda q: q["query"])
def test_each_phrase_holds_its_answer_only_when_labelled_right(question):
    zone = ZoneInfo(ZONES[question["user"]])
    asked = in_zone(question["asked_at"], ZONES[question["user"]])
    period = read_period(question["query"], now=asked, time_zone=zone)
    answers = answers_of(question)
    assert all(HAPPENED[key] < asked for key in answers)
    inside = period is not None and all(HAPPENED[key] in period for key in answers)
    assert inside == (question["reading"] == "right"), period
    if question.get("kind") == "generic":  # every memory of the kind asked about in the period answers it
        kind = TYPES[answers[0]]
        assert {k for k, t in TYPES.items() if t == kind and k.startswith(question["user"] + "-")
                and HAPPENED[k] in period} == set(answers)


def test_the_set_has_both_languages_and_misleading_phrases():
    languages = {SET["users"][q["user"]]["language"] for q in SET["questions"]}
    assert languages == {"en", "es"}
    assert sum(q["reading"] == "wrong" for q in SET["questions"]) >= 20
    assert sum(q.get("kind") == "generic" for q in SET["questions"]) >= 100
