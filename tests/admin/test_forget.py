"""The admin's erasure action: confirmation first, then user_forget for every selected user."""

from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from ilab_memory.models import Observation, ObservationRevision, Session
from ilab_memory.services.observations import observation_save, observation_update
from tests.admin.pages import SESSIONS, staff_client


def seed():
    saved = observation_save(user_id="alice", title="T", content="C").observation
    observation_update(user_id="alice", observation_id=saved.id, title="T2")
    observation_save(user_id="bob", title="Bob's", content="kept")
    return Session.objects.get(user_id="alice")


def post_action(client, session, **extra):
    return client.post(
        SESSIONS, {"action": "forget_users", ACTION_CHECKBOX_NAME: [str(session.pk)], **extra}
    )


def test_forget_action_asks_for_confirmation_and_erases_nothing_yet(admin_client, db):
    session = seed()
    response = post_action(admin_client, session)
    assert response.status_code == 200
    assert b"alice" in response.content and b"cannot be undone" in response.content
    assert Observation.objects.filter(user_id="alice").exists()


def test_confirmed_forget_action_erases_every_row_of_the_user_only(admin_client, db):
    session = seed()
    response = post_action(admin_client, session, confirm_forget="yes")
    assert response.status_code == 302
    assert not Session.objects.filter(user_id="alice").exists()
    assert not Observation.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()
    assert Observation.objects.filter(user_id="bob").count() == 1
    messages = [str(m) for m in response.wsgi_request._messages]
    assert "Erased 1 user: 1 session, 1 observation, 1 revision." in messages


def test_forget_action_needs_both_delete_permissions(client, django_user_model, db):
    session = seed()
    staff = staff_client(client, django_user_model, "view_session", "change_session", "delete_session")
    response = post_action(staff, session, confirm_forget="yes")
    assert response.status_code in (200, 302)
    assert Observation.objects.filter(user_id="alice").exists()
    page = staff.get(SESSIONS)
    assert b"forget_users" not in page.content


def test_forget_action_is_offered_to_operators_who_may_delete(admin_client, db):
    seed()
    assert b"forget_users" in admin_client.get(SESSIONS).content
    assert reverse("admin:ilab_memory_session_changelist") == SESSIONS
