"""services/search/query.py: from the user's text to search terms, the same on both engines.

The parser on its own, then what its terms do with real rows on the suite's engine: the fold in
Python is the one the database indexed with, accents and case meet on either side, a compound
word is a phrase of its parts, an overlong token is dropped, and the fallback's prefix reaches
another form of a word.
"""

import pytest
from django.db import connection
from django.test import override_settings

from ilab_memory.services.search.query import MAX_TOKEN_CHARS, any_terms, fold, parse_query, stem, tokens


@pytest.fixture(autouse=True)
def words_only():
    with override_settings(ILAB_MEMORY={"EMBEDDER": None}):
        yield


def save(mem, title, content="-"):
    return mem.mem_save("u", title, content).observation


def found(mem, query):
    return [(result.title, result.score.breakdown["mode"]) for result in mem.mem_search("u", query)]


# -- the parser ------------------------------------------------------------------------------

def test_parser_reads_words_phrases_and_compounds():
    assert parse_query('std::vector "Visibility  Timeout" Migración').terms == (
        ("std", "vector"), ("visibility", "timeout"), ("migracion",)
    )
    question = parse_query("how do we send reminders")
    assert question.terms == (("send",), ("reminders",))
    assert parse_query("how do we").terms == (("how",), ("do",), ("we",))
    assert parse_query("redis OR rabbitmq").terms == (("redis",), ("rabbitmq",))
    assert parse_query('"mascara de').terms == (("mascara",),)


def test_an_overlong_token_is_dropped_and_its_neighbours_kept():
    assert tokens(f"short {'x' * (MAX_TOKEN_CHARS + 1)} word") == ["short", "word"]
    assert tokens("x" * MAX_TOKEN_CHARS) == ["x" * MAX_TOKEN_CHARS]


def test_stem_cuts_a_common_suffix_only_when_enough_is_left():
    assert stem("rotation") == "rotat"
    assert stem("rotate") == "rotat"
    assert stem("keys") is None  # "key" would be too short a prefix
    assert stem("v2") is None  # not a word of letters


def test_the_fallback_has_each_phrase_its_words_and_prefixes():
    assert any_terms(parse_query('"visibility timeout" rotate')) == [
        ("visibility", "timeout"), ("rotate",), ("visibility",), ("timeout",), ("rotat", "*"),
    ]


# -- with rows -------------------------------------------------------------------------------

FOLDED = ["Migración de la CLÍNICA", "std::vector<int>", "ÀÉÎÕÜ çñ ß", "a—b…c", "x🎉y", "ｆｕｌｌ－width",
          "C++/CLI", "naïve café", "tab\tand\nnewline", "  spaced  out  "]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the fold function is PostgreSQL's")
@pytest.mark.parametrize("text", FOLDED)
def test_the_python_fold_is_the_one_postgresql_indexes_with(db, text):
    with connection.cursor() as cursor:
        cursor.execute("SELECT ilab_memory_search_fold(%s)", [text])
        (in_sql,) = cursor.fetchone()
    assert in_sql.split() == fold(text).split()


def test_accents_and_case_meet_on_either_side(mem, clock):
    save(mem, "Migración de la clínica")
    save(mem, "MIGRACION plan")
    assert sorted(found(mem, "migracion")) == [("MIGRACION plan", "all"), ("Migración de la clínica", "all")]
    assert sorted(found(mem, "Migración")) == [("MIGRACION plan", "all"), ("Migración de la clínica", "all")]


def test_a_compound_word_finds_its_parts_in_order_only(mem, clock):
    save(mem, "Use select_for_update on bookings")
    save(mem, "Update the select list, for now")
    results = mem.mem_search("u", "select_for_update")
    assert results[0].title == "Use select_for_update on bookings"
    assert [r.title for r in results if r.score.breakdown["all_terms"]] == ["Use select_for_update on bookings"]


def test_an_overlong_token_in_a_query_does_not_stop_the_rest_from_matching(mem, clock):
    save(mem, "Short note")
    assert found(mem, f"short {'x' * (MAX_TOKEN_CHARS + 45)}") == [("Short note", "all")]


def test_the_fallback_prefix_finds_another_form_of_a_word(mem, clock):
    save(mem, "Key rotation runbook")
    assert found(mem, "rotate") == [("Key rotation runbook", "any")]
