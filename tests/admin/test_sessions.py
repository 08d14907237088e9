"""admin/sessions.py: the session list (filters, search, badges, counts), its change page, the
summary edits through the services, and the close-idle button."""

from datetime import timedelta

import pytest
from django.test.utils import override_settings
from django.urls import reverse

from ilab_memory import admin as memory_admin
from ilab_memory.models import Observation, Session, SessionStatus
from ilab_memory.services.observations import observation_save
from ilab_memory.services.sessions import session_start
from tests.admin.pages import (
    CLOSE_IDLE,
    OBSERVATIONS,
    SESSIONS,
    listed,
    observation_url,
    session_url,
)
from tests.factories import ObservationFactory, SessionFactory


@pytest.mark.parametrize(
    "kind, expected",
    [("auto", {"auto"}), ("human", {"human"}), ("none", {"blank", "active"})],
)
def test_summary_kind_filter_returns_exactly_that_kind(admin_client, mix, kind, expected):
    response = admin_client.get(SESSIONS, {"summary_kind": kind})
    assert listed(response) == {mix[name].pk for name in expected}

def test_status_filter_returns_only_that_status(admin_client, mix):
    assert listed(admin_client.get(SESSIONS, {"status__exact": "active"})) == {mix["active"].pk}
    assert listed(admin_client.get(SESSIONS, {"status__exact": "completed"})) == {
        mix[n].pk for n in ("auto", "human", "blank")
    }

def test_started_at_date_range_filter_keeps_sessions_inside_the_range(admin_client, mix):
    Session.objects.filter(pk=mix["human"].pk).update(started_at=mix["human"].started_at - timedelta(days=40))
    recent = admin_client.get(
        SESSIONS,
        {
            "started_at__gte": str(mix["auto"].started_at - timedelta(days=7)),
            "started_at__lt": str(mix["auto"].started_at + timedelta(days=1)),
        },
    )
    assert listed(recent) == {mix[n].pk for n in ("auto", "blank", "active")}

def test_ended_at_filter_separates_open_sessions(admin_client, mix):
    assert listed(admin_client.get(SESSIONS, {"ended_at__isnull": "True"})) == {mix["active"].pk}

def test_search_matches_user_id_exactly_not_by_prefix(admin_client, mix):
    assert listed(admin_client.get(SESSIONS, {"q": "alice"})) == {mix["auto"].pk}
    assert listed(admin_client.get(SESSIONS, {"q": "ALICE"})) == set()

def test_search_matches_words_of_the_summary(admin_client, mix):
    assert listed(admin_client.get(SESSIONS, {"q": "retry"})) == {mix["human"].pk}

def test_user_id_filter_is_exact_and_keeps_the_other_filters(admin_client, mix):
    assert listed(admin_client.get(SESSIONS, {"user_id": "alice"})) == {mix["auto"].pk}
    assert listed(admin_client.get(SESSIONS, {"user_id": "alice", "summary_kind": "human"})) == set()
    assert listed(admin_client.get(OBSERVATIONS, {"user_id": "alice2", "state": "live"})) == {mix["active_obs"].pk}
    body = admin_client.get(SESSIONS, {"summary_kind": "auto"}).content.decode()
    assert '<input type="hidden" name="summary_kind" value="auto">' in body
    assert 'name="user_id"' in body

def test_session_list_shows_kind_badges_and_live_observation_counts(admin_client, mix):
    response = admin_client.get(SESSIONS)
    body = response.content.decode()
    assert body.count("ilab-badge--auto") == 1
    assert body.count("ilab-badge--human") == 1
    # The active session shows that it is open, not that it lacks a summary.
    assert body.count("ilab-badge--none") == 1
    assert body.count("ilab-badge--active") == 1
    counts = {row.pk: row.observation_count for row in response.context["cl"].result_list}
    # The soft-deleted observation of the active session is not counted.
    assert counts == {mix["auto"].pk: 1, mix["human"].pk: 1, mix["blank"].pk: 1, mix["active"].pk: 1}

def test_date_hierarchy_drills_into_a_year(admin_client, mix):
    year = mix["auto"].started_at.year
    assert len(listed(admin_client.get(SESSIONS, {"started_at__year": year}))) == 4
    assert listed(admin_client.get(SESSIONS, {"started_at__year": year - 1})) == set()

def test_session_page_lists_its_observations_with_links(admin_client, mix):
    body = admin_client.get(session_url(mix["active"])).content.decode()
    assert observation_url(mix["active_obs"]) in body
    assert observation_url(mix["deleted_obs"]) in body  # shown, marked deleted
    assert observation_url(mix["human_obs"]) not in body
    assert "ilab-badge--none" in body

def test_session_page_of_a_big_session_links_to_the_full_filtered_list(admin_client, db):
    session = SessionFactory()
    ObservationFactory.create_batch(memory_admin.INLINE_ROWS + 2, session=session)
    other = ObservationFactory()
    body = admin_client.get(session_url(session)).content.decode()
    assert f"{OBSERVATIONS}?session={session.pk}" in body
    changelist = admin_client.get(OBSERVATIONS, {"session": str(session.pk)}).context["cl"]
    assert set(changelist.queryset.values_list("session_id", flat=True)) == {session.pk}
    assert changelist.result_count == memory_admin.INLINE_ROWS + 2 and other.session_id != session.pk

def test_synthetic_summary_is_read_only(admin_client, mix):
    session = mix["auto"]
    page = admin_client.get(session_url(session)).content.decode()
    assert 'name="summary"' not in page and 'name="_save"' not in page
    admin_client.post(session_url(session), {"summary": "Rewritten by hand", "_save": "Save"})
    session.refresh_from_db()
    assert session.summary == "Memories: [decision] Use PostgreSQL"
    assert session.is_auto_generated is True

def test_human_summary_edit_is_redacted_and_keeps_the_rest_of_the_row(admin_client, mix):
    session = mix["human"]
    assert 'name="summary"' in admin_client.get(session_url(session)).content.decode()
    response = admin_client.post(
        session_url(session), {"summary": "Retry pattern. <private>api key 42</private>", "_save": "Save"}
    )
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.summary == "Retry pattern. [REDACTED]"
    assert session.redacted_blocks == 1
    assert session.is_auto_generated is False and session.status == SessionStatus.COMPLETED

def test_summary_edit_over_the_limit_names_field_and_limit_and_stores_nothing(admin_client, mix):
    session = mix["human"]
    with override_settings(ILAB_MEMORY={"MAX_SUMMARY_CHARS": 10}):
        response = admin_client.post(session_url(session), {"summary": "x" * 11, "_save": "Save"})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["summary"]
    assert "summary" in errors[0] and "10" in errors[0] and "11" in errors[0]
    session.refresh_from_db()
    assert session.summary == "Talked about the retry pattern"

def test_summary_edit_cannot_blank_a_stored_summary(admin_client, mix):
    session = mix["human"]
    response = admin_client.post(session_url(session), {"summary": "   ", "_save": "Save"})
    assert response.status_code == 200 and response.context["adminform"].form.errors["summary"]
    session.refresh_from_db()
    assert session.summary == "Talked about the retry pattern"

def test_nobody_adds_or_deletes_sessions_or_observations_by_hand(admin_client, mix):
    assert admin_client.get(reverse("admin:ilab_memory_session_add")).status_code == 403
    assert admin_client.get(reverse("admin:ilab_memory_observation_add")).status_code == 403
    assert admin_client.get(reverse("admin:ilab_memory_session_delete", args=[mix["auto"].pk])).status_code == 403
    delete_obs = reverse("admin:ilab_memory_observation_delete", args=[mix["auto_obs"].pk])
    assert admin_client.post(delete_obs, {"post": "yes"}).status_code == 403
    assert Observation.objects.filter(pk=mix["auto_obs"].pk).exists()
    for url in (SESSIONS, OBSERVATIONS):
        action_form = admin_client.get(url).context["action_form"]
        choices = action_form.fields["action"].choices if action_form else []
        assert "delete_selected" not in {name for name, _ in choices}

def test_close_idle_button_runs_the_sweep_and_reports_how_many(admin_client, db, clock):
    session_start(user_id="idle-1")
    session_start(user_id="idle-2")
    observation_save(user_id="idle-2", title="Note", content="Body")
    clock.shift(timedelta(hours=25))
    session_start(user_id="fresh")
    assert "Close idle sessions now" in admin_client.get(SESSIONS).content.decode()

    response = admin_client.post(CLOSE_IDLE, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["Closed 2 idle sessions."]
    closed = Session.objects.filter(user_id__in=["idle-1", "idle-2"])
    assert {s.status for s in closed} == {SessionStatus.COMPLETED}
    assert all(s.is_auto_generated for s in closed)
    assert Session.objects.get(user_id="fresh").status == SessionStatus.ACTIVE

    again = admin_client.post(CLOSE_IDLE, follow=True)
    assert [str(m) for m in again.context["messages"]] == ["Closed 0 idle sessions."]

def test_close_idle_refuses_get(admin_client, db):
    assert admin_client.get(CLOSE_IDLE).status_code == 405
