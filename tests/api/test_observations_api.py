"""observations/: save, list, detail, update, delete, timeline over HTTP."""

from datetime import timedelta

import pytest

from ilab_memory.models import Observation, ObservationRevision
from tests.api.conftest import API
from tests.factories import ObservationFactory, SessionFactory


def save(client, **body):
    body.setdefault("title", "Title")
    body.setdefault("content", "Content")
    return client.post(API + "observations/", body, format="json")


def test_save_creates_with_201_and_action_created(as_alice, alice):
    response = save(as_alice, title="Use Postgres", content="In prod.", type="decision", metadata={"files": ["a.py"]})
    assert response.status_code == 201
    body = response.json()
    assert body["action"] == "created"
    observation = body["observation"]
    assert observation["user_id"] == str(alice.pk)
    assert observation["type"] == "decision" and observation["metadata"] == {"files": ["a.py"]}
    assert observation["revision_count"] == observation["duplicate_count"] == 1


def test_save_with_a_known_topic_key_revises_with_200(as_alice):
    first = save(as_alice, topic_key="Auth Model", content="JWT").json()["observation"]
    response = save(as_alice, topic_key="auth model", content="Sessions")
    assert response.status_code == 200
    body = response.json()
    assert body["action"] == "revised"
    assert body["observation"]["id"] == first["id"]
    assert body["observation"]["revision_count"] == 2
    assert body["observation"]["topic_key"] == "auth-model"


def test_save_of_the_same_memory_is_a_duplicate_with_200(as_alice):
    first = save(as_alice, content="Same  thing").json()["observation"]
    response = save(as_alice, content="same thing")
    assert response.status_code == 200
    assert response.json()["action"] == "duplicate"
    assert response.json()["observation"]["id"] == first["id"]
    assert response.json()["observation"]["duplicate_count"] == 2


def test_save_redacts_private_blocks_before_storing(as_alice):
    body = save(as_alice, content="key <private>sk-123</private> end", metadata={"k": "<private>pw</private>"}).json()
    assert body["observation"]["content"] == "key [REDACTED] end"
    assert body["observation"]["metadata"] == {"k": "[REDACTED]"}
    assert body["observation"]["redacted_blocks"] == 2
    assert not Observation.objects.filter(content__contains="sk-123").exists()


@pytest.mark.parametrize(
    "body, field, code",
    [
        ({"title": "  "}, "title", "blank"),
        ({"content": ""}, "content", "blank"),
        ({"type": "Not A Slug"}, "type", "invalid_type_slug"),
        ({"metadata": [1, 2]}, "metadata", "invalid_type"),
        ({"title": "x" * 301}, "title", "max_length"),
        ({"content": "x" * 50_001}, "content", "max_length"),
        ({"topic_key": "k" * 121}, "topic_key", "max_length"),
        ({"metadata": {"k": "x" * 17_000}}, "metadata", "max_length"),
    ],
)
def test_save_rejects_bad_values_with_400_naming_the_field(as_alice, body, field, code):
    response = save(as_alice, **body)
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert field in response.json()["errors"]
    assert not Observation.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"title": 5}, "title"),
        ({"content": ["a"]}, "content"),
        ({"title": "a\x00b"}, "title"),
        ({"topic_key": {"a": 1}}, "topic_key"),
    ],
)
def test_save_rejects_wrong_shapes_with_400(as_alice, body, field):
    response = save(as_alice, **body)
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not Observation.objects.exists()


def test_save_without_title_is_400(as_alice):
    response = as_alice.post(API + "observations/", {"content": "x"}, format="json")
    assert response.status_code == 400
    assert "title" in response.json()["errors"]


def test_list_shows_live_observations_newest_first_with_previews(as_alice, alice, clock, settings):
    settings.ILAB_MEMORY = {"PREVIEW_CHARS": 5}
    older = save(as_alice, title="old", content="0123456789").json()["observation"]
    clock.shift(timedelta(minutes=1))
    newer = save(as_alice, title="new", content="abc").json()["observation"]
    deleted = save(as_alice, title="gone").json()["observation"]
    as_alice.delete(API + f"observations/{deleted['id']}/")
    rows = as_alice.get(API + "observations/").json()["results"]
    assert [r["id"] for r in rows] == [newer["id"], older["id"]]
    assert rows[1]["preview"] == "01234…"
    assert rows[0]["score"] is None


def test_list_cursor_pages_cover_every_row_once_even_with_equal_timestamps(as_alice, alice, clock):
    session = SessionFactory(user_id=str(alice.pk))
    for _ in range(7):
        ObservationFactory(session=session)  # the clock is stopped: all share updated_at
    seen, url = [], API + "observations/?page_size=3"
    while url:
        page = as_alice.get(url).json()
        seen += [r["id"] for r in page["results"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == 7


def test_a_real_cursor_still_pages(as_alice):
    for n in range(3):
        as_alice.post(API + "observations/", {"title": f"t{n}", "content": "c"}, format="json")
    first = as_alice.get(API + "observations/", {"page_size": 2}).json()
    second = as_alice.get(first["next"]).json()
    assert len(first["results"]) == 2 and len(second["results"]) == 1


def test_list_page_size_is_capped(as_alice, alice):
    session = SessionFactory(user_id=str(alice.pk))
    ObservationFactory.create_batch(3, session=session)
    response = as_alice.get(API + "observations/?page_size=100000")
    assert response.status_code == 200 and len(response.json()["results"]) == 3


def test_list_filters_by_type_session_and_normalized_topic_key(as_alice, alice):
    me = str(alice.pk)
    one, two = SessionFactory(user_id=me, completed=True), SessionFactory(user_id=me)
    decision = ObservationFactory(session=one, type="decision")
    topical = ObservationFactory(session=two, topic_key="auth-model")
    ObservationFactory(session=two)

    def ids(query):
        response = as_alice.get(API + "observations/" + query)
        assert response.status_code == 200
        return {r["id"] for r in response.json()["results"]}

    assert ids("?type=decision") == {str(decision.id)}
    assert ids(f"?session={one.id}") == {str(decision.id)}
    assert ids("?topic_key=Auth%20Model") == {str(topical.id)}
    assert len(ids(f"?session={two.id}")) == 2


def test_list_with_a_malformed_session_filter_is_400(as_alice):
    response = as_alice.get(API + "observations/?session=abc")
    assert response.status_code == 400
    assert "session" in response.json()["errors"]


def test_list_costs_a_fixed_number_of_queries(as_alice, alice, django_assert_max_num_queries):
    session = SessionFactory(user_id=str(alice.pk))
    ObservationFactory.create_batch(20, session=session)
    with django_assert_max_num_queries(2):
        response = as_alice.get(API + "observations/?page_size=20")
    assert len(response.json()["results"]) == 20


def test_detail_returns_the_full_record(as_alice):
    created = save(as_alice, content="x" * 1000).json()["observation"]
    response = as_alice.get(API + f"observations/{created['id']}/")
    assert response.status_code == 200
    assert response.json() == created


@pytest.mark.parametrize("bad_id", ["nope", "00000000-0000-0000-0000-000000000000"])
def test_detail_of_an_unknown_id_is_404(as_alice, bad_id):
    response = as_alice.get(API + f"observations/{bad_id}/")
    assert response.status_code == 404
    assert response.json()["code"] == "observation_not_found"


def test_patch_changes_only_the_given_fields_and_keeps_history(as_alice):
    created = save(as_alice, title="Old", content="Body", topic_key="t").json()["observation"]
    response = as_alice.patch(API + f"observations/{created['id']}/", {"title": "New"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["title"] == "New" and body["content"] == "Body" and body["topic_key"] == "t"
    assert body["revision_count"] == 2
    assert ObservationRevision.objects.get().title == "Old"


def test_patch_with_null_topic_key_clears_it(as_alice):
    created = save(as_alice, topic_key="t").json()["observation"]
    body = as_alice.patch(API + f"observations/{created['id']}/", {"topic_key": None}, format="json").json()
    assert body["topic_key"] is None


def test_patch_with_no_field_is_400(as_alice):
    created = save(as_alice).json()["observation"]
    response = as_alice.patch(API + f"observations/{created['id']}/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "no_fields"


def test_patch_to_a_topic_key_in_use_is_400(as_alice):
    save(as_alice, title="a", topic_key="taken")
    other = save(as_alice, title="b").json()["observation"]
    response = as_alice.patch(API + f"observations/{other['id']}/", {"topic_key": "taken"}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "topic_key_taken"


def test_patch_of_an_unknown_id_is_404(as_alice):
    response = as_alice.patch(API + "observations/nope/", {"title": "x"}, format="json")
    assert response.status_code == 404


def test_put_is_not_offered(as_alice):
    created = save(as_alice).json()["observation"]
    response = as_alice.put(API + f"observations/{created['id']}/", {"title": "x", "content": "y"}, format="json")
    assert response.status_code == 405


def test_delete_is_soft_by_default_then_404(as_alice):
    created = save(as_alice).json()["observation"]
    assert as_alice.delete(API + f"observations/{created['id']}/").status_code == 204
    assert Observation.objects.get(pk=created["id"]).deleted_at is not None
    assert as_alice.get(API + f"observations/{created['id']}/").status_code == 404
    assert as_alice.delete(API + f"observations/{created['id']}/").status_code == 404


def test_delete_hard_removes_the_row_and_its_history(as_alice):
    created = save(as_alice, topic_key="t").json()["observation"]
    save(as_alice, topic_key="t", content="v2")
    response = as_alice.delete(API + f"observations/{created['id']}/?hard=true")
    assert response.status_code == 204
    assert not Observation.objects.exists() and not ObservationRevision.objects.exists()


def test_delete_with_a_malformed_hard_flag_is_400_and_deletes_nothing(as_alice):
    created = save(as_alice).json()["observation"]
    response = as_alice.delete(API + f"observations/{created['id']}/?hard=maybe")
    assert response.status_code == 400
    assert Observation.objects.live().count() == 1


def test_timeline_lists_the_same_session_around_the_anchor(as_alice, clock):
    ids = []
    for n in range(5):
        ids.append(save(as_alice, title=f"step {n}").json()["observation"]["id"])
        clock.shift(timedelta(seconds=1))
    response = as_alice.get(API + f"observations/{ids[2]}/timeline/?before=1&after=5")
    assert response.status_code == 200
    body = response.json()
    assert body["anchor"]["id"] == ids[2]
    assert [o["id"] for o in body["before"]] == [ids[1]]
    assert [o["id"] for o in body["after"]] == ids[3:]


@pytest.mark.parametrize("query", ["?before=-1", "?after=51", "?before=x"])
def test_timeline_rejects_bad_bounds_with_400(as_alice, query):
    created = save(as_alice).json()["observation"]
    response = as_alice.get(API + f"observations/{created['id']}/timeline/{query}")
    assert response.status_code == 400


def test_timeline_of_an_unknown_id_is_404(as_alice):
    assert as_alice.get(API + "observations/nope/timeline/").status_code == 404
