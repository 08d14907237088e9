"""context/, export/, import/ and forget/ over HTTP."""

import json
from datetime import timedelta

import pytest

from ilab_memory.models import Observation, ObservationRevision, Session
from tests.api.conftest import API, read_json, uid


def save(client, **body):
    body.setdefault("content", "Content")
    return client.post(API + "observations/", body, format="json")


def test_context_ranks_memories_and_touches_no_session(as_alice, clock):
    save(as_alice, title="manual note")
    save(as_alice, title="a decision", type="decision")
    before = Session.objects.get().last_activity_at
    clock.shift(timedelta(hours=1))
    response = as_alice.get(API + "context/")
    assert response.status_code == 200
    titles = [m["title"] for m in response.json()]
    assert titles == ["a decision", "manual note"]
    score = response.json()[0]["score"]
    assert score["kind"] == "context" and 0 < score["value"] and "type_weight" in score["breakdown"]
    assert Session.objects.get().last_activity_at == before


def test_context_limit_is_honoured_and_bounded(as_alice):
    for n in range(3):
        save(as_alice, title=f"n{n}")
    assert len(as_alice.get(API + "context/?limit=2").json()) == 2
    assert as_alice.get(API + "context/?limit=0").status_code == 400
    assert as_alice.get(API + "context/?limit=abc").status_code == 400


def test_export_returns_the_versioned_document_without_private_text(as_alice, alice):
    save(as_alice, title="t", content="<private>secret</private> visible")
    response = as_alice.get(API + "export/")
    assert response.status_code == 200 and response.streaming  # never one big document in memory
    document = read_json(response)
    assert document["format"] == "ilab_memory.export" and document["user_id"] == uid(alice)
    assert len(document["observations"]) == 1 and len(document["sessions"]) == 1
    assert "secret" not in json.dumps(document)


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


@pytest.mark.parametrize("path", ["export/", "context/"])
def test_reads_of_a_user_with_nothing_are_empty_not_errors(as_alice, path):
    assert as_alice.get(API + path).status_code == 200
