"""Scopes over HTTP: two agents of one user, a support bot and a coding assistant,
each in its own scope, and the user's shared space they both read.

A write names its scope in the body (a delete in the query), a read in the query (one scope:
that scope and the shared space; ``*``: all; repeated: exactly those). Hostile values are 400s
naming ``scope`` that write nothing; an account bound by ``ACCOUNT_SCOPES`` acts in its scope
only (403 ``scope_bound`` otherwise) and never sees another user's rows.
"""

import json

import pytest
from django.contrib.auth.models import Permission, User

from ilab_memory.models import Observation, ObservationRevision, Session, SessionStatus
from tests.api.conftest import API, client_for, read_json, uid

SUPPORT, CODING = "support", "coding"
MISSING = "00000000-0000-4000-8000-000000000000"


def save(client, scope=None, **body):
    body.setdefault("content", "Content")
    if scope is not None:
        body["scope"] = scope
    return client.post(API + "observations/", body, format="json")


def titles(response) -> set[str]:
    assert response.status_code == 200, response.content
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    return {row["title"] for row in rows}


def snapshot():
    """Everything stored, so a refused request can be shown to have written nothing."""
    return (
        sorted(Session.objects.values_list("id", "user_id", "scope", "status", "summary", "last_activity_at")),
        sorted(Observation.objects.values_list("id", "user_id", "scope", "title", "deleted_at", "updated_at")),
        ObservationRevision.objects.count(),
    )


@pytest.fixture
def memories(as_alice):
    """One memory of alice's in each agent's scope and one in her shared space."""
    saved = {
        SUPPORT: save(as_alice, SUPPORT, title="Prefers email over phone", type="preference"),
        CODING: save(as_alice, CODING, title="Writes Python 3.12", type="preference"),
        "": save(as_alice, title="Her name is Alice"),
    }
    assert all(response.status_code == 201 for response in saved.values())
    return {scope: response.json()["observation"] for scope, response in saved.items()}


@pytest.fixture
def ilab_settings(settings):
    """Change ILAB_MEMORY keys for one test, keeping the project's others."""

    def change(**values):
        settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, **values}

    return change


# -- sessions ------------------------------------------------------------------------------------


def test_each_agent_has_its_own_active_session(as_alice, alice):
    support = as_alice.post(API + "sessions/start/", {"scope": SUPPORT}, format="json")
    coding = as_alice.post(API + "sessions/start/", {"scope": CODING}, format="json")
    again = as_alice.post(API + "sessions/start/", {"scope": SUPPORT}, format="json")
    assert support.status_code == coding.status_code == 201 and again.status_code == 200
    assert again.json()["session_id"] == support.json()["session_id"] != coding.json()["session_id"]
    assert set(support.json()) == {"session_id", "is_new", "sessions_context", "memories"}
    active = Session.objects.filter(user_id=uid(alice), status=SessionStatus.ACTIVE)
    assert sorted(active.values_list("scope", flat=True)) == [CODING, SUPPORT]

    ended = as_alice.post(API + "sessions/end/", {"scope": SUPPORT, "summary": "Answered a ticket."}, format="json")
    assert ended.status_code == 200 and ended.json()["scope"] == SUPPORT
    assert ended.json()["id"] == support.json()["session_id"]
    assert Session.objects.get(pk=coding.json()["session_id"]).status == SessionStatus.ACTIVE
    assert as_alice.post(API + "sessions/end/", {"scope": SUPPORT}, format="json").json()["code"] == "no_active_session"
    summary = as_alice.post(API + "sessions/summary/", {"scope": CODING, "summary": "Refactoring."}, format="json")
    assert summary.json()["id"] == coding.json()["session_id"]


def test_a_save_lands_in_its_scopes_session(as_alice, memories):
    support = memories[SUPPORT]
    assert support["scope"] == SUPPORT and memories[""]["scope"] == ""
    assert Session.objects.get(pk=support["session_id"]).scope == SUPPORT
    assert len({m["session_id"] for m in memories.values()}) == 3


def test_sessions_list_and_detail_keep_to_the_scope(as_alice, memories):
    session = {scope: memory["session_id"] for scope, memory in memories.items()}
    listed = as_alice.get(API + "sessions/", {"scope": CODING}).json()["results"]
    assert {row["id"] for row in listed} == {session[CODING], session[""]}
    assert {row["scope"] for row in listed} == {CODING, ""}
    everything = as_alice.get(API + "sessions/?scope=*").json()["results"]
    assert {row["id"] for row in everything} == set(session.values())
    foreign = as_alice.get(API + f"sessions/{session[SUPPORT]}/", {"scope": CODING})
    missing = as_alice.get(API + f"sessions/{MISSING}/", {"scope": CODING})
    assert foreign.status_code == missing.status_code == 404 and foreign.json() == missing.json()
    assert as_alice.get(API + f"sessions/{session[SUPPORT]}/", {"scope": SUPPORT}).json()["scope"] == SUPPORT
    # No scope named: the shared space only.
    assert as_alice.get(API + f"sessions/{session[SUPPORT]}/").status_code == 404


# -- reads ---------------------------------------------------------------------------------------


def test_one_agents_memory_is_not_read_by_the_other(as_alice, memories):
    support = memories[SUPPORT]["id"]
    # Search finds by meaning too: the coding assistant gets other memories, never the support one.
    assert "Prefers email over phone" not in titles(as_alice.get(API + "observations/search/", {"q": "email",
                                                                                               "scope": CODING}))
    assert "Prefers email over phone" in titles(as_alice.get(API + "observations/search/", {"q": "email",
                                                                                           "scope": SUPPORT}))
    for path in ("context/", "observations/"):
        seen = titles(as_alice.get(API + path, {"scope": CODING}))
        assert seen == {"Writes Python 3.12", "Her name is Alice"}, path
    for path in (f"observations/{support}/", f"observations/{support}/timeline/", f"observations/{support}/revisions/"):
        foreign = as_alice.get(API + path, {"scope": CODING})
        missing = as_alice.get(API + path.replace(support, MISSING), {"scope": CODING})
        assert foreign.status_code == missing.status_code == 404, path
        assert foreign.json() == missing.json() == {"detail": "No such observation.", "code": "observation_not_found"}
        assert as_alice.get(API + path, {"scope": SUPPORT}).status_code == 200, path
    text = json.dumps([as_alice.get(API + p, {"scope": CODING}).json()
                       for p in ("context/", "observations/", "sessions/")])
    assert support not in text and memories[SUPPORT]["session_id"] not in text


def test_the_shared_space_is_read_by_every_scope_and_star_reads_them_all(as_alice, memories):
    everything = {"Prefers email over phone", "Writes Python 3.12", "Her name is Alice"}
    for path in ("context/", "observations/"):
        assert titles(as_alice.get(API + path, {"scope": SUPPORT})) == {"Prefers email over phone", "Her name is Alice"}
        assert titles(as_alice.get(API + path)) == {"Her name is Alice"}
        assert titles(as_alice.get(API + path, {"scope": ""})) == {"Her name is Alice"}
        assert titles(as_alice.get(API + path, {"scope": "*"})) == everything
        # Repeated: exactly the scopes named, the shared space only if named.
        assert titles(as_alice.get(API + path + "?scope=support&scope=coding")) == everything - {"Her name is Alice"}
    shared = memories[""]["id"]
    assert as_alice.get(API + f"observations/{shared}/", {"scope": CODING}).json()["scope"] == ""
    assert titles(as_alice.get(API + "observations/search/", {"q": "alice", "scope": SUPPORT})) == {"Her name is Alice"}


def test_a_scope_reads_its_own_memories_first_on_equal_evidence(as_alice, clock):
    shared = save(as_alice, title="Deploy notes", content="deploy on Fridays").json()["observation"]
    own = save(as_alice, CODING, title="Deploy notes", content="deploy on Fridays").json()["observation"]
    for path, query in (("context/", {}), ("observations/search/", {"q": "deploy"})):
        ranked = as_alice.get(API + path, {**query, "scope": CODING}).json()
        assert [m["id"] for m in ranked] == [own["id"], shared["id"]], path
        assert [m["score"]["breakdown"]["scope"] for m in ranked] == [CODING, ""], path


def test_a_timeline_stays_in_its_scopes_session(as_alice):
    first = save(as_alice, CODING, title="one").json()["observation"]
    save(as_alice, CODING, title="two")
    save(as_alice, SUPPORT, title="elsewhere")
    timeline = as_alice.get(API + f"observations/{first['id']}/timeline/", {"scope": CODING}).json()
    assert timeline["anchor"]["scope"] == CODING and [m["title"] for m in timeline["after"]] == ["two"]


# -- topics and twins ------------------------------------------------------------------------------


def test_topic_keys_and_duplicates_are_per_scope(as_alice):
    support = save(as_alice, SUPPORT, title="Editor", content="helix", topic_key="editor")
    coding = save(as_alice, CODING, title="Editor", content="vim", topic_key="editor")
    assert support.status_code == coding.status_code == 201
    assert support.json()["observation"]["id"] != coding.json()["observation"]["id"]
    revised = save(as_alice, SUPPORT, title="Editor", content="zed", topic_key="editor")
    assert revised.status_code == 200 and revised.json()["action"] == "revised"
    assert revised.json()["observation"]["id"] == support.json()["observation"]["id"]
    revisions = as_alice.get(API + f"observations/{support.json()['observation']['id']}/revisions/", {"scope": SUPPORT})
    assert [r["content"] for r in revisions.json()] == ["helix"]
    assert as_alice.get(API + "observations/", {"scope": CODING, "topic_key": "editor"}).json()["results"][0][
        "preview"] == "vim"

    twin = save(as_alice, SUPPORT, title="Same", content="words")
    assert save(as_alice, SUPPORT, title="Same", content="words").json()["action"] == "duplicate"
    other = save(as_alice, CODING, title="Same", content="words")
    assert other.status_code == 201 and other.json()["observation"]["id"] != twin.json()["observation"]["id"]


# -- writes by id --------------------------------------------------------------------------------


def test_a_write_by_id_changes_only_a_memory_of_its_scope(as_alice, memories):
    support = memories[SUPPORT]["id"]
    before = snapshot()
    for body in ({"title": "x", "scope": CODING}, {"title": "x"}):
        assert as_alice.patch(API + f"observations/{support}/", body, format="json").status_code == 404
    assert as_alice.delete(API + f"observations/{support}/?scope=coding").status_code == 404
    assert as_alice.delete(API + f"observations/{support}/").status_code == 404
    assert snapshot() == before
    patched = as_alice.patch(API + f"observations/{support}/", {"title": "Prefers email", "scope": SUPPORT},
                             format="json")
    assert patched.status_code == 200 and patched.json()["scope"] == SUPPORT
    assert as_alice.patch(API + f"observations/{support}/", {"title": "Any", "scope": "*"},
                          format="json").status_code == 200
    assert as_alice.delete(API + f"observations/{support}/?scope=support").status_code == 204
    assert as_alice.delete(API + f"observations/{memories[CODING]['id']}/?scope=*&hard=true").status_code == 204
    assert list(Observation.objects.live().values_list("scope", flat=True)) == [""]


def test_a_write_may_name_its_scope_in_the_query_like_user_id(as_alice):
    response = as_alice.post(API + "observations/?scope=support", {"title": "t", "content": "c"}, format="json")
    assert response.status_code == 201 and response.json()["observation"]["scope"] == SUPPORT
    both = as_alice.post(API + "observations/?scope=support", {"title": "u", "content": "c", "scope": CODING},
                         format="json")
    assert both.json()["observation"]["scope"] == CODING  # the body wins, as for user_id


def test_a_null_scope_means_what_leaving_it_out_means(as_alice, alice, memories):
    body = {"title": "t", "content": "c", "scope": None}
    assert as_alice.post(API + "observations/", body, format="json").json()["observation"]["scope"] == ""
    erased = as_alice.post(API + "forget/", {"confirm": uid(alice), "scope": None}, format="json")
    assert erased.status_code == 200 and not Observation.objects.exists()  # forget's default: every scope


# -- hostile values ------------------------------------------------------------------------------

HOSTILE = [
    pytest.param("Support", "invalid_scope", id="uppercase"),
    pytest.param("two words", "invalid_scope", id="space"),
    pytest.param("../x", "invalid_scope", id="path"),
    pytest.param("-leading", "invalid_scope", id="leading-dash"),
    pytest.param("a" * 65, "max_length", id="65-chars"),
    pytest.param("a\x00b", "invalid_scope", id="nul"),
    pytest.param("\u00e9t\u00e9", "invalid_scope", id="non-ascii"),
    pytest.param(5, "invalid_type", id="number"),
    pytest.param(True, "invalid_type", id="boolean"),
    pytest.param({"a": 1}, "invalid_type", id="object"),
]
WRITES = [
    ("post", "sessions/start/", {}),
    ("post", "sessions/summary/", {"summary": "s"}),
    ("post", "sessions/end/", {"summary": "s"}),
    ("post", "observations/", {"title": "t", "content": "c"}),
    ("patch", "observations/{obs}/", {"title": "changed"}),
    ("post", "import/", {"data": {"format": "ilab_memory.export", "version": 1}}),
    ("post", "forget/", {"confirm": "{user}"}),
]
READS = ["context/", "observations/", "observations/{obs}/", "observations/{obs}/timeline/",
         "observations/{obs}/revisions/", "observations/search/?q=c", "sessions/", "sessions/{session}/",
         "stats/", "export/"]


def fill(path: str, memory: dict) -> str:
    return path.format(obs=memory["id"], session=memory["session_id"])


def assert_scope_400(response, code):
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code and list(body["errors"]) == ["scope"], body


@pytest.mark.parametrize("value, code", HOSTILE)
@pytest.mark.parametrize("method, path, body", WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_a_hostile_scope_in_a_write_is_a_400_naming_scope_and_writes_nothing(
    as_alice, alice, memories, method, path, body, value, code
):
    body = json.loads(json.dumps(body).replace("{user}", uid(alice)))
    before = snapshot()
    response = getattr(as_alice, method)(API + fill(path, memories[""]), {**body, "scope": value}, format="json")
    assert_scope_400(response, code)
    assert snapshot() == before


@pytest.mark.parametrize("value", ["*", ["support", "coding"], []])
@pytest.mark.parametrize("path", ["sessions/start/", "observations/"])
def test_a_write_lands_in_one_scope_not_star_nor_a_list(as_alice, path, value):
    response = as_alice.post(API + path, {"title": "t", "content": "c", "scope": value} if path != "sessions/start/"
                             else {"scope": value}, format="json")
    assert_scope_400(response, "one_scope_required")
    assert not Session.objects.exists() and not Observation.objects.exists()


@pytest.mark.parametrize("value, code", [
    ("Support", "invalid_scope"), ("two%20words", "invalid_scope"), ("..%2Fx", "invalid_scope"),
    ("a" * 65, "max_length"), ("a%00b", "invalid_scope"), ("*&scope=coding", "invalid_scope"),
])
@pytest.mark.parametrize("path", READS)
def test_a_hostile_scope_in_a_read_is_a_400_naming_scope(as_alice, memories, path, value, code):
    path = fill(path, memories[""])
    response = as_alice.get(API + path + ("&" if "?" in path else "?") + f"scope={value}")
    assert_scope_400(response, code)


def test_a_delete_with_a_hostile_scope_is_a_400_and_deletes_nothing(as_alice, memories):
    before = snapshot()
    for query, code in (("scope=Support", "invalid_scope"), ("scope=a&scope=b", "one_scope_required")):
        assert_scope_400(as_alice.delete(API + f"observations/{memories['']['id']}/?{query}"), code)
    assert snapshot() == before


def test_more_scopes_than_a_list_may_name_is_a_400(as_alice):
    query = "&".join(f"scope=s{i}" for i in range(21))
    assert_scope_400(as_alice.get(API + "context/?" + query), "too_many_scopes")


def test_a_scope_the_site_does_not_list_is_a_400(as_alice, ilab_settings):
    ilab_settings(SCOPES=[SUPPORT, CODING])
    assert save(as_alice, SUPPORT, title="allowed").status_code == 201
    before = snapshot()
    assert_scope_400(save(as_alice, "billing", title="refused"), "scope_not_allowed")
    assert_scope_400(as_alice.post(API + "sessions/start/", {"scope": "billing"}, format="json"), "scope_not_allowed")
    assert_scope_400(as_alice.get(API + "context/", {"scope": "billing"}), "scope_not_allowed")
    assert_scope_400(as_alice.get(API + "observations/?scope=support&scope=billing"), "scope_not_allowed")
    assert snapshot() == before
    assert save(as_alice, title="the shared space is always allowed").status_code == 201


# -- bound accounts ------------------------------------------------------------------------------


@pytest.fixture
def support_bot(db, ilab_settings):
    """An agent backend bound to the support scope, acting for any user_id."""
    ilab_settings(ACCOUNT_SCOPES={"support-bot": SUPPORT})
    user = User.objects.create_user("support-bot")
    user.user_permissions.add(Permission.objects.get(codename="act_for_any_user",
                                                     content_type__app_label="ilab_memory"))
    return client_for(User.objects.get(pk=user.pk))


def test_a_bound_account_writes_in_its_scope_without_naming_it(support_bot, alice):
    started = support_bot.post(API + "sessions/start/", {"user_id": uid(alice)}, format="json")
    saved = support_bot.post(API + "observations/", {"user_id": uid(alice), "title": "t", "content": "c"},
                             format="json")
    named = support_bot.post(API + "observations/", {"user_id": uid(alice), "title": "u", "content": "c",
                                                     "scope": SUPPORT}, format="json")
    assert started.status_code == 201 and saved.status_code == named.status_code == 201
    assert Session.objects.get(pk=started.json()["session_id"]).scope == SUPPORT
    assert set(Observation.objects.filter(user_id=uid(alice)).values_list("scope", flat=True)) == {SUPPORT}


@pytest.mark.parametrize("scope", [CODING, "", "*", ["support", "coding"], "Support", 5])
def test_a_bound_account_naming_another_scope_is_403_and_changes_nothing(support_bot, alice, memories, scope):
    before = snapshot()
    writes = [
        support_bot.post(API + "observations/", {"user_id": uid(alice), "title": "t", "content": "c", "scope": scope},
                         format="json"),
        support_bot.patch(API + f"observations/{memories[SUPPORT]['id']}/", {"user_id": uid(alice), "title": "x",
                                                                             "scope": scope}, format="json"),
        support_bot.post(API + "forget/", {"user_id": uid(alice), "confirm": uid(alice), "scope": scope},
                         format="json"),
    ]
    query = "&".join(f"scope={s}" for s in (scope if isinstance(scope, list) else [scope]))
    reads = [support_bot.get(API + f"{path}?user_id={uid(alice)}&{query}") for path in ("context/", "observations/",
                                                                                       "export/", "stats/")]
    reads.append(support_bot.delete(API + f"observations/{memories[SUPPORT]['id']}/?user_id={uid(alice)}&{query}"))
    for response in writes + reads:
        assert response.status_code == 403, response.content
        assert response.json() == {
            "detail": "This account is bound to the scope 'support'; it may not name another scope.",
            "code": "scope_bound",
        }
    assert snapshot() == before


def test_a_bound_account_reads_its_scope_and_the_shared_space_of_the_named_user_only(
    support_bot, alice, bob, as_bob, memories
):
    save(as_bob, SUPPORT, title="Bob's ticket")
    save(as_bob, title="Bob's name")
    seen = titles(support_bot.get(API + "observations/", {"user_id": uid(alice)}))
    assert seen == {"Prefers email over phone", "Her name is Alice"}
    assert titles(support_bot.get(API + "context/", {"user_id": uid(alice), "scope": SUPPORT})) == seen
    rows = support_bot.get(API + "observations/", {"user_id": uid(alice)}).json()["results"]
    assert Observation.objects.filter(pk__in=[r["id"] for r in rows], user_id=uid(bob)).count() == 0
    bobs = Observation.objects.get(title="Bob's ticket").pk
    foreign = support_bot.get(API + f"observations/{bobs}/", {"user_id": uid(alice)})
    assert foreign.status_code == 404
    coding = support_bot.get(API + f"observations/{memories[CODING]['id']}/", {"user_id": uid(alice)})
    assert coding.status_code == 404
    stats = support_bot.get(API + "stats/", {"user_id": uid(alice)}).json()
    assert stats["scope"] == "support," and stats["observations_by_scope"] == {"": 1, SUPPORT: 1}


def test_a_bound_account_exports_and_erases_its_own_scope_only(support_bot, alice, memories):
    document = read_json(support_bot.get(API + "export/", {"user_id": uid(alice)}))
    assert {row["scope"] for row in document["observations"] + document["sessions"]} == {SUPPORT}
    erased = support_bot.post(API + "forget/", {"user_id": uid(alice), "confirm": uid(alice)}, format="json")
    assert erased.status_code == 200 and erased.json()["observations"] == 1
    assert set(Observation.objects.values_list("scope", flat=True)) == {CODING, ""}


def test_a_bound_plain_account_still_cannot_act_for_another_user(ilab_settings, bob, memories):
    ilab_settings(ACCOUNT_SCOPES={"helper": SUPPORT})
    helper = client_for(User.objects.create_user("helper"))
    response = helper.get(API + "observations/", {"user_id": uid(bob)})
    assert response.status_code == 403 and response.json()["code"] == "act_for_any_user_required"
    assert helper.get(API + "observations/").json()["results"] == []


# -- export, import, forget, stats ---------------------------------------------------------------


def test_export_of_one_scope_imports_into_a_fresh_user(as_alice, as_bob, bob, memories):
    full = read_json(as_alice.get(API + "export/"))
    assert {row["scope"] for row in full["observations"]} == {SUPPORT, CODING, ""}
    exported = as_alice.get(API + "export/", {"scope": SUPPORT})
    assert exported.status_code == 200 and exported.streaming
    document = read_json(exported)
    assert [row["title"] for row in document["observations"]] == ["Prefers email over phone"]
    assert {row["scope"] for row in document["observations"] + document["sessions"]} == {SUPPORT}
    as_alice.post(API + "forget/", {"confirm": document["user_id"], "scope": SUPPORT}, format="json")

    imported = as_bob.post(API + "import/", {"data": document}, format="json")
    assert imported.status_code == 200 and imported.json()["observations_created"] == 1
    assert titles(as_bob.get(API + "context/", {"scope": SUPPORT})) == {"Prefers email over phone"}
    assert titles(as_bob.get(API + "context/")) == set()
    assert set(Observation.objects.filter(user_id=uid(bob)).values_list("scope", flat=True)) == {SUPPORT}


def test_import_into_a_named_scope_puts_every_record_there(as_alice, as_bob, bob, memories):
    document = read_json(as_alice.get(API + "export/"))
    as_alice.post(API + "forget/", {"confirm": document["user_id"]}, format="json")
    before = snapshot()
    assert_scope_400(as_bob.post(API + "import/", {"data": document, "scope": "Nope"}, format="json"), "invalid_scope")
    assert snapshot() == before
    response = as_bob.post(API + "import/", {"data": document, "scope": "archive"}, format="json")
    assert response.status_code == 200 and response.json()["observations_created"] == 3
    assert set(Observation.objects.filter(user_id=uid(bob)).values_list("scope", flat=True)) == {"archive"}
    assert set(Session.objects.filter(user_id=uid(bob)).values_list("scope", flat=True)) == {"archive"}


def test_a_bad_export_scope_is_a_400_before_anything_is_streamed(as_alice, memories):
    response = as_alice.get(API + "export/", {"scope": "../x"})
    assert not response.streaming
    assert_scope_400(response, "invalid_scope")


def test_forget_of_one_scope_leaves_the_others(as_alice, alice, memories):
    save(as_alice, SUPPORT, title="Prefers email over phone", content="v2", topic_key="contact")
    save(as_alice, SUPPORT, title="Prefers email over phone", content="v3", topic_key="contact")
    response = as_alice.post(API + "forget/", {"confirm": uid(alice), "scope": SUPPORT}, format="json")
    assert response.status_code == 200
    assert response.json() == {"sessions": 1, "observations": 2, "revisions": 1, "vectors": 2}
    assert set(Observation.objects.values_list("scope", flat=True)) == {CODING, ""}
    assert set(Session.objects.values_list("scope", flat=True)) == {CODING, ""}
    assert titles(as_alice.get(API + "context/", {"scope": "*"})) == {"Writes Python 3.12", "Her name is Alice"}
    everything = as_alice.post(API + "forget/", {"confirm": uid(alice), "scope": "*"}, format="json")
    assert everything.json()["observations"] == 2 and not Observation.objects.exists()


def test_a_null_scope_in_the_body_leaves_the_querys_scope_in_force(as_alice, alice, memories):
    saved = as_alice.post(API + f"observations/?scope={SUPPORT}", {"title": "T", "content": "C", "scope": None},
                          format="json")
    assert saved.status_code == 201 and saved.json()["observation"]["scope"] == SUPPORT
    response = as_alice.post(API + f"forget/?scope={SUPPORT}", {"confirm": uid(alice), "scope": None}, format="json")
    assert response.status_code == 200 and response.json()["observations"] == 2
    assert set(Observation.objects.values_list("scope", flat=True)) == {CODING, ""}


def test_a_scope_the_settings_no_longer_allow_is_exported_and_erased(as_alice, alice, memories, ilab_settings):
    ilab_settings(SCOPES=[CODING])
    exported = as_alice.get(API + "export/", {"scope": SUPPORT})
    assert exported.status_code == 200
    document = json.loads(b"".join(exported.streaming_content))
    assert [o["title"] for o in document["observations"]] == ["Prefers email over phone"]
    assert save(as_alice, SUPPORT, title="New").status_code == 400  # every other use is refused
    erased = as_alice.post(API + "forget/", {"confirm": uid(alice), "scope": SUPPORT}, format="json")
    assert erased.status_code == 200 and erased.json()["observations"] == 1


def test_forget_without_a_scope_erases_the_whole_user(as_alice, alice, memories):
    response = as_alice.post(API + "forget/", {"confirm": uid(alice)}, format="json")
    assert response.status_code == 200 and response.json()["observations"] == 3
    assert not Observation.objects.exists() and not Session.objects.exists()


def test_stats_count_what_the_scope_reads(as_alice, alice, memories):
    save(as_alice, CODING, title="Uses uv")
    support = as_alice.get(API + "stats/", {"scope": SUPPORT}).json()
    assert (support["user_id"], support["scope"], support["observations"]) == (uid(alice), "support,", 2)
    assert support["observations_by_scope"] == {"": 1, SUPPORT: 1}
    assert support["sessions"] == support["active_sessions"] == 2
    shared = as_alice.get(API + "stats/").json()
    assert (shared["scope"], shared["observations"], shared["observations_by_scope"]) == ("", 1, {"": 1})
    everything = as_alice.get(API + "stats/?scope=*").json()
    assert everything["scope"] == "*" and everything["observations_by_scope"] == {"": 1, CODING: 2, SUPPORT: 1}
    assert everything["observations_by_type"] == {"manual": 2, "preference": 2}
    listed = as_alice.get(API + "stats/?scope=coding&scope=support").json()
    assert listed["scope"] == "coding,support" and listed["observations"] == 3


# -- schema --------------------------------------------------------------------------------------


def test_every_endpoint_documents_its_scope(as_alice):
    schema = as_alice.get(API + "schema/?format=json").json()
    components = schema["components"]["schemas"]
    documented = []
    for path, operations in schema["paths"].items():
        if path == f"{API}me/":
            continue  # reads no memory: it tells the account's own scope, and names none
        for method, operation in operations.items():
            parameter = next((p for p in operation.get("parameters", []) if p["name"] == "scope"), None)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            field = components[body["$ref"].rsplit("/", 1)[1]]["properties"].get("scope") if body else None
            described = (parameter or field or {}).get("description", "")
            assert "shared space" in described and "scope_bound" in described, (method, path)
            documented.append((method, path, "query" if parameter else "body"))
    assert ("get", f"{API}stats/", "query") in documented
    assert ("delete", f"{API}observations/{{id}}/", "query") in documented
    assert ("patch", f"{API}observations/{{id}}/", "body") in documented
    read = next(p for p in schema["paths"][f"{API}context/"]["get"]["parameters"] if p["name"] == "scope")
    assert read["schema"]["type"] == "array" and read["schema"]["maxItems"] == 20 and "'*'" in read["description"]


# -- a site's own scope resolver -----------------------------------------------------------------


def scope_from_group(request):
    """A site's ``SCOPE_RESOLVER``: an account in the group ``agent:<scope>`` acts in that scope."""
    names = request.user.groups.filter(name__startswith="agent:").values_list("name", flat=True)
    return next((name.removeprefix("agent:") for name in names), None)


def test_the_scope_resolver_the_setting_names_binds_an_account(ilab_settings, alice, as_alice, memories):
    # ACCOUNT_SCOPES is what the default resolver reads: another resolver does not read it.
    ilab_settings(SCOPE_RESOLVER="tests.api.test_scopes_api.scope_from_group",
                  ACCOUNT_SCOPES={alice.username: CODING})
    assert titles(as_alice.get(API + "observations/")) == {"Her name is Alice"}  # not bound: the shared space
    alice.groups.create(name="agent:support")
    assert save(as_alice, title="Refund approved").json()["observation"]["scope"] == SUPPORT
    assert titles(as_alice.get(API + "observations/")) == {"Prefers email over phone", "Her name is Alice",
                                                           "Refund approved"}
    before = snapshot()
    refused = save(as_alice, CODING, title="Sneaked in")
    assert (refused.status_code, refused.json()["code"]) == (403, "scope_bound")
    assert as_alice.get(API + "observations/", {"scope": "*"}).json()["code"] == "scope_bound"
    assert snapshot() == before


def test_the_scope_resolver_may_be_a_callable(ilab_settings, as_alice, memories):
    ilab_settings(SCOPE_RESOLVER=lambda request: CODING)
    assert titles(as_alice.get(API + "observations/")) == {"Writes Python 3.12", "Her name is Alice"}
    assert as_alice.get(API + "stats/").json()["scope"] == "coding,"


def test_a_scope_the_resolver_gives_is_checked_like_one_a_request_names(ilab_settings, as_alice, memories):
    ilab_settings(SCOPE_RESOLVER=lambda request: "Not A Slug", SCOPES=[SUPPORT, CODING])
    before = snapshot()
    assert_scope_400(save(as_alice, title="t"), "invalid_scope")
    assert_scope_400(as_alice.get(API + "context/"), "invalid_scope")
    ilab_settings(SCOPE_RESOLVER=lambda request: "billing")
    assert_scope_400(save(as_alice, title="t"), "scope_not_allowed")
    assert snapshot() == before
