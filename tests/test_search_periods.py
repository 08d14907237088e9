"""A date phrase in a query, with the real offline model (multilingual-e5-small): the period it
names is evidence beside words and meaning, in English and in Spanish alike."""

from datetime import timedelta

import pytest

from tests.conftest import START

NOW = START  # a Thursday; last week is Monday 5 to Monday 12 January 2026

MEMORIES = [  # (days before NOW, title, content, type)
    (9, "Moved to PostgreSQL", "We decided to move the database to PostgreSQL.", "decision"),
    (30, "Background work on Celery", "We decided to run background work on Celery.", "decision"),
    (60, "Retire the v1 API", "We decided to retire the v1 API by spring.", "decision"),
    (1, "Login loop on Safari", "Users on Safari get stuck in a login loop; a SameSite cookie is the cause.", "bugfix"),
    (40, "Export worker leaks memory", "The export worker leaks memory on reports over 10k rows.", "bugfix"),
    (2, "Lunch with Priya", "Talked about her move to the billing team over ramen.", "manual"),
    (20, "Standup moved", "The daily standup is now at 9:45 for the West Coast folks.", "manual"),
    (50, "Prefers small pull requests", "Dana wants pull requests under 300 lines.", "preference"),
]


@pytest.fixture
def history(mem, clock):
    saved = {}
    for days, title, content, type_ in MEMORIES:
        saved[title] = mem.mem_save("alice", title, content, type=type_,
                                    happened_at=NOW - timedelta(days=days)).observation
    return saved


@pytest.mark.parametrize("query", ["what did we decide last week?", "¿qué decidimos la semana pasada?"])
def test_a_question_that_is_mostly_its_date_is_answered_by_its_period(mem, history, query):
    results = mem.mem_search("alice", query, time_zone="UTC")
    assert results[0].title == "Moved to PostgreSQL"
    assert results[0].score.breakdown["in_period"] is True
    assert all(r.score.breakdown["in_period"] is False for r in results[1:])


@pytest.mark.parametrize("query", ["what broke yesterday?", "¿qué falló ayer?"])
def test_a_memory_of_the_period_is_found_when_neither_its_words_nor_its_meaning_are_near(mem, history, query):
    results = mem.mem_search("alice", query, time_zone="UTC")
    assert results[0].title == "Login loop on Safari"
    assert results[0].score.breakdown["in_period"] is True


@pytest.mark.parametrize("query", ["what did we decide last week about Celery?",
                                   "¿qué decidimos la semana pasada sobre Celery?"])
def test_a_misremembered_period_does_not_hide_the_memory_the_words_name(mem, history, query):
    """The user misremembers: Celery was chosen a month ago. The period weighs beside the words,
    it does not filter."""
    titles = [r.title for r in mem.mem_search("alice", query, time_zone="UTC")]
    assert titles.index("Background work on Celery") <= 1
