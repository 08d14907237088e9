"""sessions/start, summary, end, list and detail over HTTP."""

from datetime import timedelta

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ilab_memory.models import Session, SessionStatus
from tests.api.conftest import API
from tests.factories import SessionFactory


def start(client, **body):
    return client.post(API + "sessions/start/", body, format="json")


def test_start_opens_a_session_with_201_then_reuses_it_with_200(as_alice, alice):
    first = start(as_alice)
    second = start(as_alice)
    assert first.status_code == 201 and first.json()["is_new"] is True
    assert second.status_code == 200 and second.json()["is_new"] is False
    assert second.json()["session_id"] == first.json()["session_id"]
    assert set(first.json()) == {"session_id", "is_new", "sessions_context", "memories"}
    assert Session.objects.filter(user_id=str(alice.pk), status=SessionStatus.ACTIVE).count() == 1


def test_start_after_timeout_auto_closes_and_returns_the_old_session_as_context(as_alice, clock):
    old = start(as_alice).json()["session_id"]
    as_alice.post(API + "observations/", {"title": "Use Postgres", "content": "Prod DB.", "type": "decision"},
                  format="json")
    clock.shift(timedelta(hours=25))
    response = start(as_alice)
    assert response.status_code == 201
    context = response.json()["sessions_context"]
    assert [c["session_id"] for c in context] == [old]
    assert context[0]["is_auto_generated"] is True
    assert context[0]["summary"] == "Memories: [decision] Use Postgres"
    assert response.json()["memories"][0]["score"]["kind"] == "context"


def test_summary_stores_a_narrative_summary_without_closing(as_alice):
    start(as_alice)
    response = as_alice.post(API + "sessions/summary/", {"summary": "Chose a database."}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "active" and body["summary"] == "Chose a database."
    assert body["is_auto_generated"] is False


def test_summary_blank_is_400_naming_the_field(as_alice):
    response = as_alice.post(API + "sessions/summary/", {"summary": "   "}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "blank"
    assert "summary" in response.json()["errors"]


def test_summary_missing_is_400_with_field_errors(as_alice):
    response = as_alice.post(API + "sessions/summary/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "summary" in response.json()["errors"]


def test_summary_over_the_limit_is_400_with_limit_and_size(as_alice, settings):
    settings.ILAB_MEMORY = {"MAX_SUMMARY_CHARS": 10}
    response = as_alice.post(API + "sessions/summary/", {"summary": "x" * 11}, format="json")
    assert response.status_code == 400
    assert response.json() | {} == {
        "detail": "summary: is 11 characters long; the limit is 10 characters.",
        "code": "max_length",
        "errors": {"summary": ["is 11 characters long; the limit is 10 characters."]},
        "limit": 10,
        "size": 11,
    }
    assert not Session.objects.exists()


def test_end_closes_with_the_given_summary(as_alice):
    session_id = start(as_alice).json()["session_id"]
    response = as_alice.post(API + "sessions/end/", {"summary": "All done."}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == session_id and body["status"] == "completed"
    assert body["summary"] == "All done." and body["ended_at"] is not None


def test_end_without_summary_writes_the_synthetic_one(as_alice):
    start(as_alice)
    body = as_alice.post(API + "sessions/end/", {}, format="json").json()
    assert body["summary"] == "Memories: (none)"
    assert body["is_auto_generated"] is True


def test_end_without_active_session_is_404_no_active_session(as_alice):
    response = as_alice.post(API + "sessions/end/", {}, format="json")
    assert response.status_code == 404
    assert response.json()["code"] == "no_active_session"


def test_start_then_end_then_start_shows_the_summary_in_context(as_alice):
    start(as_alice)
    as_alice.post(API + "sessions/end/", {"summary": "Wrote the API."}, format="json")
    body = start(as_alice).json()
    assert [c["summary"] for c in body["sessions_context"]] == ["Wrote the API."]


def test_list_filters_by_status_and_summary_kind(as_alice, alice):
    me = str(alice.pk)
    SessionFactory(user_id=me, completed=True, summary="auto", is_auto_generated=True)
    human = SessionFactory(user_id=me, completed=True)
    active = SessionFactory(user_id=me)
    SessionFactory(user_id="someone-else", completed=True)

    def ids(query):
        response = as_alice.get(API + "sessions/" + query)
        assert response.status_code == 200
        return {row["id"] for row in response.json()["results"]}

    assert len(ids("")) == 3
    assert ids("?status=active") == {str(active.id)}
    assert ids("?status=completed&is_auto_generated=false") == {str(human.id)}
    assert len(ids("?is_auto_generated=true")) == 1


def test_list_rejects_an_unknown_status_with_400(as_alice):
    response = as_alice.get(API + "sessions/?status=paused")
    assert response.status_code == 400
    assert "status" in response.json()["errors"]


def test_a_bad_status_filter_does_not_echo_the_value(as_alice):
    response = as_alice.get(API + "sessions/", {"status": "<private>SECRET1</private>"})
    assert response.status_code == 400
    assert "SECRET1" not in response.content.decode()
    assert "status" in response.json()["errors"]


def test_list_pages_with_a_cursor(as_alice, alice, clock):
    for _ in range(5):
        SessionFactory(user_id=str(alice.pk), completed=True)
        clock.shift(timedelta(minutes=1))
    first = as_alice.get(API + "sessions/?page_size=2").json()
    assert len(first["results"]) == 2 and first["previous"] is None
    seen = [r["id"] for r in first["results"]]
    url = first["next"]
    while url:
        page = as_alice.get(url).json()
        seen += [r["id"] for r in page["results"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == 5


def test_list_with_a_forged_cursor_is_404_not_500(as_alice):
    response = as_alice.get(API + "sessions/?cursor=not-a-cursor")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_detail_shows_the_observation_count(as_alice):
    session_id = start(as_alice).json()["session_id"]
    as_alice.post(API + "observations/", {"title": "a", "content": "b"}, format="json")
    response = as_alice.get(API + f"sessions/{session_id}/")
    assert response.status_code == 200
    assert response.json()["observation_count"] == 1


@pytest.mark.parametrize("bad_id", ["nope", "00000000-0000-0000-0000-000000000000", "1" * 300])
def test_detail_of_an_unknown_id_is_404(as_alice, bad_id):
    response = as_alice.get(API + f"sessions/{bad_id}/")
    assert response.status_code == 404
    assert response.json()["code"] == "session_not_found"


def test_unauthenticated_requests_are_401(db):
    response = APIClient().post(API + "sessions/start/", {}, format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert not Session.objects.exists()


def test_token_authentication_from_the_host_settings_works(alice):
    token = Token.objects.create(user=alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.post(API + "sessions/start/", {}, format="json").status_code == 201


def test_session_authentication_requires_csrf_for_writes(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(API + "sessions/start/", {}, format="json")
    assert response.status_code == 403
    assert not Session.objects.exists()


@pytest.mark.parametrize("query", ["?status=", "?is_auto_generated=maybe", "?is_auto_generated=", "?page_size=0",
                                   "?page_size=x"])
def test_list_rejects_empty_or_malformed_filters_with_400(as_alice, query):
    response = as_alice.get(API + "sessions/" + query)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and response.json()["errors"]


def test_list_costs_a_fixed_number_of_queries(as_alice, alice, django_assert_max_num_queries):
    from tests.factories import ObservationFactory

    for _ in range(20):
        ObservationFactory(session=SessionFactory(user_id=str(alice.pk), completed=True))
    with django_assert_max_num_queries(1):
        response = as_alice.get(API + "sessions/?page_size=20")
    assert [row["observation_count"] for row in response.json()["results"]] == [1] * 20
