"""Private blocks over HTTP: error bodies never echo private text, responses hold only redacted text."""

import pytest
from django.test import override_settings

from ilab_memory.models import Observation, Session
from tests.api.conftest import API

SECRET = "hunter2-http-secret"
PRIVATE = f"<private>{SECRET}</private>"


def assert_body_is_clean(response):
    assert SECRET not in response.content.decode()


@override_settings(ILAB_MEMORY={"MAX_TITLE_CHARS": 20, "MAX_CONTENT_CHARS": 20, "MAX_TOPIC_KEY_CHARS": 20})
@pytest.mark.parametrize("field", ["title", "content", "topic_key"])
def test_over_limit_field_is_a_400_naming_the_field_without_echoing_it(as_alice, field):
    body = {"title": "t", "content": "c", field: "w" * 30 + PRIVATE}
    response = as_alice.post(API + "observations/", body, format="json")
    assert response.status_code == 400
    assert field in response.content.decode()
    assert_body_is_clean(response)
    assert not Observation.objects.exists() and not Session.objects.exists()


@override_settings(ILAB_MEMORY={"MAX_SUMMARY_CHARS": 20})
@pytest.mark.parametrize("action", ["summary", "end"])
def test_over_limit_summary_is_a_400_without_echoing_it(as_alice, action):
    response = as_alice.post(API + f"sessions/{action}/", {"summary": "w" * 30 + PRIVATE}, format="json")
    assert response.status_code == 400
    assert_body_is_clean(response)


@pytest.mark.parametrize(
    "body",
    [
        {"title": "t", "content": "c", "type": PRIVATE},
        {"title": "t", "content": "c", "metadata": [PRIVATE]},
        {"title": "t", "content": f"\x00{PRIVATE}"},
        {"title": "</private>", "content": PRIVATE},
        {"title": 5, "content": PRIVATE},
    ],
)
def test_bad_observation_is_a_400_without_echoing_private_text(as_alice, body):
    response = as_alice.post(API + "observations/", body, format="json")
    assert response.status_code == 400
    assert_body_is_clean(response)
    assert not Observation.objects.exists()


def test_malformed_json_holding_private_text_is_a_400_without_echoing_it(as_alice):
    raw = '{"title": "t", "content": "' + PRIVATE + '", oops}'
    response = as_alice.post(API + "observations/", raw, content_type="application/json")
    assert response.status_code == 400
    assert_body_is_clean(response)


def test_saved_update_and_summary_responses_hold_only_redacted_text(as_alice):
    saved = as_alice.post(API + "observations/", {"title": PRIVATE, "content": f"a {PRIVATE}"}, format="json")
    assert saved.status_code == 201 and saved.json()["observation"]["title"] == "[REDACTED]"
    observation_id = saved.json()["observation"]["id"]
    updated = as_alice.patch(API + f"observations/{observation_id}/", {"content": f"b {PRIVATE}"}, format="json")
    assert updated.status_code == 200 and updated.json()["redacted_blocks"] == 3
    summary = as_alice.post(API + "sessions/summary/", {"summary": f"s {PRIVATE}"}, format="json")
    ended = as_alice.post(API + "sessions/end/", {}, format="json")
    for response in (saved, updated, summary, ended):
        assert_body_is_clean(response)
    assert ended.json()["summary"] == "s [REDACTED]"


def test_search_for_private_text_finds_nothing(as_alice):
    as_alice.post(API + "observations/", {"title": "Deploy", "content": f"key {PRIVATE}"}, format="json")
    response = as_alice.get(API + "observations/search/", {"q": SECRET})
    assert response.status_code == 200
    assert_body_is_clean(response)
    # No word matched: a result here is only the nearest by meaning of the public text.
    assert all(r["score"]["breakdown"]["relevance"] is None for r in _results(response))
    # The same observation is found by its public words: the search index does hold it.
    assert len(_results(as_alice.get(API + "observations/search/", {"q": "deploy key"}))) == 1


def _results(response):
    body = response.json()
    return body["results"] if isinstance(body, dict) else body
