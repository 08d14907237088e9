"""mem_search's full-text half (its SearchScore) on the suite's engine, SQLite or PostgreSQL.

These tests pin the lexical engine, so they run with EMBEDDER None; tests/test_search_hybrid.py
covers search by meaning and the fusion, tests/test_index.py the index through a migration.
"""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation
from ilab_memory.services.search import observation_search
from ilab_memory.types import ContextScore, SearchScore


@pytest.fixture(autouse=True)
def words_only():
    with override_settings(ILAB_MEMORY={"EMBEDDER": None}):
        yield


def save(mem, user, title, content, **kwargs):
    return mem.mem_save(user, title, content, **kwargs).observation


def titles(results):
    return [r.title for r in results]


@pytest.fixture
def corpus(mem, clock):
    """A small fixed corpus with clear winners: the parity expectations below hold on both engines."""
    user = "ana"
    save(mem, user, "Celery retry policy", "Tasks retry three times with exponential backoff.", type="decision")
    clock.shift(timedelta(hours=1))
    save(mem, user, "Deploy checklist", "Run migrations, then restart celery workers. Retry on failure.")
    clock.shift(timedelta(hours=1))
    save(mem, user, "Postgres exclusion constraint", "Overlapping appointments are rejected by the database.",
         topic_key="architecture/double-booking")
    clock.shift(timedelta(hours=1))
    save(mem, user, "Migración de la clínica", "Los datos de Madrid se movieron el lunes.")
    clock.shift(timedelta(hours=1))
    save(mem, user, "Use std::vector for buffers", "Contiguous memory beats std::list here.", type="pattern")
    clock.shift(timedelta(hours=1))
    save(mem, user, "Vector math", "SIMD helpers for the physics code.")
    return user


# -- parity: fixed expectations, asserted on whichever engine runs the suite ----------------

@pytest.mark.parametrize(
    "query, expected_top",
    [
        ("celery retry", ["Celery retry policy", "Deploy checklist"]),
        ("retry celery", ["Celery retry policy", "Deploy checklist"]),
        ("std::vector", ["Use std::vector for buffers"]),
        ("migracion clinica", ["Migración de la clínica"]),
        ("MIGRACIÓN madrid", ["Migración de la clínica"]),
        ("double booking", ["Postgres exclusion constraint"]),
        ("vector", ["Vector math", "Use std::vector for buffers"]),
    ],
)
def test_same_corpus_gives_the_expected_top_results(mem, corpus, query, expected_top):
    results = mem.mem_search(corpus, query)
    assert titles(results)[: len(expected_top)] == expected_top


def test_title_match_outranks_content_match(mem, clock):
    save(mem, "u", "Notes", "We talked about the webhook signature and many other things at length.")
    save(mem, "u", "Webhook signature", "Checked.")
    assert titles(mem.mem_search("u", "webhook signature"))[0] == "Webhook signature"


def test_topic_key_words_are_searchable(mem, corpus):
    results = mem.mem_search(corpus, "double-booking")
    assert titles(results) == ["Postgres exclusion constraint"]


# -- modes and scores ----------------------------------------------------------------------

def test_rows_holding_every_term_come_first(mem, corpus):
    results = mem.mem_search(corpus, "celery backoff")
    assert titles(results)[0] == "Celery retry policy"
    assert results[0].score.breakdown["mode"] == "all" and results[0].score.breakdown["all_terms"]
    assert not any(r.score.breakdown["all_terms"] for r in results[1:])
    assert all(r.score.value < results[0].score.value / 2 for r in results[1:])


def test_any_term_fallback_when_no_row_holds_every_term(mem, corpus):
    results = mem.mem_search(corpus, "celery physics")
    assert {"Vector math", "Celery retry policy"} <= set(titles(results))
    assert all(r.score.breakdown["mode"] == "any" for r in results)


def test_quoted_phrase_needs_adjacent_words(mem, corpus):
    results = mem.mem_search(corpus, '"retry policy"')
    assert titles(results)[0] == "Celery retry policy"
    assert [r.title for r in results if r.score.breakdown["all_terms"]] == ["Celery retry policy"]
    assert mem.mem_search(corpus, '"policy retry"')[0].score.breakdown["mode"] == "any"


def test_scores_are_search_scores_in_zero_one_best_first(mem, corpus):
    results = mem.mem_search(corpus, "celery retry")
    values = [r.score.value for r in results]
    assert all(isinstance(r.score, SearchScore) for r in results)
    assert all(0 < v < 1 for v in values)
    assert values == sorted(values, reverse=True)
    assert set(results[0].score.breakdown) >= {"engine", "relevance", "mode", "recency"}


def test_search_score_cannot_be_compared_with_context_score(mem, corpus):
    result = mem.mem_search(corpus, "celery")[0]
    with pytest.raises(TypeError):
        result.score < ContextScore(0.5)  # noqa: B015 (the comparison itself is what must raise)


def test_newer_of_two_equal_matches_ranks_first(mem, clock):
    save(mem, "u", "Redis maxmemory policy", "allkeys-lru")
    clock.shift(timedelta(days=60))
    save(mem, "u", "Redis maxmemory policy", "volatile-lru")
    results = mem.mem_search("u", "redis maxmemory policy")
    assert [r.preview for r in results] == ["volatile-lru", "allkeys-lru"]


def test_results_are_compact_with_previews(mem, clock):
    save(mem, "u", "Long one", "word " * 200)
    result = mem.mem_search("u", "long")[0]
    assert result.preview.endswith("…") and len(result.preview) == 301


# -- filters, limits, validation -----------------------------------------------------------

def test_type_filter(mem, corpus):
    assert titles(mem.mem_search(corpus, "celery", type="decision")) == ["Celery retry policy"]


def test_a_limit_above_the_configured_maximum_is_refused_not_cut(mem, clock):
    from ilab_memory.conf import get_config

    for n in range(8):
        save(mem, "u", f"Note {n} about kafka", "kafka")
    assert len(mem.mem_search("u", "kafka", limit=3)) == 3
    assert len(observation_search(user_id="u", query="kafka", limit=50)) == 8
    small = get_config({"SEARCH_MAX_LIMIT": 5, "SEARCH_DEFAULT_LIMIT": 5})
    assert len(observation_search(user_id="u", query="kafka", config=small)) == 5
    with pytest.raises(ValidationError) as error:
        observation_search(user_id="u", query="kafka", limit=6, config=small)
    assert (error.value.field, error.value.code, error.value.limit) == ("limit", "max_value", 5)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_is_a_validation_error(mem, query):
    with pytest.raises(ValidationError) as error:
        mem.mem_search("u", query)
    assert error.value.field == "query"


def test_over_long_query_is_a_validation_error_naming_the_limit(mem):
    with pytest.raises(ValidationError) as error:
        mem.mem_search("u", "a" * 501)
    assert (error.value.field, error.value.limit, error.value.size) == ("query", 500, 501)


@pytest.mark.parametrize("limit", [0, -1, "10", 2.5, True])
def test_bad_limit_is_a_validation_error(mem, limit):
    with pytest.raises(ValidationError) as error:
        mem.mem_search("u", "x", limit=limit)
    assert error.value.field == "limit"


def test_min_score_leaves_out_the_results_scoring_below_it(mem, clock):
    save(mem, "u", "Kafka consumer lag", "kafka consumer lag alert at 10k messages")
    save(mem, "u", "Kafka retention", "kafka topics keep seven days")
    everything = mem.mem_search("u", "kafka consumer lag")
    scores = [r.score.value for r in everything]
    assert len(scores) == 2 and scores[0] > scores[1]
    cut = (scores[0] + scores[1]) / 2
    assert titles(mem.mem_search("u", "kafka consumer lag", min_score=cut)) == ["Kafka consumer lag"]
    assert mem.mem_search("u", "kafka consumer lag", min_score=scores[0] + 0.01) == []
    assert titles(mem.mem_search("u", "kafka consumer lag", min_score=0)) == titles(everything)
    assert titles(mem.mem_search("u", "kafka consumer lag", min_score=scores[1] - 1e-6)) == titles(everything)


@pytest.mark.parametrize(("min_score", "code"), [(-0.01, "min_value"), ("0.5", "invalid_type"), (True, "invalid_type"),
                                                 (float("nan"), "invalid_type"), (float("inf"), "invalid_type")])
def test_bad_min_score_is_a_validation_error_naming_it_and_its_limit(mem, min_score, code):
    with pytest.raises(ValidationError) as error:
        mem.mem_search("u", "x", min_score=min_score)
    assert (error.value.field, error.value.code) == ("min_score", code)
    assert "at least 0" in str(error.value)
    if code == "min_value":
        assert error.value.limit == 0


def test_bad_type_is_a_validation_error(mem):
    with pytest.raises(ValidationError) as error:
        mem.mem_search("u", "x", type="Not A Slug")
    assert error.value.field == "type"


def test_only_punctuation_finds_nothing(mem, corpus):
    assert mem.mem_search(corpus, '"" () * - + : ^') == []


@pytest.mark.parametrize(
    "query",
    ['"', '"unbalanced', "(", "a) OR (b", "AND", "OR OR", "NOT", "NEAR(a b", "NEAR/3", "*", "-x", "+x",
     "col:x", "^x", "C++", "foo.bar()", "a:b:c", "'", "\\", "{title}: x", "x AND NOT y", "@@ ||", "%_",
     "'a' & 'b'", "a <-> b", "!!x", "a:*", "$1", "\u00a0x", "ﬁ", "émoji 🎉", "x" * 300],
)
def test_operator_and_punctuation_input_never_raises_engine_errors(mem, corpus, query):
    results = mem.mem_search(corpus, query)
    assert isinstance(results, list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=80)
       | st.lists(st.sampled_from(['"', "(", ")", "*", "-", "+", ":", "^", "AND", "OR", "NOT", "NEAR",
                                   "c++", "x.y()", "'", "\\", "%", "_", "&", "|", "!", "<->", "é", " "]),
                  max_size=12).map("".join))
def test_fuzzed_queries_raise_nothing_but_validation_errors(mem, corpus, query):
    try:
        results = mem.mem_search(corpus, query)
    except ValidationError:
        return
    assert all(r.score.breakdown["mode"] in ("all", "any") for r in results)


def test_question_words_are_not_required(mem, clock):
    save(mem, "u", "SMS reminders go out a day ahead", "Twilio at T-24h.")
    results = mem.mem_search("u", "how do we sms reminders?")
    assert titles(results) == ["SMS reminders go out a day ahead"]
    assert results[0].score.breakdown["mode"] == "all"


def test_fallback_finds_other_forms_of_a_word(mem, clock):
    save(mem, "u", "Key rotation runbook", "Roll the secret every quarter.")
    results = mem.mem_search("u", "rotate keys")
    assert titles(results) == ["Key rotation runbook"]
    assert results[0].score.breakdown["mode"] == "any"


def test_default_limit_is_the_configured_default(mem, clock):
    for n in range(12):
        save(mem, "u", f"kafka {n}", "kafka")
    assert len(observation_search(user_id="u", query="kafka")) == 10


# -- isolation, deletion, privacy ----------------------------------------------------------

def test_another_users_perfect_match_never_appears(mem, corpus):
    save(mem, "bob", "Celery retry policy", "Celery retry policy celery retry.")
    save(mem, "bob", "Only bob knows zanzibar", "zanzibar")
    assert all(r.title != "Only bob knows zanzibar" for r in mem.mem_search(corpus, "zanzibar"))
    results = mem.mem_search(corpus, "celery retry policy")
    ids = {str(o.id) for o in Observation.objects.filter(user_id=corpus)}
    assert results and {r.id for r in results} <= ids
    assert not {r.id for r in mem.mem_search("bob", "buffers")} & ids


@pytest.mark.parametrize("other", ["Ana", "ana.x", "anä", "ana x"])
def test_user_ids_that_look_alike_are_still_separate(mem, clock, other):
    save(mem, "ana", "Mine", "zanzibar")
    save(mem, other, "Theirs", "zanzibar")
    assert titles(mem.mem_search("ana", "zanzibar")) == ["Mine"]
    assert titles(mem.mem_search(other, "zanzibar")) == ["Theirs"]


def test_soft_deleted_rows_are_never_returned(mem, corpus):
    target = mem.mem_search(corpus, "buffers")[0]
    mem.mem_delete(corpus, target.id)
    assert target.id not in {r.id for r in mem.mem_search(corpus, "buffers")}


def test_restored_row_is_found_again(mem, corpus):
    from ilab_memory.services.observations import observation_restore

    target = mem.mem_search(corpus, "buffers")[0]
    mem.mem_delete(corpus, target.id)
    observation_restore(user_id=corpus, observation_id=target.id)
    assert [r.id for r in mem.mem_search(corpus, "buffers")] == [target.id]


def index_entries(observation_id) -> int:
    """Index entries for one observation, read straight from the engine's index."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM ilab_memory_search WHERE observation_id = %s",
                           [observation_id.replace("-", "")])
        else:
            cursor.execute("SELECT count(*) FROM ilab_memory_observation WHERE id = %s AND search_vector IS NOT NULL",
                           [observation_id])
        return cursor.fetchone()[0]


def test_postgresql_full_text_index_leads_with_the_user_and_keeps_a_small_pending_list(db):
    """The test database is made by a superuser, so migration 0014 could create btree_gin."""
    from ilab_memory.services.search.postgresql import PG_PENDING_LIST_KB

    if connection.vendor != "postgresql":
        pytest.skip("a GIN index of PostgreSQL")
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.reloptions, pg_get_indexdef(c.oid) FROM pg_class c "
                       "WHERE relname LIKE 'ilab_mem_obs%%search'")
        [(options, definition)] = cursor.fetchall()
    assert f"gin_pending_list_limit={PG_PENDING_LIST_KB}" in options
    assert "USING gin (user_id, search_vector)" in definition


def test_hard_delete_removes_the_index_entry(mem, corpus):
    target = mem.mem_search(corpus, "buffers")[0]
    assert index_entries(target.id) == 1
    mem.mem_delete(corpus, target.id, hard=True)
    assert index_entries(target.id) == 0


def test_orm_queryset_delete_removes_index_entries(mem, corpus):
    ids = [str(pk) for pk in Observation.objects.filter(user_id=corpus).values_list("id", flat=True)]
    Observation.objects.filter(user_id=corpus).delete()
    assert sum(index_entries(pk) for pk in ids) == 0


def test_update_reindexes_the_new_text(mem, corpus):
    target = mem.mem_search(corpus, "buffers")[0]
    mem.mem_update(corpus, target.id, title="Arena allocator", content="Bump pointer.")
    assert mem.mem_search(corpus, "buffers") == []
    assert [r.id for r in mem.mem_search(corpus, "allocator")] == [target.id]


def test_topic_revision_reindexes(mem, clock):
    save(mem, "u", "Cache TTL", "five minutes", topic_key="config/cache")
    save(mem, "u", "Cache TTL", "ten minutes", topic_key="config/cache")
    assert mem.mem_search("u", "five") == []
    assert len(mem.mem_search("u", "ten")) == 1


def test_private_text_is_never_searchable(mem):
    """No memory is found by the private words: at most a weak neighbour by meaning, which
    holds none of them."""
    save(mem, "u", "Server notes", "the password is <private>hunter2 swordfish</private> ok")
    for query in ("hunter2", "swordfish"):
        results = mem.mem_search("u", query)
        assert all(r.score.breakdown["relevance"] is None for r in results)
        assert query not in str(results)


# -- cost ----------------------------------------------------------------------------------

def test_query_count_does_not_grow_with_results_or_terms(mem, clock, django_assert_max_num_queries):
    save(mem, "u", "kafka one", "x")
    with django_assert_max_num_queries(2) as small:
        mem.mem_search("u", "kafka")
    for n in range(30):
        save(mem, "u", f"kafka note {n}", "kafka stream partition offset")
    with django_assert_max_num_queries(2) as large:
        mem.mem_search("u", "kafka stream partition offset nothing-matches-all", limit=50)
    assert len(small.captured_queries) == len(large.captured_queries)


# -- the index rebuilt by its command -----------------------------------------------------

def test_rebuild_command_restores_a_wiped_index(mem, corpus):
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("DELETE FROM ilab_memory_search")
        else:
            cursor.execute("UPDATE ilab_memory_observation SET search_vector = NULL")
    assert mem.mem_search(corpus, "buffers") == []
    out = StringIO()
    call_command("ilab_memory_rebuild_index", stdout=out)
    assert "rebuilt from 6 observation(s)" in out.getvalue()
    assert titles(mem.mem_search(corpus, "buffers")) == ["Use std::vector for buffers"]


@pytest.mark.parametrize("query", ["celery retry", "retries", "vector buffers", "migraciones", "database rejected"])
def test_postgresql_reads_a_users_rows_or_its_index_with_the_same_results(mem, corpus, query, monkeypatch):
    """A small user's rows are matched one by one, a large user's come from the index
    (``postgresql.candidates_sql``): the same rows, scores and order either way, in a scope and
    of a type as well."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's two paths")
    from ilab_memory.services.search import lexical
    from ilab_memory.services.search.postgresql import PostgreSQLEngine

    save(mem, corpus, "Retry in the coding scope", "Celery retries apply to this scope too.", scope="coding")

    def answers():
        return [[(r.id, r.score.value) for r in mem.mem_search(corpus, query, **options)]
                for options in ({}, {"scope": "coding"}, {"type": "decision"})]

    monkeypatch.setitem(lexical.ENGINES, "postgresql", PostgreSQLEngine(read_rows_up_to=10**9))
    by_rows = answers()
    monkeypatch.setitem(lexical.ENGINES, "postgresql", PostgreSQLEngine(read_rows_up_to=0))
    assert answers() == by_rows and any(by_rows)
