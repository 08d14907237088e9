"""export/, import/ and forget/ over HTTP: the versioned document, idempotent imports that land with
the importer, erasure behind a confirmation, and hostile input: 400 naming the field, 413 for an
oversized body, never a 500, and nothing written."""

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilab_memory.models import Observation, ObservationRevision, Session
from tests.api.conftest import API, client_for, read_json, uid


def save(client, **body):
    body.setdefault("content", "Content")
    return client.post(API + "observations/", body, format="json")


@pytest.fixture
def document(as_alice, alice):
    """A real export of alice's memories, then alice emptied so the document can be imported."""
    as_alice.post(f"{API}observations/", {"title": "Editor", "content": "helix", "topic_key": "editor"}, format="json")
    as_alice.post(f"{API}observations/", {"title": "Editor", "content": "vim", "topic_key": "editor"}, format="json")
    exported = as_alice.get(f"{API}export/")
    assert exported.status_code == 200
    document = read_json(exported)  # streamed: read it before the rows are erased
    forgot = as_alice.post(f"{API}forget/", {"confirm": uid(alice)}, format="json")
    assert forgot.status_code == 200 and forgot.json() == {"sessions": 1, "observations": 1, "revisions": 1,
                                                           "vectors": 1}
    return document


def nothing_stored() -> bool:
    return not Observation.objects.exists() and not Session.objects.exists()


# -- export --------------------------------------------------------------------------------


def test_export_returns_the_versioned_document_without_private_text(as_alice, alice):
    save(as_alice, title="t", content="<private>secret</private> visible")
    response = as_alice.get(API + "export/")
    assert response.status_code == 200 and response.streaming  # never one big document in memory
    document = read_json(response)
    assert document["format"] == "ilab_memory.export" and document["user_id"] == uid(alice)
    assert len(document["observations"]) == 1 and len(document["sessions"]) == 1
    assert "secret" not in json.dumps(document)


@pytest.mark.parametrize("path", ["export/", "context/"])
def test_reads_of_a_user_with_nothing_are_empty_not_errors(as_alice, path):
    assert as_alice.get(API + path).status_code == 200


# -- import --------------------------------------------------------------------------------


def test_import_of_an_export_is_idempotent_and_lands_with_the_importer(as_alice, as_bob, bob):
    save(as_alice, title="carried over")
    document = read_json(as_alice.get(API + "export/"))
    as_alice.post(API + "forget/", {"confirm": document["user_id"]}, format="json")
    first = as_bob.post(API + "import/", {"data": document}, format="json")
    assert first.status_code == 200
    assert first.json()["observations_created"] == 1
    second = as_bob.post(API + "import/", {"data": document}, format="json")
    assert second.json()["observations_created"] == 0 and second.json()["observations_skipped"] == 1
    assert Observation.objects.get().user_id == uid(bob)


def test_export_import_round_trip_over_http_is_idempotent(as_alice, document):
    first = as_alice.post(f"{API}import/", {"data": document}, format="json")
    assert first.status_code == 200 and first.json()["observations_created"] == 1
    second = as_alice.post(f"{API}import/", {"data": document}, format="json")
    assert second.status_code == 200 and second.json()["observations_created"] == 0
    assert read_json(as_alice.get(f"{API}export/"))["observations"] == document["observations"]


def test_import_of_a_malformed_document_is_400_and_writes_nothing(as_alice):
    response = as_alice.post(API + "import/", {"data": {"format": "something else"}}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]
    assert not Session.objects.exists()


def test_import_without_data_is_400(as_alice):
    response = as_alice.post(API + "import/", {}, format="json")
    assert response.status_code == 400
    assert "data" in response.json()["errors"]


def test_import_cannot_take_over_another_users_rows(as_alice, as_bob):
    save(as_alice, title="alice's")
    document = read_json(as_alice.get(API + "export/"))
    response = as_bob.post(API + "import/", {"data": document}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "id_taken"
    assert Observation.objects.count() == 1


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
def test_bad_import_documents_are_400_naming_the_field_and_write_nothing(as_alice, document, mutate, field):
    mutate(document)
    try:
        body = json.dumps({"data": document}, allow_nan=False)
    except ValueError:
        body = json.dumps({"data": document})  # Infinity: not JSON at all, the parser must refuse it
    response = as_alice.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    if field:
        assert field in json.dumps(response.json())
    assert nothing_stored()


@pytest.mark.parametrize(
    "started_at",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "1969-12-31T23:59:59+00:00"],
)
def test_out_of_range_import_timestamps_are_400(as_alice, started_at):
    document = {
        "format": "ilab_memory.export",
        "version": 1,
        "sessions": [
            {
                "id": "11111111-1111-4111-8111-111111111111",
                "status": "completed",
                "started_at": started_at,
                "last_activity_at": "2024-01-01T00:00:00+00:00",
                "ended_at": "2024-01-01T00:00:00+00:00",
            }
        ],
    }
    response = as_alice.post(API + "import/", {"data": document}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_timestamp"


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"data": ', b"\xff\xfe\x00garbage", b"[]", b'"just a string"', b'{"data": null}',
     b'{"data": {"format": "ilab_memory.export", "version": 1, "sessions": "nope"}}'],
)
def test_malformed_import_bodies_are_400_never_500(as_alice, body):
    response = as_alice.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert nothing_stored()


def test_oversized_import_body_is_413(as_alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"data": {"format": "ilab_memory.export", "version": 1, "pad": "x" * 20_000}})
    response = as_alice.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 413
    assert nothing_stored()


def test_deeply_nested_import_body_is_400_never_500(as_alice):
    body = '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = as_alice.post(f"{API}import/", body, content_type="application/json")
    assert response.status_code == 400
    assert nothing_stored()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
))
def test_arbitrary_json_as_an_import_document_is_a_400(as_alice, data):
    response = as_alice.post(f"{API}import/", {"data": data}, format="json")
    assert response.status_code == 400, response.content
    assert nothing_stored()


# -- forget --------------------------------------------------------------------------------


def test_forget_needs_the_user_id_as_confirmation(as_alice, alice):
    save(as_alice, title="t", topic_key="k")
    save(as_alice, title="t", topic_key="k", content="v2")
    refused = as_alice.post(API + "forget/", {"confirm": "yes"}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "confirmation_mismatch"
    assert as_alice.post(API + "forget/", {}, format="json").status_code == 400
    assert Observation.objects.exists()
    response = as_alice.post(API + "forget/", {"confirm": uid(alice)}, format="json")
    assert response.status_code == 200
    assert response.json() == {"sessions": 1, "observations": 1, "revisions": 1, "vectors": 1}
    assert not (Session.objects.exists() or Observation.objects.exists() or ObservationRevision.objects.exists())


def test_forget_without_the_matching_confirmation_erases_nothing(as_alice, alice):
    as_alice.post(f"{API}observations/", {"title": "keep", "content": "me"}, format="json")
    for body in ({}, {"confirm": "someone-else"}, {"confirm": 5}, {"confirm": ""}):
        response = as_alice.post(f"{API}forget/", body, format="json")
        assert response.status_code == 400, (body, response.content)
    assert Observation.objects.filter(user_id=uid(alice)).count() == 1


def test_export_over_asgi_streams_chunk_by_chunk(alice):
    """Under ASGI the body is an async iterator: Django reads a plain iterator whole before it
    sends a byte, and says so with a warning (an error here)."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient
    from rest_framework.authtoken.models import Token

    save(client_for(alice), title="t", content="visible")
    token = Token.objects.create(user=alice)

    async def export():
        response = await AsyncClient().get(API + "export/", headers={"Authorization": f"Token {token.key}"})
        return response, [part async for part in response]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response, parts = async_to_sync(export)()
    assert response.status_code == 200 and len(parts) > 1
    assert json.loads(b"".join(parts))["observations"][0]["content"] == "visible"
