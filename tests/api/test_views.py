"""views.py: the edges a DRF client meets: slash-less paths, unknown fields, unknown paths and methods.

Everything under the API prefix answers JSON in the one error shape, in DEBUG as in production.
"""

import json

import pytest

from ilab_memory.models import Observation, Session
from tests.api.conftest import API


def send(client, method, path, body=None):
    return client.generic(method, API + path, "" if body is None else json.dumps(body), content_type="application/json")


def assert_json_error(response, status, code):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == code and isinstance(body["detail"], str)
    return body


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["observations", "sessions/start", "import", "forget", "context"])
def test_a_slashless_path_is_a_json_404_that_says_to_add_the_slash(as_alice, settings, debug, path):
    settings.DEBUG = debug  # DEBUG made Django's APPEND_SLASH raise a 500 page for a POST
    body = assert_json_error(send(as_alice, "POST", path, {"title": "t", "content": "c"}), 404, "not_found")
    assert "trailing slash" in body["detail"]
    assert not Observation.objects.exists() and not Session.objects.exists()


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("path", ["nope/", "nope", "observations/1/2/3/", "sessions/start/extra/", ".env"])
def test_unknown_paths_under_the_prefix_are_json_404(as_alice, settings, debug, method, path):
    settings.DEBUG = debug
    body = assert_json_error(send(as_alice, method, path), 404, "not_found")
    assert "trailing slash" not in body["detail"]


def test_unknown_paths_answer_the_same_to_anonymous_callers(client):
    assert_json_error(client.get(API + "nope/"), 404, "not_found")


def test_the_404_never_echoes_the_path(as_alice):
    response = send(as_alice, "GET", "<private>hunter2</private>/")
    assert_json_error(response, 404, "not_found")
    assert b"hunter2" not in response.content


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", "observations/"), ("DELETE", "observations/"), ("GET", "sessions/start/"), ("DELETE", "context/"),
     ("PUT", "import/"), ("GET", "forget/"), ("POST", "export/")],
)
def test_wrong_methods_are_json_405(as_alice, method, path):
    assert_json_error(send(as_alice, method, path, {}), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("path", "body", "unknown"),
    [
        ("observations/", {"title": "t", "content": "c", "colour": "red"}, ["colour"]),
        ("observations/", {"title": "t", "content": "c", "colour": "red", "size": 3}, ["colour", "size"]),
        ("sessions/start/", {"foo": 1}, ["foo"]),
        ("sessions/summary/", {"summary": "s", "summry": "s"}, ["summry"]),
        ("sessions/end/", {"id": "x"}, ["id"]),
        ("import/", {"data": {}, "overwrite": True}, ["overwrite"]),
        ("forget/", {"confirm": "x", "force": True}, ["force"]),
    ],
)
def test_unknown_body_fields_are_a_400_naming_each_of_them(as_alice, path, body, unknown):
    response = send(as_alice, "POST", path, body)
    errors = assert_json_error(response, 400, "invalid")["errors"]
    assert sorted(errors) == unknown
    assert all("Is not a field of this endpoint" in errors[name][0] for name in unknown)
    assert not Observation.objects.exists() and not Session.objects.exists()


def test_an_unknown_field_on_patch_is_a_400_and_changes_nothing(as_alice):
    saved = send(as_alice, "POST", "observations/", {"title": "t", "content": "c"}).json()["observation"]
    response = send(as_alice, "PATCH", f"observations/{saved['id']}/", {"title": "new", "revision_count": 9})
    assert assert_json_error(response, 400, "invalid")["errors"].keys() == {"revision_count"}
    assert Observation.objects.get().title == "t"


def test_an_unknown_field_holding_a_private_block_is_not_echoed(as_alice):
    response = send(as_alice, "POST", "observations/", {"title": "t", "content": "c", "<private>k9</private>": 1})
    assert assert_json_error(response, 400, "invalid")["errors"].keys() == {"?"}
    assert b"k9" not in response.content


def test_bearer_is_accepted_as_well_as_token_and_a_bare_request_is_told_token(db):
    """What most HTTP clients send (``Authorization: Bearer``) reaches the account as DRF's
    ``Token`` does; the demo's settings list ``BearerTokenAuthentication`` after ``Token``."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    key = Token.objects.create(user=User.objects.create_user("bearer")).key
    for keyword in ("Token", "Bearer", "bearer"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{keyword} {key}")
        assert client.get("/api/memory/stats/").status_code == 200, keyword
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert client.get("/api/memory/stats/").status_code == 401
    bare = APIClient().get("/api/memory/stats/")
    assert bare.status_code == 401 and bare["WWW-Authenticate"] == "Token"
