"""ilab_memory.services.search.postgresql: the tsqueries a parsed query becomes (plain strings,
checked on either engine; tests/test_search.py runs PostgreSQL's two read paths)."""

from ilab_memory.services.search import parse_query
from ilab_memory.services.search.postgresql import tsqueries, tsquery_phrase


def test_a_term_of_several_tokens_is_a_phrase_and_a_trailing_star_a_prefix():
    assert tsquery_phrase(("celery",)) == "('celery')"
    assert tsquery_phrase(("std", "vector")) == "('std' <-> 'vector')"
    assert tsquery_phrase(("deplo", "*")) == "('deplo':*)"


def test_all_terms_are_anded_and_any_term_also_offers_a_phrases_words_alone():
    assert tsqueries(parse_query("celery retry")) == ("('celery') & ('retry')", "('celery') | ('retry')")
    assert tsqueries(parse_query('"red wine"')) == (
        "('red' <-> 'wine')", "('red' <-> 'wine') | ('red') | ('wine')")
