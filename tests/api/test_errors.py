"""Errors in the one shape: throttling, the user_id resolver, values of the wrong type, missing and
unknown fields: clear 4xx, never a 500 (bodies: test_parsers.py; cursors: test_pagination.py)."""

import json

import pytest
from django.core.cache import cache

from ilab_memory.models import Observation, Session
from tests.api.conftest import API


def post_raw(client, path, body: bytes | str, content_type="application/json"):
    return client.generic("POST", API + path, body, content_type=content_type)



def test_nul_in_a_query_string_is_400(as_alice):
    response = as_alice.get(API + "observations/?topic_key=a%00b")
    assert response.status_code == 400



def test_throttling_is_off_by_default_and_per_user_when_configured(as_alice, as_bob, settings):
    cache.clear()
    for _ in range(5):
        assert as_alice.get(API + "context/").status_code == 200
    settings.ILAB_MEMORY = {"API_THROTTLE_RATE": "2/minute"}
    cache.clear()
    codes = [as_alice.get(API + "context/").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert as_bob.get(API + "context/").status_code == 200
    throttled = as_alice.get(API + "context/")
    assert throttled.json()["code"] == "throttled" and "Retry-After" in throttled.headers
    cache.clear()


def resolve_by_username(request):
    return f"user:{request.user.username}"


def test_user_id_resolver_is_read_at_call_time(as_alice, settings):
    settings.ILAB_MEMORY = {"USER_ID_RESOLVER": "tests.api.test_errors.resolve_by_username"}
    as_alice.post(API + "sessions/start/", {}, format="json")
    assert Session.objects.get().user_id == "user:alice"
    # Naming one's own resolved id is not "another user".
    assert as_alice.get(API + "sessions/?user_id=user:alice").status_code == 200


def test_a_resolver_giving_an_invalid_user_id_is_400_not_500(as_alice, settings):
    settings.ILAB_MEMORY = {"USER_ID_RESOLVER": lambda request: "x" * 300}
    for response in (as_alice.get(API + "context/"), as_alice.post(API + "sessions/start/", {}, format="json")):
        assert response.status_code == 400
        assert response.json()["code"] == "max_length"


@pytest.mark.parametrize("path", ["sessions/start/", "sessions/", "observations/", "context/", "forget/"])
def test_options_and_head_never_fail(as_alice, path):
    assert as_alice.options(API + path).status_code == 200
    assert as_alice.head(API + path).status_code in (200, 405)


@pytest.mark.parametrize("rate, ok", [(None, True), ("120/minute", True), ("5/s", True), ("fast", False), (10, False)])
def test_throttle_rate_setting_is_validated(rate, ok):
    from ilab_memory.conf import DEFAULTS, validate_values

    problems = validate_values({**DEFAULTS, "API_THROTTLE_RATE": rate})
    assert (not problems) is ok


def test_a_json_array_body_reports_a_non_field_error(as_alice):
    response = post_raw(as_alice, "sessions/summary/", "[]")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["non_field_errors"]


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("observations/", {"title": 5, "content": "c"}, "title"),
        ("observations/", {"title": "t", "content": None}, "content"),
        ("sessions/summary/", {"summary": ["s"]}, "summary"),
        ("sessions/start/", {"user_id": None}, "user_id"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_in_the_services_words(as_alice, path, body, field):
    from ilab_memory.exceptions import ValidationError
    from ilab_memory.validation import check_text

    response = post_raw(as_alice, path, json.dumps(body))
    with pytest.raises(ValidationError) as refused:
        check_text(field, body[field])
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_type"
    assert response.json()["errors"] == {field: [refused.value.message]}
    assert not Observation.objects.exists()


def test_a_missing_required_field_is_named_before_any_value_is_looked_at(as_alice):
    response = post_raw(as_alice, "observations/", json.dumps({"title": 5}))
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert response.json()["errors"] == {"content": ["This field is required."]}


def test_unknown_fields_named_detail_and_code_still_get_the_error_shape(as_alice):
    """Found by the schema's fuzzing: a body whose unknown fields are called "detail" and "code"."""
    response = as_alice.post("/api/memory/sessions/summary/", {"summary": "s", "detail": {}, "code": 1},
                             format="json")
    assert response.status_code == 400
    body = response.json()
    assert isinstance(body["detail"], str) and body["code"] == "invalid"
    assert set(body["errors"]) == {"detail", "code"}


def test_a_race_lost_on_every_retry_is_409_conflict_and_the_client_raises_conflict():
    """What the services raise when concurrent writers won every retry (services/transactions.py),
    and what the Python client makes of the answer."""
    from ilab_memory.api.errors import app_error_response
    from ilab_memory.client.transport import error_for
    from ilab_memory.exceptions import Conflict

    response = app_error_response(Conflict("Concurrent writes won every retry; nothing was written."))
    assert response.status_code == 409 and response.data["code"] == "write_conflict"
    raised = error_for(409, json.dumps(response.data).encode(), {})
    assert isinstance(raised, Conflict) and "nothing was written" in str(raised)
