"""admin/observations.py: the observation list (filters, search, links) and its change page, its
edits and actions through the services, with redaction and history."""


import pytest
from django.test.utils import override_settings

from ilab_memory.models import Observation, ObservationRevision
from ilab_memory.services.observations import observation_delete, observation_save
from tests.admin.pages import (
    OBSERVATIONS,
    SESSIONS,
    listed,
    observation_form,
    observation_url,
    session_url,
)
from tests.factories import ObservationFactory, ObservationRevisionFactory


def test_type_filter_returns_only_that_type(admin_client, mix):
    assert listed(admin_client.get(OBSERVATIONS, {"type": "decision"})) == {mix["auto_obs"].pk, mix["active_obs"].pk}

def test_type_filter_accepts_a_type_outside_the_vocabulary(admin_client, mix):
    custom = ObservationFactory(session=mix["human"], type="meeting-notes")
    response = admin_client.get(OBSERVATIONS, {"type": "meeting-notes"})
    assert listed(response) == {custom.pk}

@pytest.mark.parametrize(
    "state, expected",
    [("live", {"auto_obs", "human_obs", "blank_obs", "active_obs"}), ("deleted", {"deleted_obs"})],
)
def test_state_filter_separates_live_and_deleted(admin_client, mix, state, expected):
    assert listed(admin_client.get(OBSERVATIONS, {"state": state})) == {mix[n].pk for n in expected}

@pytest.mark.parametrize(
    "kind, expected",
    [("auto", {"auto_obs"}), ("human", {"human_obs"}), ("none", {"blank_obs", "active_obs", "deleted_obs"})],
)
def test_session_summary_kind_filter_on_observations(admin_client, mix, kind, expected):
    response = admin_client.get(OBSERVATIONS, {"session_summary_kind": kind})
    assert listed(response) == {mix[n].pk for n in expected}

def test_observation_search_covers_title_content_and_exact_user_id(admin_client, mix):
    assert listed(admin_client.get(OBSERVATIONS, {"q": "Redis"})) == {mix["active_obs"].pk}
    assert listed(admin_client.get(OBSERVATIONS, {"q": "backoff"})) == {mix["human_obs"].pk}
    assert listed(admin_client.get(OBSERVATIONS, {"q": "bob"})) == {mix["human_obs"].pk}
    assert listed(admin_client.get(OBSERVATIONS, {"q": "bo"})) == set()

def test_observation_list_links_each_row_to_its_session(admin_client, mix):
    body = admin_client.get(OBSERVATIONS).content.decode()
    for name in ("auto", "human", "blank", "active"):
        assert session_url(mix[name]) in body

@pytest.mark.parametrize(
    "url, params",
    [
        (SESSIONS, {"status__exact": "\x00"}),
        (SESSIONS, {"user_id": "\x00"}),
        (SESSIONS, {"q": "a\x00b"}),
        (OBSERVATIONS, {"type": "\x00"}),
        (OBSERVATIONS, {"session": "not-a-uuid"}),
        (SESSIONS, {"summary_kind": "bogus"}),
        (OBSERVATIONS, {"state": "bogus"}),
        (SESSIONS, {"p": "99999"}),
        (SESSIONS, {"started_at__gte": "yesterday"}),
        (SESSIONS, {"started_at__year": "abc"}),
        (OBSERVATIONS, {"o": "99"}),
        (SESSIONS, {"q": "x" * 5000}),
    ],
)
def test_unusable_list_parameters_never_give_a_server_error(admin_client, mix, url, params):
    response = admin_client.get(url, params)
    assert response.status_code in (200, 302)
    if response.status_code == 302:
        assert response["Location"].endswith("?e=1")

def test_observation_edit_goes_through_the_service_with_redaction_and_history(admin_client, db):
    saved = observation_save(user_id="dana", title="Deploy notes", content="Use blue/green.").observation
    observation = Observation.objects.get(pk=saved.id)
    response = admin_client.post(
        observation_url(observation),
        observation_form(observation, content="Use blue/green. <private>root pw hunter2</private>"),
        follow=True,
    )
    assert response.status_code == 200
    assert "hunter2" not in response.content.decode()
    observation.refresh_from_db()
    assert observation.content == "Use blue/green. [REDACTED]"
    assert observation.revision_count == 2 and observation.redacted_blocks == 1
    assert ObservationRevision.objects.get(observation=observation).content == "Use blue/green."
    history = admin_client.get(observation_url(observation)).content.decode()
    assert "ilab-revisions" in history and "Use blue/green." in history

def test_observation_edit_over_the_limit_names_field_and_limit_and_stores_nothing(admin_client, db):
    saved = observation_save(user_id="dana", title="Deploy notes", content="Use blue/green.").observation
    observation = Observation.objects.get(pk=saved.id)
    with override_settings(ILAB_MEMORY={"MAX_TITLE_CHARS": 20}):
        response = admin_client.post(observation_url(observation), observation_form(observation, title="t" * 21))
    assert response.status_code == 200
    message = response.context["adminform"].form.errors["title"][0]
    assert "title" in message and "20" in message and "21" in message
    observation.refresh_from_db()
    assert observation.title == "Deploy notes" and observation.revision_count == 1
    assert not ObservationRevision.objects.exists()

def test_observation_edit_to_a_taken_topic_key_is_a_field_error(admin_client, db):
    observation_save(user_id="dana", title="DB", content="PostgreSQL", topic_key="database")
    other = Observation.objects.get(pk=observation_save(user_id="dana", title="Cache", content="Redis").observation.id)
    response = admin_client.post(observation_url(other), observation_form(other, topic_key="database"))
    assert response.status_code == 200
    assert "topic_key" in response.context["adminform"].form.errors
    other.refresh_from_db()
    assert other.topic_key is None and other.revision_count == 1

def test_deleted_observation_is_read_only(admin_client, mix):
    body = admin_client.get(observation_url(mix["deleted_obs"])).content.decode()
    assert 'name="title"' not in body and 'name="content"' not in body and 'name="_save"' not in body

def test_revision_history_lists_earlier_versions(admin_client, db):
    observation = ObservationFactory(revision_count=3)
    ObservationRevisionFactory(observation=observation, revision=1, title="First draft")
    ObservationRevisionFactory(observation=observation, revision=2, title="Second draft")
    body = admin_client.get(observation_url(observation)).content.decode()
    assert body.index("Second draft") < body.index("First draft")

def test_soft_delete_and_restore_actions_go_through_the_services(admin_client, db):
    first = observation_save(user_id="erin", title="One", content="1").observation
    second = observation_save(user_id="erin", title="Two", content="2").observation
    response = admin_client.post(
        OBSERVATIONS, {"action": "soft_delete_selected", "_selected_action": [first.id, second.id]}, follow=True
    )
    assert [str(m) for m in response.context["messages"]] == ["Soft-deleted 2 observations."]
    assert Observation.objects.deleted().count() == 2

    response = admin_client.post(
        OBSERVATIONS, {"action": "restore_selected", "_selected_action": [first.id]}, follow=True
    )
    assert [str(m) for m in response.context["messages"]] == ["Restored 1 observation."]
    assert set(Observation.objects.live().values_list("title", flat=True)) == {"One"}

def test_restore_action_reports_observations_whose_topic_key_was_taken(admin_client, db):
    old = observation_save(user_id="erin", title="Old DB", content="MySQL", topic_key="db").observation
    observation_delete(user_id="erin", observation_id=old.id)
    observation_save(user_id="erin", title="New DB", content="PostgreSQL", topic_key="db")
    response = admin_client.post(
        OBSERVATIONS, {"action": "restore_selected", "_selected_action": [old.id]}, follow=True
    )
    texts = [str(m) for m in response.context["messages"]]
    assert texts[0] == "Restored 0 observations."
    assert "not restored" in texts[1]
    assert Observation.objects.get(pk=old.id).deleted_at is not None

def test_admin_never_shows_private_text(admin_client, db):
    saved = observation_save(
        user_id="frank", title="Token <private>t0ps3cret</private>", content="Body <private>t0ps3cret</private>"
    ).observation
    observation = Observation.objects.get(pk=saved.id)
    for url in (OBSERVATIONS, observation_url(observation), SESSIONS, session_url(observation.session)):
        assert "t0ps3cret" not in admin_client.get(url).content.decode()
