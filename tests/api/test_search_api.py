"""observations/search/?q= over HTTP."""

import pytest

from tests.api.conftest import API


def save(client, title, content, **extra):
    return client.post(API + "observations/", {"title": title, "content": content, **extra}, format="json")


def test_search_finds_matches_best_first_with_search_scores(as_alice):
    save(as_alice, "Postgres connection pooling", "Use pgbouncer in transaction mode.", type="config")
    save(as_alice, "Frontend colours", "The palette is blue.")
    response = as_alice.get(API + "observations/search/?q=pgbouncer")
    assert response.status_code == 200
    results = response.json()
    assert [r["title"] for r in results] == ["Postgres connection pooling"]
    assert results[0]["score"]["kind"] == "search"
    assert 0 < results[0]["score"]["value"] <= 1


def test_search_filters_by_type_and_honours_limit(as_alice):
    for n in range(3):
        save(as_alice, f"cache note {n}", "redis cache", type="pattern" if n else "bugfix")
    assert len(as_alice.get(API + "observations/search/?q=cache&type=bugfix").json()) == 1
    assert len(as_alice.get(API + "observations/search/?q=cache&limit=2").json()) == 2


def test_search_never_matches_private_text(as_alice):
    save(as_alice, "token", "the key is <private>hunter2</private>")
    results = as_alice.get(API + "observations/search/?q=hunter2").json()
    # No word matched: a result here is only the nearest by meaning of the public text.
    assert all(r["score"]["breakdown"]["relevance"] is None for r in results)


@pytest.mark.parametrize("q", ['"unbalanced', "a AND OR NOT (", "*", "col:val", "'; drop table x; --"])
def test_search_with_operator_soup_is_never_an_error(as_alice, q):
    save(as_alice, "anything", "content")
    assert as_alice.get(API + "observations/search/", {"q": q}).status_code == 200


@pytest.mark.parametrize(
    "params, code",
    [
        ({}, "invalid"), ({"q": "   "}, "blank"), ({"q": "x" * 501}, "max_length"),
        ({"q": "a", "type": "Bad Type"}, "invalid_type_slug"), ({"q": "a", "limit": 0}, "min_value"),
        ({"q": "a", "limit": "x"}, "invalid"),
    ],
)
def test_search_rejects_bad_parameters_with_400(as_alice, params, code):
    response = as_alice.get(API + "observations/search/", params)
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_search_never_returns_another_users_rows(as_alice, as_bob):
    save(as_bob, "bob's secret plan", "zanzibar")
    assert as_alice.get(API + "observations/search/?q=zanzibar").json() == []


@pytest.mark.parametrize(("q", "code"), [("   ", "blank"), ("x" * 501, "max_length")])
def test_a_bad_query_is_named_q_as_the_caller_spelled_it(as_alice, q, code):
    response = as_alice.get(API + "observations/search/", {"q": q})
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["q"] and body["code"] == code
    assert body["detail"].startswith("q: ") and "query" not in body["detail"]


def test_min_score_leaves_out_the_tail_and_above_every_score_leaves_nothing(as_alice):
    save(as_alice, "Boiler service", "The boiler is serviced every October by Acme Heating.")
    save(as_alice, "Boiler pressure", "Keep the boiler at 1.5 bar.")
    everything = as_alice.get(API + "observations/search/", {"q": "boiler serviced October"}).json()
    scores = [r["score"]["value"] for r in everything]
    assert len(scores) >= 2 and scores[0] > scores[-1]
    cut = (scores[0] + scores[-1]) / 2
    kept = as_alice.get(API + "observations/search/", {"q": "boiler serviced October", "min_score": cut})
    assert kept.status_code == 200
    assert [r["id"] for r in kept.json()] == [r["id"] for r in everything if r["score"]["value"] >= cut]
    assert 0 < len(kept.json()) < len(everything)
    above = as_alice.get(API + "observations/search/", {"q": "boiler serviced October", "min_score": scores[0] + 0.01})
    assert above.status_code == 200 and above.json() == []
    assert as_alice.get(API + "observations/search/", {"q": "boiler", "min_score": "0"}).json() != []


@pytest.mark.parametrize(("value", "code"), [("-0.1", "min_value"), ("abc", "invalid_type"), ("nan", "invalid_type"),
                                             ("inf", "invalid_type")])
def test_a_bad_min_score_is_a_400_naming_min_score_and_its_limit(as_alice, value, code):
    response = as_alice.get(API + "observations/search/", {"q": "boiler", "min_score": value})
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["min_score"] and body["code"] == code
    assert "at least 0" in body["detail"]
    if code == "min_value":
        assert body["limit"] == 0
