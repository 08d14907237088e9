"""The console's own pages (overview, a user's page, export, erasure), the audit trail of every
admin action, the edit choice, and query counts that do not grow with the tables."""

import gettext
import json
import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse
from django.utils import timezone

from ilab_memory.admin import selectors as admin_selectors
from ilab_memory.models import Observation, ObservationVector, Session, SessionStatus
from ilab_memory.services.observations import observation_save
from ilab_memory.services.sessions import session_end, session_start
from tests.admin.pages import (
    OBSERVATIONS,
    SESSIONS,
    observation_url,
    session_url,
    staff_client,
    time_fields,
)
from tests.factories import ObservationFactory, SessionFactory

OVERVIEW = reverse("admin:ilab_memory_overview")
WORDS_ONLY = {**settings.ILAB_MEMORY, "EMBEDDER": None}


def user_url(user_id, **params):
    url = reverse("admin:ilab_memory_user", args=[user_id])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def entries(model, flag=None):
    rows = LogEntry.objects.filter(content_type__model=model._meta.model_name).order_by("pk")
    return list(rows.filter(action_flag=flag) if flag else rows)


# -- The overview --------------------------------------------------------------------------------


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_overview_counts_sessions_per_day_by_kind_types_users_expired_and_backlog(admin_client, db):
    now = timezone.now()
    then = now - timedelta(hours=30)  # one day for all three, and idle for longer than the timeout
    SessionFactory(user_id="ann", completed=True, started_at=then, summary="Memories: x",
                   is_auto_generated=True)
    human = SessionFactory(user_id="ann", completed=True, started_at=then, summary="We talked")
    SessionFactory(user_id="old", completed=True, started_at=now - timedelta(days=90), summary="too old")
    SessionFactory(user_id="idle", started_at=then, last_activity_at=then)
    ObservationFactory.create_batch(3, session=human, type="decision")
    ObservationFactory(session=human, type="pattern")
    ObservationFactory(session=human, type="pattern", deleted_at=now)  # deleted: not counted
    ObservationVector.objects.create(observation=Observation.objects.filter(type="pattern").first(), user_id="ann",
                                     queued_at=now)

    response = admin_client.get(OVERVIEW)
    assert response.status_code == 200
    data = response.context["data"]
    assert len(data.days) == 30
    by_day = {day.day: (day.auto, day.human, day.none) for day in data.days if day.total}
    assert by_day == {then.date(): (1, 1, 1)}
    assert data.memories_by_type == [("decision", 3), ("pattern", 1)]
    assert data.busiest_users == [("ann", 4)]
    assert data.idle_open.value == 1 and not data.idle_open.more
    assert data.embedding_backlog.value == 1
    body = response.content.decode()
    assert body.count('class="ilab-fill--auto"') >= 1 and "ilab-chart--days" in body
    assert user_url("ann") in body  # the busiest users link to their pages


def test_overview_names_the_service_accounts_granted_on_purpose(admin_client, django_user_model, db):
    """The accounts whose tokens may act for any user_id, directly or through a group; the
    operator (a superuser) is not one of them without the grant."""
    from django.contrib.auth.models import Group, Permission

    grant = Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
    direct = django_user_model.objects.create_user("agent-backend")
    direct.user_permissions.add(grant)
    group = Group.objects.create(name="memory backends")
    group.permissions.add(grant)
    django_user_model.objects.create_user("support-bot").groups.add(group)
    django_user_model.objects.create_user("retired-bot", is_active=False).user_permissions.add(grant)
    django_user_model.objects.create_user("plain-agent")
    response = admin_client.get(OVERVIEW)
    assert response.context["service_accounts"] == ["agent-backend", "support-bot"]
    assert '<li><code>agent-backend</code></li><li><code>support-bot</code></li>' in response.content.decode()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
def test_overview_reads_every_table_through_an_index(db):
    """No step of the overview's plan walks a whole table (SQLite: a SCAN without an index)."""
    grow(2_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the plans a database with statistics chooses
    with CaptureQueriesContext(connection) as captured:
        admin_selectors.overview(now=timezone.now(), timeout_hours=24)
    steps = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
            steps += [row[-1] for row in cursor.fetchall()]
    # A SEARCH reads a range of an index; a SCAN reads all of a table or index. The only one
    # allowed is the queue's partial index, which holds only queued rows and is read to a LIMIT.
    walks = [s for s in steps if s.startswith("SCAN ilab_memory_") and not s.endswith("ilab_mem_vec_pending")]
    assert steps and not walks, steps


def test_overview_needs_view_permissions(client, django_user_model, db):
    staff_client(client, django_user_model, "view_session")
    assert client.get(OVERVIEW).status_code == 403


# -- One user's page -----------------------------------------------------------------------------


@pytest.fixture
def two_users(db):
    alice = observation_save(user_id="alice", title="Editor uses tabs", content="Alice prefers tabs.").observation
    bob = observation_save(user_id="bob", title="Editor uses spaces", content="Bob prefers spaces.").observation
    return alice, bob


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_user_page_shows_one_users_memory_only(admin_client, two_users):
    body = admin_client.get(user_url("alice")).content.decode()
    assert "Editor uses tabs" in body and "Editor uses spaces" not in body
    response = admin_client.get(user_url("alice", q="editor"))
    results = [result.title for result, _ in response.context["results"]]
    assert results == ["Editor uses tabs"]
    assert "Bob" not in response.content.decode()


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_user_page_search_is_mem_search_with_its_score_breakdown(admin_client, mem, two_users):
    response = admin_client.get(user_url("alice", q="editor tabs"))
    (result, why), = response.context["results"]
    expected = mem.mem_search("alice", "editor tabs")[0]
    assert result.id == expected.id and result.score.breakdown.keys() == expected.score.breakdown.keys()
    assert result.score.value == pytest.approx(expected.score.value)  # the clock moved between the two
    assert dict(why)["mode"] == "all" and "engine" in dict(why)
    body = response.content.decode()
    assert "ilab-breakdown" in body and "relevance" in body


def test_user_page_search_reports_a_bad_query_instead_of_failing(admin_client, two_users):
    response = admin_client.get(user_url("alice", q="x" * 501))
    assert response.status_code == 200
    assert "500" in response.context["search_error"]


def test_user_page_links_to_the_host_user_when_the_user_id_is_one(admin_client, django_user_model, db):
    host = django_user_model.objects.create_user(username="dana")
    observation_save(user_id=str(host.pk), title="T", content="C")
    body = admin_client.get(user_url(str(host.pk))).content.decode()
    assert reverse("admin:auth_user_change", args=[host.pk]) in body
    observation_save(user_id="not-a-pk", title="T", content="C")
    assert "Site user" not in admin_client.get(user_url("not-a-pk")).content.decode()


def test_user_page_of_a_user_id_with_slashes_and_query_characters(admin_client, db):
    observation_save(user_id="team/alice?x=1&y", title="Odd id", content="c")
    observation_save(user_id="team", title="Other", content="c")
    response = admin_client.get(user_url("team/alice?x=1&y"))
    assert response.status_code == 200 and response.context["user_id"] == "team/alice?x=1&y"
    body = response.content.decode()
    assert "Odd id" in body and "Other" not in body
    assert "?user_id=team%2Falice%3Fx%3D1%26y" in body
    listed = admin_client.get(OBSERVATIONS, {"user_id": "team/alice?x=1&y"})
    assert [o.title for o in listed.context["cl"].result_list] == ["Odd id"]


def test_lists_link_each_user_id_to_its_page(admin_client, two_users):
    assert user_url("alice") in admin_client.get(SESSIONS).content.decode()
    assert user_url("bob") in admin_client.get(OBSERVATIONS).content.decode()


def test_user_export_is_that_users_document_only(admin_client, two_users):
    response = admin_client.get(reverse("admin:ilab_memory_user_export", args=["alice"]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    document = json.loads(b"".join(response.streaming_content))
    assert document["user_id"] == "alice"
    assert [o["title"] for o in document["observations"]] == ["Editor uses tabs"]


def test_user_forget_asks_first_then_erases_and_logs_each_row_without_its_text(admin_client, two_users):
    alice, _ = two_users
    forget = reverse("admin:ilab_memory_user_forget", args=["alice"])
    # An earlier edit left an entry holding the title; the erasure must not leave it behind.
    row = Observation.objects.get(pk=alice.id)
    admin_client.post(observation_url(row), {
        "type": "manual", "title": "Editor uses tabs!", "content": "Alice prefers tabs.", "topic_key": "",
        "metadata": "{}", "edit_kind": "correction", **time_fields("happened_at", row.happened_at),
    })
    assert any("Editor uses tabs" in e.object_repr for e in entries(Observation))
    page = admin_client.get(forget)
    assert page.status_code == 200 and b"cannot be undone" in page.content
    assert Observation.objects.filter(user_id="alice").exists()

    response = admin_client.post(forget, {"confirm_forget": "yes"}, follow=True)
    assert response.status_code == 200
    assert not Observation.objects.filter(user_id="alice").exists()
    assert Observation.objects.filter(user_id="bob").count() == 1
    deletions = entries(Observation, DELETION)
    assert [e.object_id for e in deletions] == [alice.id]
    assert all("Editor uses tabs" not in e.object_repr for e in entries(Observation))
    session_deletions = entries(Session, DELETION)
    assert len(session_deletions) == 1 and "alice" in session_deletions[0].object_repr
    assert "1 observation" in session_deletions[0].change_message


def test_user_forget_needs_both_delete_permissions(client, django_user_model, two_users):
    staff_client(client, django_user_model, "view_session", "view_observation", "delete_session")
    forget = reverse("admin:ilab_memory_user_forget", args=["alice"])
    assert client.post(forget, {"confirm_forget": "yes"}).status_code == 403
    assert Observation.objects.filter(user_id="alice").exists()


# -- Audit: every action leaves an entry per object ----------------------------------------------


def post_action(client, url, action, pks):
    return client.post(url, {"action": action, ACTION_CHECKBOX_NAME: [str(pk) for pk in pks]}, follow=True)


def test_soft_delete_and_restore_log_each_observation_with_the_count(admin_client, db):
    saved = [observation_save(user_id="dana", title=f"Note {i}", content="c").observation for i in range(3)]
    post_action(admin_client, OBSERVATIONS, "soft_delete_selected", [o.id for o in saved])
    logged = entries(Observation, CHANGE)
    assert sorted(e.object_id for e in logged) == sorted(o.id for o in saved)
    assert all(e.user.username == "admin" and "3 observations" in e.change_message for e in logged)
    assert {e.object_repr for e in logged} == {f"[manual] Note {i}" for i in range(3)}

    post_action(admin_client, OBSERVATIONS, "restore_selected", [saved[0].id])
    restored = entries(Observation, CHANGE)[3:]
    assert [e.object_id for e in restored] == [saved[0].id] and "Restored" in restored[0].change_message
    history = admin_client.get(reverse("admin:ilab_memory_observation_history", args=[saved[0].id]))
    assert "Soft-deleted" in history.content.decode() and "Restored" in history.content.decode()


def test_sweep_logs_each_session_it_closed(admin_client, db, clock):
    stale = [session_start(user_id=f"u{i}").session_id for i in range(2)]
    clock.shift(timedelta(hours=25))
    fresh = session_start(user_id="fresh").session_id
    admin_client.post(reverse("admin:ilab_memory_session_close_idle"))
    logged = entries(Session, CHANGE)
    assert sorted(e.object_id for e in logged) == sorted(stale)
    assert fresh not in {e.object_id for e in logged}
    assert all("2 sessions" in e.change_message for e in logged)


def test_forget_action_logs_a_deletion_per_session_and_observation(admin_client, db):
    observation_save(user_id="alice", title="A", content="a")
    session = Session.objects.get(user_id="alice")
    admin_client.post(SESSIONS, {"action": "forget_users", ACTION_CHECKBOX_NAME: [str(session.pk)],
                                 "confirm_forget": "yes"})
    assert [e.object_id for e in entries(Session, DELETION)] == [str(session.pk)]
    assert len(entries(Observation, DELETION)) == 1


# -- The edit choice -----------------------------------------------------------------------------


def edit(client, observation, kind, **changes):
    data = {"type": observation.type, "title": observation.title, "content": observation.content,
            "topic_key": observation.topic_key or "", "metadata": json.dumps(observation.metadata),
            **time_fields("happened_at", observation.happened_at), **time_fields("expires_at", None)}
    data.update(changes)
    if kind is not None:
        data["edit_kind"] = kind
    return client.post(observation_url(observation), data)


@pytest.fixture
def old_memory(db, clock):
    saved = observation_save(user_id="dana", title="Deploy notes", content="Use blue/grene.").observation
    session_end(user_id="dana")
    clock.shift(timedelta(days=3))
    session_start(user_id="dana")
    return Observation.objects.get(pk=saved.id)


def test_edit_form_offers_the_choice_with_correction_preselected(admin_client, old_memory):
    body = admin_client.get(observation_url(old_memory)).content.decode()
    assert 'name="edit_kind" value="correction"' in body and 'value="user_write"' in body
    form = admin_client.get(observation_url(old_memory)).context["adminform"].form
    assert form["edit_kind"].value() == "correction"


@pytest.mark.parametrize("kind", ["correction", None])
def test_a_correction_stays_in_its_session_and_touches_no_session(admin_client, old_memory, kind):
    sessions_before = {s.pk: s.last_activity_at for s in Session.objects.all()}
    response = edit(admin_client, old_memory, kind, content="Use blue/green.")
    assert response.status_code == 302
    old_memory.refresh_from_db()
    assert old_memory.content == "Use blue/green." and old_memory.revision_count == 2
    assert {s.pk: s.last_activity_at for s in Session.objects.all()} == sessions_before
    assert old_memory.session_id in sessions_before and old_memory.session.status == SessionStatus.COMPLETED
    (entry,) = entries(Observation, CHANGE)
    assert "as a correction" in entry.change_message and "Content" in entry.change_message


def test_a_write_of_the_user_moves_it_to_the_active_session(admin_client, old_memory):
    active = Session.objects.get(user_id="dana", status=SessionStatus.ACTIVE)
    edit(admin_client, old_memory, "user_write", content="Use blue/green.")
    old_memory.refresh_from_db()
    assert old_memory.session_id == active.pk
    assert "write of the user" in entries(Observation, CHANGE)[0].change_message


# -- Query counts: the same at 10 rows and at 10,000 ---------------------------------------------


def grow(total: int) -> None:
    """Sessions of ten memories each across ten users over the last 20 days, written in bulk."""
    now = timezone.now()
    have = Observation.objects.count()
    sessions, observations = [], []
    for n in range(have, total):
        at = now - timedelta(days=n % 20, minutes=n)
        if n % 10 == 0 or not sessions:
            auto = n % 20 == 0
            sessions.append(Session(
                user_id=f"user{(n // 10) % 10}", status=SessionStatus.COMPLETED, started_at=at, last_activity_at=at,
                ended_at=at, summary="Memories: x" if auto else "Talked", is_auto_generated=auto,
            ))
        observations.append(Observation(
            id=uuid.uuid4(), user_id=sessions[-1].user_id, session=sessions[-1], type=("decision", "pattern")[n % 2],
            title=f"Note {n}", content=f"Content {n} about the deploy", dedupe_hash=f"{n:064x}", created_at=at,
            updated_at=at, last_seen_at=at, deleted_at=at if n % 50 == 0 else None,
        ))
    Session.objects.bulk_create(sessions, batch_size=500)
    Observation.objects.bulk_create(observations, batch_size=500)
    ObservationVector.objects.bulk_create(
        [ObservationVector(observation=o, user_id=o.user_id, queued_at=now) for o in observations[::7]], batch_size=500
    )


def console_pages():
    session = Session.objects.filter(user_id="user0").order_by("-started_at").first()
    observation = Observation.objects.filter(user_id="user0").order_by("-updated_at").first()
    return [
        ("sessions", SESSIONS, {}),
        ("observations", OBSERVATIONS, {}),
        ("observations of a user", OBSERVATIONS, {"user_id": "user0", "state": "live"}),
        ("overview", OVERVIEW, {}),
        ("user page", user_url("user0"), {}),
        ("user search", user_url("user0"), {"q": "deploy"}),
        ("session page", session_url(session), {}),
        ("observation page", observation_url(observation), {}),
    ]


def count_queries(client) -> dict[str, int]:
    counts = {}
    for name, url, params in console_pages():
        client.get(url, params)  # warm up: the first request of a login may refresh its session row
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url, params).status_code == 200, name
        counts[name] = len(captured.captured_queries)
    return counts


@override_settings(ILAB_MEMORY=WORDS_ONLY)
def test_every_console_page_makes_as_many_queries_at_10k_rows_as_at_10(admin_client, db):
    grow(10)
    small = count_queries(admin_client)
    grow(10_000)
    assert Observation.objects.count() == 10_000
    assert count_queries(admin_client) == small


# -- Translations --------------------------------------------------------------------------------

LOCALE = Path(__file__).resolve().parents[2] / "ilab_memory" / "locale" / "es" / "LC_MESSAGES"


@override_settings(LANGUAGE_CODE="es", ILAB_MEMORY=WORDS_ONLY)
def test_console_and_synthetic_summaries_speak_spanish_and_a_prefix_setting_wins(admin_client, db, clock):
    observation_save(user_id="ana", title="Usa tabuladores", content="Prefiere tabuladores.")
    clock.shift(timedelta(hours=25))
    response = admin_client.post(reverse("admin:ilab_memory_session_close_idle"), follow=True)
    assert "Cerrada 1 sesión inactiva." in [str(m) for m in response.context["messages"]]
    sessions = admin_client.get(SESSIONS).content.decode()
    assert "Última actividad" in sessions and "Memorias registradas: [manual] Usa tabuladores" in sessions
    overview = admin_client.get(OVERVIEW).content.decode()
    assert "Sesiones iniciadas por día" in overview and "Cuentas de servicio" in overview
    form = admin_client.get(observation_url(Observation.objects.get())).content.decode()
    assert "Una corrección" in form and "Clave de tema" in form
    with override_settings(ILAB_MEMORY={**WORDS_ONLY, "AUTO_SUMMARY_PREFIX": "Notas:"}):
        observation_save(user_id="ana", title="Otra", content="x")
        clock.shift(timedelta(hours=25))
        admin_client.post(reverse("admin:ilab_memory_session_close_idle"))
    assert Session.objects.filter(summary__startswith="Notas: [manual] Otra").count() == 1


def test_the_demo_site_follows_the_browsers_language(admin_client, db):
    """The demo site's LocaleMiddleware: Accept-Language picks English or Spanish per request."""
    assert "Sesiones iniciadas por día" in admin_client.get(OVERVIEW, HTTP_ACCEPT_LANGUAGE="es").content.decode()
    english = admin_client.get(OVERVIEW, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Sesiones iniciadas por día" not in english


def test_every_message_of_the_catalog_is_translated_and_compiled():
    po = (LOCALE / "django.po").read_text(encoding="utf-8")
    entries = po.split("\n\n")[1:]
    assert entries and all('msgstr ""\n' not in e + "\n" and 'msgstr[0] ""' not in e for e in entries)
    assert "#, fuzzy" not in po
    with open(LOCALE / "django.mo", "rb") as mo:
        catalog = gettext.GNUTranslations(mo)
    for entry in entries:
        msgid = "".join(re.findall(r'^(?:msgid )?"(.*)"$', entry.split("msgid_plural")[0].split("msgstr")[0],
                                   re.MULTILINE))
        msgid = msgid.encode().decode("unicode_escape").encode("latin-1").decode("utf-8")
        if "msgid_plural" in entry:
            assert catalog.ngettext(msgid, "x", 2) != "x", msgid
        else:
            assert catalog.gettext(msgid) != msgid or msgid in {"Auto", "vector"}, msgid
