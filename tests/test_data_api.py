"""The data endpoints (export/, import/, forget/) under hostile input: 400 naming the field, 413 for
an oversized body, never a 500, and nothing written."""

import json

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from ilab_memory.models import Observation, Session
from tests.api.conftest import read_json

API = "/api/memory/"


@pytest.fixture
def carol(db):
    return User.objects.create_user("carol")


@pytest.fixture
def client(carol):
    client = APIClient()
    client.force_authenticate(carol)
    return client


@pytest.fixture
def document(client, carol):
    """A real export of carol's memories, then carol emptied so the document can be imported."""
    client.post(f"{API}observations/", {"title": "Editor", "content": "helix", "topic_key": "editor"}, format="json")
    client.post(f"{API}observations/", {"title": "Editor", "content": "vim", "topic_key": "editor"}, format="json")
    exported = client.get(f"{API}export/")
    assert exported.status_code == 200
    document = read_json(exported)  # streamed: read it before the rows are erased
    forgot = client.post(f"{API}forget/", {"confirm": str(carol.pk)}, format="json")
    assert forgot.status_code == 200 and forgot.json() == {"sessions": 1, "observations": 1, "revisions": 1, "vectors": 1}
    return document


def nothing_stored() -> bool:
    return not Observation.objects.exists() and not Session.objects.exists()


def test_export_import_round_trip_over_http_is_idempotent(client, document):
    first = client.post(f"{API}import/", {"data": document}, format="json")
    assert first.status_code == 200 and first.json()["observations_created"] == 1
    second = client.post(f"{API}import/", {"data": document}, format="json")
    assert second.status_code == 200 and second.json()["observations_created"] == 0
    assert read_json(client.get(f"{API}export/"))["observations"] == document["observations"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["observations"][0].update(title="x" * 301), "observations[0].title"),
        (lambda d: d["observations"][0].update(content="a\u0000b"), "observations[0].content"),
        (lambda d: d["observations"][0].update(metadata={"k": float("inf")}), None),
        (lambda d: d["observations"][0].update(unknown=1), "observations[0].unknown"),
        (lambda d: d.update(version="1"), "version"),
        (lambda d: d["sessions"][0].update(started_at=12), "sessions[0].started_at"),
    ],
)
def test_bad_import_documents_are_400_naming_the_field_and_write_nothing(client, document, mutate, field):
    mutate(document)
    try:
        body = json.dumps({"data": document}, allow_nan=False)
    except ValueError:
        body = json.dumps({"data": document})  # Infinity: not JSON at all, the parser must refuse it
    response = client.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    if field:
        assert field in json.dumps(response.json())
    assert nothing_stored()


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"data": ', b"\xff\xfe\x00garbage", b"[]", b'"just a string"', b'{"data": null}',
     b'{"data": {"format": "ilab_memory.export", "version": 1, "sessions": "nope"}}'],
)
def test_malformed_import_bodies_are_400_never_500(client, body):
    response = client.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert nothing_stored()


def test_oversized_import_body_is_413(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"data": {"format": "ilab_memory.export", "version": 1, "pad": "x" * 20_000}})
    response = client.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 413
    assert nothing_stored()


def test_deeply_nested_import_body_is_400_never_500(client):
    body = '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = client.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400
    assert nothing_stored()


def test_forget_without_the_matching_confirmation_erases_nothing(client, carol):
    client.post(f"{API}observations/", {"title": "keep", "content": "me"}, format="json")
    for body in ({}, {"confirm": "someone-else"}, {"confirm": 5}, {"confirm": ""}):
        response = client.post(f"{API}forget/", body, format="json")
        assert response.status_code == 400, (body, response.content)
    assert Observation.objects.filter(user_id=str(carol.pk)).count() == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
))
def test_arbitrary_json_as_an_import_document_is_a_400(client, data):
    response = client.post(f"{API}import/", {"data": data}, format="json")
    assert response.status_code == 400, response.content
    assert nothing_stored()
