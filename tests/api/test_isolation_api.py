"""The isolation matrix: two users and an agent backend, every endpoint, every foreign id and user_id.

Rules: naming another user_id without ``ilab_memory.act_for_any_user`` is 403 and
changes nothing; another user's object is 404, exactly like an id that does not exist.
"""

import json

import pytest

from ilab_memory.models import Observation, ObservationRevision, Session
from tests.api.conftest import API, read_json, uid

# (method, path, body) for every endpoint; {obs} and {session} are filled per case.
ENDPOINTS = [
    ("post", "sessions/start/", {}),
    ("post", "sessions/summary/", {"summary": "s"}),
    ("post", "sessions/end/", {}),
    ("get", "sessions/", None),
    ("get", "sessions/{session}/", None),
    ("post", "observations/", {"title": "t", "content": "c"}),
    ("get", "observations/", None),
    ("get", "observations/{obs}/", None),
    ("patch", "observations/{obs}/", {"title": "changed"}),
    ("delete", "observations/{obs}/", None),
    ("delete", "observations/{obs}/?hard=true", None),
    ("get", "observations/{obs}/timeline/", None),
    ("get", "observations/{obs}/revisions/", None),
    ("get", "observations/search/?q=c", None),
    ("get", "context/", None),
    ("get", "stats/", None),
    ("get", "export/", None),
    ("post", "import/", {"data": {"format": "ilab_memory.export", "version": 1}}),
    ("post", "forget/", {"confirm": "{user}"}),
]
OBJECT_ENDPOINTS = [e for e in ENDPOINTS if "{" in e[1]]


@pytest.fixture
def world(as_alice, as_bob):
    """Alice and Bob each with an active session holding one observation (with history)."""
    rows = {}
    for name, client in (("alice", as_alice), ("bob", as_bob)):
        client.post(API + "observations/", {"title": f"{name} v1", "content": "c", "topic_key": "k"}, format="json")
        body = client.post(
            API + "observations/", {"title": f"{name} v2", "content": "c", "topic_key": "k"}, format="json"
        ).json()
        rows[name] = {"obs": body["observation"]["id"], "session": body["observation"]["session_id"]}
    return rows


def snapshot():
    """Everything stored, so a refused request can be shown to have changed nothing."""
    return (
        sorted(Session.objects.values_list("id", "user_id", "status", "summary", "last_activity_at")),
        sorted(Observation.objects.values_list("id", "user_id", "title", "deleted_at", "session_id", "updated_at")),
        ObservationRevision.objects.count(),
    )


def call(client, method, path, body, *, obs="x", session="x", user="x", query_user=None, body_user=None):
    path = path.format(obs=obs, session=session)
    if query_user is not None:
        path += ("&" if "?" in path else "?") + f"user_id={query_user}"
    if body is not None:
        body = json.loads(json.dumps(body).replace("{user}", user))
        if body_user is not None:
            body["user_id"] = body_user
    return getattr(client, method)(API + path, body, format="json")


def name_other_user(method, path, body, user_id):
    """Where a request names a user_id: the JSON body for writes with a body, else the query."""
    if body is not None:
        return {"body_user": user_id}
    return {"query_user": user_id}


@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_naming_another_user_id_without_the_permission_is_403_and_changes_nothing(
    as_alice, bob, world, method, path, body
):
    before = snapshot()
    response = call(
        as_alice, method, path, body, obs=world["bob"]["obs"], session=world["bob"]["session"], user=uid(bob),
        **name_other_user(method, path, body, uid(bob)),
    )
    assert response.status_code == 403
    assert response.json()["code"] == "act_for_any_user_required"
    assert "bob" not in response.content.decode()
    assert snapshot() == before


@pytest.mark.parametrize("method, path, body", OBJECT_ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in OBJECT_ENDPOINTS])
def test_another_users_object_is_404_like_a_missing_one_and_changes_nothing(as_alice, world, method, path, body):
    before = snapshot()
    foreign = call(as_alice, method, path, body, obs=world["bob"]["obs"], session=world["bob"]["session"])
    missing = call(
        as_alice, method, path, body,
        obs="00000000-0000-0000-0000-000000000000", session="00000000-0000-0000-0000-000000000000",
    )
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert snapshot() == before


@pytest.mark.parametrize("method, path, body", OBJECT_ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in OBJECT_ENDPOINTS])
def test_an_agent_acting_for_alice_cannot_reach_bobs_objects(as_agent, alice, world, method, path, body):
    before = snapshot()
    response = call(
        as_agent, method, path, body, obs=world["bob"]["obs"], session=world["bob"]["session"],
        **name_other_user(method, path, body, uid(alice)),
    )
    assert response.status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_an_agent_with_the_permission_acts_for_the_named_user(as_agent, bob, world, method, path, body):
    response = call(
        as_agent, method, path, body, obs=world["bob"]["obs"], session=world["bob"]["session"], user=uid(bob),
        **name_other_user(method, path, body, uid(bob)),
    )
    assert response.status_code in (200, 201, 204), response.content
    if method == "get" and path in ("sessions/", "observations/"):
        assert response.json()["results"]
        assert all(row.get("user_id", uid(bob)) == uid(bob) for row in response.json()["results"])
    if path == "export/":
        assert read_json(response)["user_id"] == uid(bob)


def test_an_agent_without_a_user_id_acts_for_itself(as_agent, agent, world):
    assert as_agent.get(API + "observations/").json()["results"] == []
    as_agent.post(API + "sessions/start/", {}, format="json")
    assert Session.objects.filter(user_id=uid(agent)).count() == 1


def test_agent_writes_land_on_the_named_user_only(as_agent, as_alice, as_bob, bob, world):
    as_agent.post(API + "observations/", {"title": "for bob", "content": "c", "user_id": uid(bob)}, format="json")
    assert "for bob" in [r["title"] for r in as_bob.get(API + "observations/").json()["results"]]
    assert "for bob" not in [r["title"] for r in as_alice.get(API + "observations/").json()["results"]]


def test_lists_and_filters_never_show_another_users_rows(as_alice, world):
    for path in ("sessions/", "observations/", f"observations/?session={world['bob']['session']}", "context/"):
        body = as_alice.get(API + path).json()
        text = json.dumps(body)
        assert world["bob"]["obs"] not in text and world["bob"]["session"] not in text
        assert "bob v2" not in text


def test_naming_ones_own_user_id_is_allowed(as_alice, alice, world):
    response = as_alice.get(API + f"observations/?user_id={uid(alice)}")
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["results"]] == [world["alice"]["obs"]]


def test_agent_naming_an_invalid_user_id_gets_400(as_agent):
    response = as_agent.get(API + "context/?user_id=" + "x" * 256)
    assert response.status_code == 400
    assert response.json()["code"] == "max_length"
    response = as_agent.post(API + "sessions/start/", {"user_id": " \t "}, format="json")
    assert response.status_code == 400


def test_forget_by_an_agent_erases_only_the_named_user(as_agent, bob, alice, world):
    response = as_agent.post(API + "forget/", {"user_id": uid(bob), "confirm": uid(bob)}, format="json")
    assert response.status_code == 200
    assert not Observation.objects.filter(user_id=uid(bob)).exists()
    assert Observation.objects.filter(user_id=uid(alice)).count() == 1


@pytest.fixture
def as_superuser(db):
    from django.contrib.auth.models import User

    from tests.api.conftest import client_for

    return client_for(User.objects.create_superuser("root-operator", password="x"))


@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_a_superuser_without_the_grant_may_not_act_for_another_user(as_superuser, bob, world, method, path, body):
    """Holding every permission implicitly is not the grant: a superuser's leaked token must not
    read every user's memory."""
    before = snapshot()
    response = call(
        as_superuser, method, path, body, obs=world["bob"]["obs"], session=world["bob"]["session"], user=uid(bob),
        **name_other_user(method, path, body, uid(bob)),
    )
    assert response.status_code == 403 and response.json()["code"] == "act_for_any_user_required"
    assert snapshot() == before


def test_a_superuser_granted_the_permission_on_purpose_acts_for_another_user(bob, world):
    from django.contrib.auth.models import Group, Permission, User

    from tests.api.conftest import client_for

    service = User.objects.create_superuser("service-root", password="x")
    group = Group.objects.create(name="memory backends")
    group.permissions.add(Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory"))
    service.groups.add(group)
    response = client_for(User.objects.get(pk=service.pk)).get(API + "context/", {"user_id": uid(bob)})
    assert response.status_code == 200 and [m["title"] for m in response.json()] == ["bob v2"]


def test_each_request_acting_for_another_user_is_logged(as_agent, agent, bob, world, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="ilab_memory.access")
    as_agent.get(API + "context/", {"user_id": uid(bob)})
    as_agent.get(API + "context/")  # its own memory: nothing to log
    [record] = [r for r in caplog.records if r.name == "ilab_memory.access"]
    assert record.getMessage() == (
        f"account 'agent-backend' (pk {agent.pk}) acted for user_id '{uid(bob)}': GET /api/memory/context/"
    )
