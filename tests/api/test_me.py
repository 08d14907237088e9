"""``me/``: a token learns whose memory it reads, and a plain account naming another user is told
its own id and what to do instead."""

from django.test import override_settings
from rest_framework.test import APIClient

from tests.api.conftest import API, client_for, uid


def test_a_plain_account_learns_its_user_id_and_that_it_may_not_act_for_others(as_alice, alice):
    body = as_alice.get(API + "me/").json()
    assert body == {"user_id": uid(alice), "scope": None, "may_act_for_any_user": False}


def test_a_service_account_may_act_for_any_user(as_agent, agent):
    assert as_agent.get(API + "me/").json() == {"user_id": uid(agent), "scope": None, "may_act_for_any_user": True}


@override_settings(ILAB_MEMORY={"ACCOUNT_SCOPES": {"alice": "support"}})
def test_a_bound_account_learns_its_scope(as_alice, alice):
    assert as_alice.get(API + "me/").json()["scope"] == "support"


def test_me_needs_a_token(db):
    response = APIClient().get(API + "me/")
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"


def test_what_me_answers_is_the_user_id_every_call_uses(as_alice):
    me = as_alice.get(API + "me/").json()
    saved = as_alice.post(API + "observations/", {"title": "Mine", "content": "c"}, format="json").json()
    assert as_alice.get(API + "stats/", {"user_id": me["user_id"]}).json()["user_id"] == me["user_id"]
    assert saved["observation"]["user_id"] == me["user_id"]


def test_naming_another_user_says_whose_token_it_is_and_what_to_do(as_alice, alice):
    response = as_alice.get(API + "context/", {"user_id": "alice"})  # the username, not the user id
    assert response.status_code == 403
    assert response.json() == {
        "detail": f"This token belongs to user {uid(alice)}; omit user_id or use an account allowed to act "
                  "for any user.",
        "code": "act_for_any_user_required",
    }


@override_settings(LANGUAGE_CODE="es")
def test_the_refusal_speaks_spanish_too(db, django_user_model):
    client = client_for(django_user_model.objects.create_user("ana"))
    detail = client.get(API + "stats/", {"user_id": "x"}, HTTP_ACCEPT_LANGUAGE="es").json()["detail"]
    assert detail.startswith("Este token pertenece al usuario ")
