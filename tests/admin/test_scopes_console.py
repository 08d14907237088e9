"""Scopes in the operator console: the scope column and filter of both lists, a
user's scopes on its page, export and erasure of one scope, edits of a scoped memory."""

import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import DELETION, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse

from ilab_memory.models import Observation, ObservationVector, Session
from ilab_memory.services.observations import observation_delete, observation_save
from ilab_memory.services.sessions import session_end
from tests.admin.pages import (
    OBSERVATIONS,
    SESSIONS,
    listed,
    observation_form,
    observation_url,
    session_url,
    staff_client,
)
from tests.admin.test_console import WORDS_ONLY, grow, user_url


def export_url(user_id, **params):
    url = reverse("admin:ilab_memory_user_export", args=[user_id])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def forget_url(user_id, **params):
    url = reverse("admin:ilab_memory_user_forget", args=[user_id])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


@pytest.fixture
def scoped(db):
    """Alice writes in the shared space and as two agents, "coder" (two sessions) and "writer";
    Bob as "coder" too."""
    rows = {
        "shared": observation_save(user_id="alice", title="Alice likes tea", content="Green tea.").observation,
        "coder": observation_save(user_id="alice", title="Coder uses tabs", content="Tabs.", scope="coder").observation,
        "writer": observation_save(user_id="alice", title="Writer drafts", content="Drafts.",
                                   scope="writer").observation,
        "bob": observation_save(user_id="bob", title="Bob's code", content="Spaces.", scope="coder").observation,
    }
    session_end(user_id="alice", scope="coder")
    rows["coder2"] = observation_save(user_id="alice", title="Coder again", content="More tabs.",
                                      scope="coder").observation
    return rows


def titles(response) -> set:
    assert response.status_code == 200, response.status_code
    return {row.title for row in response.context["cl"].result_list}


def scopes_listed(response) -> set:
    assert response.status_code == 200, response.status_code
    return {row.scope for row in response.context["cl"].result_list}


def filter_choices(response) -> list[str]:
    (spec,) = [s for s in response.context["cl"].filter_specs if getattr(s, "parameter_name", None) == "scope"]
    return [str(label) for _, label in spec.lookup_choices]


# -- The lists -------------------------------------------------------------------------------


def test_both_lists_show_each_rows_scope_the_shared_space_by_a_label(admin_client, scoped):
    for url in (SESSIONS, OBSERVATIONS):
        body = admin_client.get(url).content.decode()
        assert "column-scope_label" in body
        assert '<code class="ilab-scope" title="coder">coder</code>' in body
        assert '<span class="ilab-scope ilab-scope--shared">(shared)</span>' in body


def test_scope_filter_keeps_one_scope_or_the_shared_space(admin_client, scoped):
    assert titles(admin_client.get(OBSERVATIONS, {"scope": "coder"})) == {
        "Coder uses tabs", "Coder again", "Bob's code"}
    assert titles(admin_client.get(OBSERVATIONS, {"scope": "-"})) == {"Alice likes tea"}
    assert titles(admin_client.get(OBSERVATIONS, {"scope": "coder", "user_id": "alice"})) == {
        "Coder uses tabs", "Coder again"}
    assert scopes_listed(admin_client.get(SESSIONS, {"scope": "writer"})) == {"writer"}
    assert len(listed(admin_client.get(SESSIONS, {"scope": "coder", "user_id": "alice"}))) == 2
    assert titles(admin_client.get(OBSERVATIONS)) == {o.title for o in scoped.values()}


def test_scope_filter_offers_the_users_scopes_when_the_list_is_filtered_to_a_user(admin_client, scoped):
    assert filter_choices(admin_client.get(OBSERVATIONS, {"user_id": "alice"})) == ["(shared)", "coder", "writer"]
    assert filter_choices(admin_client.get(SESSIONS, {"user_id": "bob"})) == ["(shared)", "coder"]
    # Without a user the choices come from the settings, never from every row of the table.
    assert filter_choices(admin_client.get(OBSERVATIONS)) == ["(shared)"]
    with override_settings(ILAB_MEMORY={**WORDS_ONLY, "SCOPES": ["writer", "coder"],
                                        "ACCOUNT_SCOPES": {"bot": "reviewer"}}):
        assert filter_choices(admin_client.get(OBSERVATIONS)) == ["(shared)", "coder", "reviewer", "writer"]


def test_a_scope_typed_into_the_box_gets_its_own_choice(admin_client, scoped):
    response = admin_client.get(OBSERVATIONS, {"scope": "nobody-writes-here"})
    assert titles(response) == set()
    assert titles(admin_client.get(OBSERVATIONS, {"scope": "*"})) == set()  # an exact scope: none is "*"
    assert filter_choices(response) == ["(shared)", "nobody-writes-here"]
    body = response.content.decode()
    assert 'name="scope" value="nobody-writes-here"' in body and 'placeholder="Exact scope"' in body


def test_the_scope_box_keeps_the_other_filters(admin_client, scoped):
    body = admin_client.get(OBSERVATIONS, {"user_id": "alice", "state": "live"}).content.decode()
    box = body[body.index('class="ilab-scope-filter"'):].split("</form>")[0]
    assert '<input type="hidden" name="user_id" value="alice">' in box
    assert '<input type="hidden" name="state" value="live">' in box


def test_search_matches_an_exact_scope(admin_client, scoped):
    assert titles(admin_client.get(OBSERVATIONS, {"q": "writer"})) == {"Writer drafts"}
    assert scopes_listed(admin_client.get(SESSIONS, {"q": "coder"})) == {"coder"}
    assert titles(admin_client.get(OBSERVATIONS, {"q": "reviewer"})) == set()


@pytest.mark.parametrize("params", [{"scope": "\x00"}, {"scope": "x" * 5000}, {"user_id": "\x00", "scope": "coder"},
                                    {"scope": "Not A Slug!"}])
def test_unusable_scope_parameters_never_give_a_server_error(admin_client, scoped, params):
    for url in (SESSIONS, OBSERVATIONS):
        response = admin_client.get(url, params)
        assert response.status_code in (200, 302)


def test_session_and_observation_pages_show_the_scope(admin_client, scoped):
    session = Session.objects.get(user_id="alice", scope="writer")
    assert '<code class="ilab-scope" title="writer">writer</code>' in admin_client.get(
        session_url(session)).content.decode()
    shared = Observation.objects.get(pk=scoped["shared"].id)
    assert "(shared)" in admin_client.get(observation_url(shared)).content.decode()


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_a_filtered_list_makes_as_many_queries_at_2000_rows_as_at_10(admin_client, db):
    def count():
        counts = []
        for url in (SESSIONS, OBSERVATIONS):
            params = {"user_id": "user0", "scope": "-"}
            admin_client.get(url, params)
            with CaptureQueriesContext(connection) as captured:
                assert admin_client.get(url, params).status_code == 200
            counts.append(len(captured.captured_queries))
        return counts

    grow(10)
    small = count()
    grow(2_000)
    assert count() == small


# -- Edits of a scoped memory go through the services in its scope ------------------------------


def test_an_operator_edits_deletes_and_restores_a_memory_of_any_scope(admin_client, scoped):
    coder = Observation.objects.get(pk=scoped["coder2"].id)
    response = admin_client.post(observation_url(coder), observation_form(coder, content="Tabs, width 4."))
    assert response.status_code == 302
    coder.refresh_from_db()
    assert coder.content == "Tabs, width 4." and coder.revision_count == 2 and coder.scope == "coder"

    admin_client.post(OBSERVATIONS, {"action": "soft_delete_selected", ACTION_CHECKBOX_NAME: [coder.pk]})
    assert Observation.objects.get(pk=coder.pk).deleted_at is not None
    admin_client.post(OBSERVATIONS, {"action": "restore_selected", ACTION_CHECKBOX_NAME: [coder.pk]})
    assert Observation.objects.get(pk=coder.pk).deleted_at is None


def test_a_write_of_the_user_moves_a_memory_to_the_active_session_of_its_scope(admin_client, scoped):
    old = Observation.objects.get(pk=scoped["coder"].id)  # in coder's first session, now closed
    admin_client.post(observation_url(old), observation_form(old, content="Tabs!", edit_kind="user_write"))
    old.refresh_from_db()
    assert old.session_id == Session.objects.get(user_id="alice", scope="coder", status="active").pk


# -- A user's page ---------------------------------------------------------------------------------


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_user_page_lists_each_scope_with_its_sessions_and_live_memories(admin_client, scoped):
    observation_delete(user_id="alice", observation_id=scoped["writer"].id, scope="writer")
    response = admin_client.get(user_url("alice"))
    rows = [(s["row"].scope, s["row"].sessions, s["row"].active_sessions, s["row"].memories)
            for s in response.context["scopes"]]
    assert rows == [("", 1, 1, 1), ("coder", 2, 1, 2), ("writer", 1, 1, 0)]
    stats = response.context["stats"]  # every scope, as before scopes
    assert (stats.sessions, stats.observations, stats.deleted_observations) == (4, 3, 1)
    body = response.content.decode()
    card = body[body.index('id="ilab-user-scopes"'):].split("</section>")[0]
    assert f'href="{OBSERVATIONS}?user_id=alice&amp;scope=coder"' in card
    assert f'href="{SESSIONS}?user_id=alice&amp;scope=-"' in card
    assert f'{export_url("alice", scope="writer")}' in card and forget_url("alice", scope="coder") in card
    assert "Bob" not in body


def test_user_page_links_to_a_scope_only_for_operators_who_may_erase(client, django_user_model, scoped):
    staff_client(client, django_user_model, "view_session", "view_observation")
    body = client.get(user_url("alice")).content.decode()
    assert export_url("alice", scope="coder") in body and forget_url("alice", scope="coder") not in body


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_user_page_search_reads_as_an_agent_of_a_scope_or_every_scope(admin_client, scoped, mem):
    def found(**params):
        response = admin_client.get(user_url("alice", q="tea tabs drafts", **params))
        return [result.title for result, _ in response.context["results"]]

    assert set(found()) == {"Alice likes tea", "Coder uses tabs", "Coder again", "Writer drafts"}
    as_coder = found(scope="coder")
    assert set(as_coder) == {"Alice likes tea", "Coder uses tabs", "Coder again"}
    assert as_coder == [m.title for m in mem.mem_search("alice", "tea tabs drafts", scope="coder")]
    assert found(scope="") == ["Alice likes tea"]
    response = admin_client.get(user_url("alice", q="tea", scope="Bad Scope"))
    assert response.status_code == 200 and response.context["search_error"].startswith("scope: ")
    why = dict(admin_client.get(user_url("alice", q="tea")).context["results"][0][1])
    assert why["scope"] == "(shared)"
    selected = admin_client.get(user_url("alice", q="tea", scope="coder")).content.decode()
    assert '<option value="coder" selected>coder and the shared space</option>' in selected


def test_user_page_shows_the_scope_of_its_latest_sessions_and_memories(admin_client, scoped):
    body = admin_client.get(user_url("alice")).content.decode()
    for section in ("ilab-user-sessions", "ilab-user-memories"):
        part = body[body.index(f'id="{section}"'):].split("</section>")[0]
        assert '<code class="ilab-scope" title="writer">writer</code>' in part and "(shared)" in part


# -- Export and erasure of one scope -------------------------------------------------------------


def test_export_of_one_scope_from_the_console(admin_client, scoped):
    response = admin_client.get(export_url("alice", scope="coder"))
    assert response.status_code == 200
    assert 'filename="ilab-memory-alice-coder.json"' in response["Content-Disposition"]
    document = json.loads(b"".join(response.streaming_content))
    assert {o["title"] for o in document["observations"]} == {"Coder uses tabs", "Coder again"}
    assert {s["scope"] for s in document["sessions"]} == {"coder"}
    everything = json.loads(b"".join(admin_client.get(export_url("alice")).streaming_content))
    assert {o["scope"] for o in everything["observations"]} == {"", "coder", "writer"}
    assert admin_client.get(export_url("alice", scope="nobody")).status_code == 404


def test_erase_one_scope_from_the_users_page(admin_client, scoped):
    page = admin_client.get(forget_url("alice", scope="coder"))
    assert page.status_code == 200
    body = page.content.decode()
    assert "alice · <code>coder</code>" in body and "other scopes stay" in body
    assert Observation.objects.filter(user_id="alice", scope="coder").count() == 2  # nothing erased yet

    response = admin_client.post(forget_url("alice", scope="coder"), {"confirm_forget": "yes"})
    assert response.status_code == 302 and response["Location"] == user_url("alice")
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}
    assert not Session.objects.filter(user_id="alice", scope="coder").exists()
    assert not ObservationVector.objects.filter(user_id="alice", scope="coder").exists()
    assert Observation.objects.filter(user_id="bob", scope="coder").count() == 1
    deletions = LogEntry.objects.filter(action_flag=DELETION, content_type__model="observation")
    assert {e.object_id for e in deletions} == {scoped["coder"].id, scoped["coder2"].id}
    assert all("scope coder of user alice" in e.change_message for e in deletions)
    assert LogEntry.objects.filter(action_flag=DELETION, content_type__model="session").count() == 2
    messages = [str(m) for m in admin_client.get(user_url("alice")).context["messages"]]
    assert messages == ["Erased 1 scope: 2 sessions, 2 observations, 0 revisions."]


def test_erase_the_shared_space_from_the_users_page(admin_client, scoped):
    admin_client.post(forget_url("alice", scope=""), {"confirm_forget": "yes"})
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"coder", "writer"}


def test_erasing_a_scope_the_user_does_not_have_is_not_found(admin_client, scoped):
    assert admin_client.get(forget_url("alice", scope="nobody")).status_code == 404
    assert admin_client.post(forget_url("bob", scope="writer"), {"confirm_forget": "yes"}).status_code == 404
    assert Observation.objects.filter(user_id="alice", scope="writer").exists()


def test_erasing_a_scope_needs_both_delete_permissions(client, django_user_model, scoped):
    staff_client(client, django_user_model, "view_session", "view_observation", "delete_session")
    assert client.post(forget_url("alice", scope="coder"), {"confirm_forget": "yes"}).status_code == 403
    assert Observation.objects.filter(user_id="alice", scope="coder").count() == 2


def test_the_whole_user_is_still_erased_without_a_scope(admin_client, scoped):
    admin_client.post(forget_url("alice"), {"confirm_forget": "yes"})
    assert not Observation.objects.filter(user_id="alice").exists()
    assert Observation.objects.filter(user_id="bob").exists()


def test_the_session_action_erases_the_selected_sessions_scopes_only(admin_client, scoped):
    coder = Session.objects.filter(user_id="alice", scope="coder").first()
    bob = Session.objects.get(user_id="bob")
    data = {"action": "forget_scopes", ACTION_CHECKBOX_NAME: [str(coder.pk), str(bob.pk)]}
    page = admin_client.post(SESSIONS, data)
    assert page.status_code == 200
    assert page.context["targets"] == [("alice", "coder"), ("bob", "coder")]
    assert Observation.objects.filter(scope="coder").count() == 3

    response = admin_client.post(SESSIONS, {**data, "confirm_forget": "yes"}, follow=True)
    assert not Observation.objects.filter(scope="coder").exists()
    assert not Session.objects.filter(scope="coder").exists()  # both of alice's coder sessions
    assert set(Observation.objects.values_list("user_id", "scope")) == {("alice", ""), ("alice", "writer")}
    assert [str(m) for m in response.context["messages"]] == [
        "Erased 2 scopes: 3 sessions, 3 observations, 0 revisions."]


def test_the_scope_action_is_offered_to_operators_who_may_erase_only(client, django_user_model, admin_client, scoped):
    assert b"forget_scopes" in admin_client.get(SESSIONS).content
    staff_client(client, django_user_model, "view_session", "change_session")
    assert b"forget_scopes" not in client.get(SESSIONS).content


def test_a_scope_the_scopes_setting_no_longer_allows_can_still_be_erased(admin_client, scoped):
    with override_settings(ILAB_MEMORY={**WORDS_ONLY, "SCOPES": ["writer"]}):
        response = admin_client.post(forget_url("alice", scope="coder"), {"confirm_forget": "yes"}, follow=True)
    messages = [str(m) for m in response.context["messages"]]
    assert messages and messages[0].startswith("Erased")
    assert not Observation.objects.filter(user_id="alice", scope="coder").exists()
    assert Observation.objects.filter(user_id="alice", scope="writer").exists()


# -- Spanish -------------------------------------------------------------------------------------


@override_settings(LANGUAGE_CODE="es", ILAB_MEMORY=WORDS_ONLY)
def test_the_scopes_speak_spanish(admin_client, scoped):
    body = admin_client.get(OBSERVATIONS).content.decode()
    assert "(compartido)" in body and "Ámbito" in body
    page = admin_client.get(user_url("alice")).content.decode()
    assert "Ámbitos" in page and "Borrar este ámbito…" in page and "coder y el espacio compartido" in page
    confirm = admin_client.get(forget_url("alice", scope="coder")).content.decode()
    assert "Sí, borrar estos ámbitos" in confirm


def test_a_scope_the_scopes_setting_no_longer_allows_is_exported(admin_client, scoped):
    with override_settings(ILAB_MEMORY={**WORDS_ONLY, "SCOPES": ["writer"]}):
        response = admin_client.get(export_url("alice", scope="coder"))
        document = json.loads(b"".join(response.streaming_content))
    assert response.status_code == 200
    assert {o["scope"] for o in document["observations"]} == {"coder"}
