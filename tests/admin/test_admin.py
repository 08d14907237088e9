"""The operator console, driven through Django's test client on the real database."""

from datetime import timedelta

import pytest
from django.contrib import admin as django_admin
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse

from ilab_memory import admin as memory_admin
from ilab_memory.models import Observation, ObservationRevision, Session, SessionStatus
from ilab_memory.services.observations import observation_delete, observation_save
from ilab_memory.services.sessions import session_start
from tests.factories import ObservationFactory, ObservationRevisionFactory, SessionFactory

SESSIONS = reverse("admin:ilab_memory_session_changelist")
OBSERVATIONS = reverse("admin:ilab_memory_observation_changelist")
CLOSE_IDLE = reverse("admin:ilab_memory_session_close_idle")


def session_url(session):
    return reverse("admin:ilab_memory_session_change", args=[session.pk])


def observation_url(observation):
    return reverse("admin:ilab_memory_observation_change", args=[observation.pk])


def listed(response) -> set:
    assert response.status_code == 200, response.status_code
    return {row.pk for row in response.context["cl"].result_list}


@pytest.fixture
def mix(db):
    """Sessions of every summary kind, each holding observations of different types."""
    auto = SessionFactory(
        user_id="alice", completed=True, summary="Memories: [decision] Use PostgreSQL", is_auto_generated=True
    )
    human = SessionFactory(user_id="bob", completed=True, summary="Talked about the retry pattern")
    blank = SessionFactory(user_id="carol", completed=True, summary="")
    active = SessionFactory(user_id="alice2")
    rows = {
        "auto": auto,
        "human": human,
        "blank": blank,
        "active": active,
        "auto_obs": ObservationFactory(session=auto, type="decision", title="Use PostgreSQL", content="Chosen for prod."),
        "human_obs": ObservationFactory(session=human, type="pattern", title="Retries", content="Exponential backoff."),
        "blank_obs": ObservationFactory(session=blank, type="manual", title="Plain note", content="Nothing special."),
        "active_obs": ObservationFactory(session=active, type="decision", title="Use Redis", content="For the cache."),
    }
    rows["deleted_obs"] = ObservationFactory(session=active, title="Gone", content="x", deleted_at=active.started_at)
    return rows


def staff_client(client, django_user_model, *codenames):
    user = django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="ilab_memory", codename__in=codenames))
    client.force_login(user)
    return client


# -- Session list ----------------------------------------------------------------------------


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


# -- Observation list ------------------------------------------------------------------------


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


# -- Session change page ---------------------------------------------------------------------


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


# -- Close expired sessions ------------------------------------------------------------------


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


# -- Observation change page and actions -----------------------------------------------------


def time_fields(name: str, moment) -> dict:
    """A moment as the change form's split date and time inputs send it (the site's zone is UTC)."""
    if moment is None:
        return {f"{name}_0": "", f"{name}_1": ""}
    return {f"{name}_0": moment.strftime("%Y-%m-%d"), f"{name}_1": moment.strftime("%H:%M:%S")}


def observation_form(observation, **changes):
    data = {
        "type": observation.type,
        "title": observation.title,
        "content": observation.content,
        "topic_key": observation.topic_key or "",
        "metadata": "{}",
        **time_fields("happened_at", observation.happened_at),
        **time_fields("expires_at", observation.expires_at),
        "_save": "Save",
    }
    data.update(changes)
    return data


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


# -- Permissions -----------------------------------------------------------------------------


def test_staff_without_view_permission_sees_nothing(client, django_user_model, mix):
    client = staff_client(client, django_user_model)
    assert client.get(SESSIONS).status_code == 403
    assert client.get(OBSERVATIONS).status_code == 403
    assert client.get(session_url(mix["auto"])).status_code == 403
    assert client.post(CLOSE_IDLE).status_code == 403
    index = client.get(reverse("admin:index")).content.decode()
    assert "/ilab_memory/" not in index


def test_view_only_staff_browses_but_cannot_sweep_edit_or_act(client, django_user_model, mix, clock):
    client = staff_client(client, django_user_model, "view_session", "view_observation")
    response = client.get(SESSIONS)
    assert response.status_code == 200 and "Close idle sessions now" not in response.content.decode()
    assert client.post(CLOSE_IDLE).status_code == 403
    assert 'name="summary"' not in client.get(session_url(mix["human"])).content.decode()
    response = client.post(
        OBSERVATIONS, {"action": "soft_delete_selected", "_selected_action": [mix["auto_obs"].pk]}
    )
    assert Observation.objects.get(pk=mix["auto_obs"].pk).deleted_at is None


# -- Big tables ------------------------------------------------------------------------------


def queries_for(client, url, params=None) -> list[str]:
    client.get(url, params or {})  # warm up: the first request of a login may refresh its session row
    with CaptureQueriesContext(connection) as context:
        assert client.get(url, params or {}).status_code == 200
    return [q["sql"] for q in context.captured_queries]


@pytest.mark.parametrize(
    "url, params",
    [
        (SESSIONS, {}),
        (SESSIONS, {"summary_kind": "auto", "q": "Memories"}),
        (OBSERVATIONS, {}),
        (OBSERVATIONS, {"session_summary_kind": "auto", "state": "live", "q": "Note"}),
    ],
)
def test_changelist_query_count_does_not_grow_with_the_page(admin_client, db, url, params):
    def seed(n):
        for _ in range(n):
            session = SessionFactory(completed=True, summary="Memories: x", is_auto_generated=True)
            ObservationFactory.create_batch(2, session=session, title="Note")
            ObservationRevisionFactory(observation__session=session, observation__title="Note")

    seed(2)
    small = queries_for(admin_client, url, params)
    seed(20)
    big = queries_for(admin_client, url, params)
    assert len(big) == len(small)


def test_changelist_never_counts_the_whole_table_nor_loads_long_text(admin_client, mix):
    for url in (OBSERVATIONS, SESSIONS):
        counts = [sql.upper() for sql in queries_for(admin_client, url) if sql.upper().startswith("SELECT COUNT(")]
        # One capped count (COUNT over a LIMITed subquery), never a full COUNT(*) of the table.
        assert len(counts) == 1 and "LIMIT" in counts[0], counts
    listing = [sql for sql in queries_for(admin_client, OBSERVATIONS) if "ORDER BY" in sql.upper()]
    assert listing and all('."content"' not in sql and '."metadata"' not in sql for sql in listing)


def test_session_change_page_query_count_does_not_grow_with_its_observations(admin_client, db):
    small, big = SessionFactory(), SessionFactory()
    ObservationFactory.create_batch(2, session=small)
    ObservationFactory.create_batch(40, session=big)
    assert len(queries_for(admin_client, session_url(small))) == len(queries_for(admin_client, session_url(big)))


def test_capped_paginator_counts_at_most_its_cap(db):
    SessionFactory.create_batch(5)

    class ThreeAtMost(memory_admin.CappedCountPaginator):
        cap = 3

    assert ThreeAtMost(Session.objects.order_by("pk"), 2).count == 3
    assert memory_admin.CappedCountPaginator(Session.objects.order_by("pk"), 2).count == 5


# -- Registration ----------------------------------------------------------------------------


def test_register_admin_false_leaves_the_site_untouched(db):
    site = django_admin.AdminSite(name="host")
    with override_settings(ILAB_MEMORY={"REGISTER_ADMIN": False}):
        assert memory_admin.register(site) is False
    assert not site.is_registered(Session) and not site.is_registered(Observation)


def test_register_admin_default_registers_both_models(db):
    site = django_admin.AdminSite(name="host")
    assert memory_admin.register(site) is True
    assert site.is_registered(Session) and site.is_registered(Observation)
    assert django_admin.site.is_registered(Session)


def test_change_pages_show_times_as_the_lists_do(admin_client, mix):
    """One date format in the console: ``2026-12-02 18:24`` in lists and on pages alike."""
    import re

    session, observation = mix["human"], mix["human_obs"]
    for url, moment in ((session_url(session), session.started_at), (observation_url(observation), observation.created_at)):
        page = admin_client.get(url).content.decode()
        assert moment.strftime("%Y-%m-%d") in page
        assert not re.search(r"\b(a\.m\.|p\.m\.|midnight|noon)", page), url


def test_the_demo_answers_the_favicon_with_the_consoles_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("ilab_memory/icon.svg")
    from django.contrib.staticfiles import finders

    assert finders.find("ilab_memory/icon.svg")  # served from the app's static files


def test_the_admin_index_links_the_consoles_overview_for_those_who_may_view_it(client, django_user_model, db):
    from django.contrib import admin

    overview = reverse("admin:ilab_memory_overview")
    assert admin.site.index_template == "admin/ilab_memory/index.html"
    viewer = staff_client(client, django_user_model, "view_session", "view_observation")
    index = viewer.get(reverse("admin:index")).content.decode()
    assert f'href="{overview}"' in index and "Memory overview" in index
    assert "app-ilab_memory" in index  # the app list is still there


def test_the_admin_index_has_no_overview_link_for_staff_who_may_not_view_it(client, django_user_model, db):
    index = staff_client(client, django_user_model).get(reverse("admin:index")).content.decode()
    assert reverse("admin:ilab_memory_overview") not in index
