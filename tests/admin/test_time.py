"""Time in the operator console: when a memory happened and when it expires, on the list, the
change page and the edit form (through the service); expired memories left out of every page;
the overview's panel of what expires soon and the RETENTION in force."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse
from django.utils import timezone

from ilab_memory.admin import selectors as admin_selectors
from ilab_memory.conf import get_config
from ilab_memory.models import Observation, ObservationRevision
from ilab_memory.services.observations import observation_delete, observation_save
from tests.admin.pages import OBSERVATIONS, listed, observation_form, observation_url, session_url
from tests.admin.test_console import OVERVIEW, WORDS_ONLY, grow

RETENTION = {**WORDS_ONLY, "RETENTION": {"conversation": timedelta(days=30), "scratch": timedelta(hours=12)}}


def save(title, **kwargs) -> Observation:
    kwargs.setdefault("user_id", "dana")
    return Observation.objects.get(pk=observation_save(title=title, content=f"{title}.", **kwargs).observation.id)


def age(observation, **delta) -> None:
    """Make ``observation``'s last write older by ``delta`` (as if written then)."""
    Observation.objects.filter(pk=observation.pk).update(updated_at=observation.updated_at - timedelta(**delta))


@pytest.fixture
def dated(db):
    """A memory of each kind of expiry, against the RETENTION above."""
    with override_settings(ILAB_MEMORY=RETENTION):
        now = timezone.now()
        rows = {
            "old_fact": save("Moved to Berlin", happened_at=datetime(2025, 3, 10, 8, 30, tzinfo=UTC)),
            "own_soon": save("Trip reminder", expires_at=now + timedelta(days=6)),
            "own_later": save("Visa renewal", expires_at=now + timedelta(days=8)),
            "kept_soon": save("Said in passing", type="conversation"),
            "kept_later": save("Said lately", type="conversation"),
            "own_gone": save("Past reminder", expires_at=now + timedelta(hours=1)),
            "kept_gone": save("Old chat", type="conversation"),
            "deleted_soon": save("Deleted reminder", expires_at=now + timedelta(days=2)),
        }
        age(rows["kept_soon"], days=27)  # its 30 days end in 3
        age(rows["kept_later"], days=20)
        age(rows["kept_gone"], days=31)
        Observation.objects.filter(pk=rows["own_gone"].pk).update(expires_at=now - timedelta(seconds=1))
        observation_delete(user_id="dana", observation_id=rows["deleted_soon"].pk)
        for row in rows.values():
            row.refresh_from_db()
    return rows


def test_the_list_shows_when_each_memory_happened_and_when_it_expires(admin_client, dated):
    with override_settings(ILAB_MEMORY=RETENTION):
        response = admin_client.get(OBSERVATIONS, {"q": "Berlin"})
    body = response.content.decode()
    assert "column-happened" in body
    assert 'datetime="2025-03-10T08:30:00+00:00"' in body

    with override_settings(ILAB_MEMORY=RETENTION):
        cells = {row.pk: row for row in admin_client.get(OBSERVATIONS).context["cl"].result_list}
        model_admin = admin_client.get(OBSERVATIONS).context["cl"].model_admin
        expires = {pk: model_admin.state(row) for pk, row in cells.items()}
    assert dated["own_soon"].expires_at.isoformat() in expires[dated["own_soon"].pk]
    ends = dated["kept_soon"].updated_at + timedelta(days=30)  # its type's retention decides
    assert ends.isoformat() in expires[dated["kept_soon"].pk]
    assert "expires" not in expires[dated["old_fact"].pk]


def test_expired_memories_are_on_no_page_of_the_console(admin_client, dated):
    gone = {dated["own_gone"].pk, dated["kept_gone"].pk}
    with override_settings(ILAB_MEMORY=RETENTION):
        assert listed(admin_client.get(OBSERVATIONS)) == {row.pk for row in dated.values()} - gone
        assert listed(admin_client.get(OBSERVATIONS, {"state": "deleted"})) == {dated["deleted_soon"].pk}
        for row in (dated["own_gone"], dated["kept_gone"]):
            page = admin_client.get(observation_url(row))
            assert page.status_code == 302 and page.url == reverse("admin:index")  # "does not exist"
        session = admin_client.get(session_url(dated["own_gone"].session)).content.decode()
        assert "Past reminder" not in session and "Old chat" not in session and "Trip reminder" in session
    # Without the retention, the chat is back (nothing was erased: the sweep does that).
    assert dated["kept_gone"].pk in listed(admin_client.get(OBSERVATIONS))


def test_the_expires_filter_keeps_what_expires_within_seven_days(admin_client, dated):
    with override_settings(ILAB_MEMORY=RETENTION):
        assert listed(admin_client.get(OBSERVATIONS, {"expires": "soon"})) == {
            dated["own_soon"].pk, dated["kept_soon"].pk}
        assert listed(admin_client.get(OBSERVATIONS, {"expires": "soon", "type": "conversation"})) == {
            dated["kept_soon"].pk}


def test_the_happened_at_filter_keeps_what_happened_in_the_range(admin_client, dated):
    response = admin_client.get(OBSERVATIONS, {"happened_at__gte": "2025-03-01 00:00:00+00:00",
                                                 "happened_at__lt": "2025-04-01 00:00:00+00:00"})
    assert listed(response) == {dated["old_fact"].pk}


def test_an_edit_of_when_it_happened_goes_through_the_service_and_keeps_the_old_time(admin_client, db):
    row = save("Moved to Berlin")
    before = row.happened_at
    response = admin_client.post(observation_url(row), observation_form(
        row, happened_at_0="2025-03-10", happened_at_1="09:30:00"))
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.happened_at == datetime(2025, 3, 10, 9, 30, tzinfo=UTC) and row.revision_count == 2
    assert ObservationRevision.objects.get(observation=row).happened_at == before


def test_an_edit_that_leaves_the_times_alone_changes_no_time(admin_client, db):
    row = save("Deploy notes", ttl=3600)
    admin_client.post(observation_url(row), observation_form(row, content="Use blue/green."))
    after = Observation.objects.get(pk=row.pk)
    assert after.content == "Use blue/green."
    assert (after.happened_at, after.expires_at) == (row.happened_at, row.expires_at)  # to the microsecond


def test_an_expiry_set_cleared_or_refused_in_the_edit_form(admin_client, db):
    row = save("Trip reminder")
    later = (timezone.now() + timedelta(days=5)).replace(microsecond=0)
    admin_client.post(observation_url(row), observation_form(
        row, expires_at_0=later.strftime("%Y-%m-%d"), expires_at_1=later.strftime("%H:%M:%S")))
    row.refresh_from_db()
    assert row.expires_at == later

    response = admin_client.post(observation_url(row), observation_form(
        row, expires_at_0="2001-01-01", expires_at_1="00:00:00"))
    assert response.status_code == 200
    message = response.context["adminform"].form.errors["expires_at"][0]
    assert message == "expires_at: must be in the future."
    assert Observation.objects.get(pk=row.pk).expires_at == later

    admin_client.post(observation_url(row), observation_form(row, expires_at_0="", expires_at_1=""))
    row.refresh_from_db()
    assert row.expires_at is None


def test_the_change_page_says_when_it_expires_and_why(admin_client, dated):
    with override_settings(ILAB_MEMORY=RETENTION):
        kept = admin_client.get(observation_url(dated["kept_soon"])).content.decode()
        own = admin_client.get(observation_url(dated["own_soon"])).content.decode()
        never = admin_client.get(observation_url(dated["old_fact"])).content.decode()
    assert "the retention of its type (30 days from its last write)" in kept
    assert "its own expiry date" in own and "Never by itself." in never
    assert 'name="happened_at_0" value="2025-03-10"' in never


def test_the_overview_counts_what_expires_soon_by_type_and_shows_the_retention(admin_client, dated):
    with override_settings(ILAB_MEMORY=RETENTION):
        response = admin_client.get(OVERVIEW)
    assert response.context["data"].expiring_by_type == [("conversation", 1), ("manual", 1)]
    body = response.content.decode()
    assert 'id="ilab-expiring"' in body and "Expiring in the next 7 days" in body
    assert f'href="{OBSERVATIONS}?expires=soon&amp;type=conversation"' in body
    assert "<code>conversation</code></th><td>30 days</td>" in body and "<td>12 hours</td>" in body

    plain = admin_client.get(OVERVIEW).content.decode()  # no RETENTION: only the own dates
    assert "No RETENTION setting" in plain
    assert admin_client.get(OVERVIEW).context["data"].expiring_by_type == [("manual", 1)]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
def test_what_expires_soon_is_read_through_indexes(db):
    grow(2_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    with override_settings(ILAB_MEMORY=RETENTION), CaptureQueriesContext(connection) as captured:
        admin_selectors.expiring_by_type(get_config(), now=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + captured.captured_queries[-1]["sql"])
        steps = [row[-1] for row in cursor.fetchall()]
    assert steps and not [s for s in steps if s.startswith("SCAN ilab_memory_")], steps
