"""Time over HTTP: happened_at and expires_at in and out, since/until on every read, time zones
in the query string, and an expired memory gone from every read at once."""

import time as clock
import zoneinfo
from datetime import UTC, datetime, time, timedelta

import pytest
from django.utils import timezone

from ilab_memory.validation import MAX_TTL_SECONDS
from tests.api.conftest import API, read_json

# The memories of the period tests happened on the hour, from 08:00 to 12:00 UTC on this day.
DAY = datetime(2026, 3, 2, tzinfo=UTC)


def save(client, title, content="Content", **body):
    return client.post(API + "observations/", {"title": title, "content": content, **body}, format="json")


def saved(client, title, **body) -> dict:
    response = save(client, title, **body)
    assert response.status_code == 201, response.json()
    return response.json()["observation"]


def at(hour: int) -> datetime:
    return DAY + timedelta(hours=hour)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def refused(response, field: str, code: str) -> dict:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code
    assert list(body["errors"]) == [field]
    return body


# ------------------------------------------------------------------------------------ writes


def test_save_takes_happened_at_with_an_offset_and_answers_it_in_utc(as_alice):
    observation = saved(as_alice, "Moved to Berlin", happened_at="2026-03-01T09:30:00+01:00")
    assert instant(observation["happened_at"]) == datetime(2026, 3, 1, 8, 30, tzinfo=UTC)
    assert observation["happened_at"].endswith("+00:00")
    assert observation["expires_at"] is None


def test_save_takes_a_date_as_its_midnight_in_utc(as_alice):
    observation = saved(as_alice, "A day", happened_at="2026-03-01")
    assert instant(observation["happened_at"]) == datetime(2026, 3, 1, tzinfo=UTC)


def test_happened_at_defaults_to_the_time_of_the_save(as_alice):
    before = timezone.now()
    observation = saved(as_alice, "Now")
    assert before <= instant(observation["happened_at"]) <= timezone.now()


def test_save_with_a_ttl_expires_that_many_seconds_later(as_alice):
    before = timezone.now()
    observation = saved(as_alice, "Trip note", ttl=3600)
    expires = instant(observation["expires_at"])
    assert before + timedelta(hours=1) <= expires <= timezone.now() + timedelta(hours=1)


def test_save_with_expires_at_keeps_it(as_alice):
    moment = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    observation = saved(as_alice, "Until Friday", expires_at=moment.isoformat())
    assert instant(observation["expires_at"]) == moment


def test_every_output_shape_carries_happened_at(as_alice):
    observation = saved(as_alice, "Berlin", content="moved", happened_at="2026-03-01T10:00:00Z")
    pk = observation["id"]
    [listed] = as_alice.get(API + "observations/").json()["results"]
    [found] = as_alice.get(API + "observations/search/?q=berlin").json()
    [ranked] = as_alice.get(API + "context/").json()
    anchor = as_alice.get(API + f"observations/{pk}/timeline/").json()["anchor"]
    for compact in (listed, found, ranked, anchor):
        assert instant(compact["happened_at"]) == datetime(2026, 3, 1, 10, tzinfo=UTC)
    record = as_alice.get(API + f"observations/{pk}/").json()
    assert "expires_at" in record and instant(record["happened_at"]) == datetime(2026, 3, 1, 10, tzinfo=UTC)


def test_update_changes_happened_at_and_the_revision_keeps_the_old_one(as_alice):
    pk = saved(as_alice, "Berlin", happened_at="2026-03-01T10:00:00Z")["id"]
    response = as_alice.patch(API + f"observations/{pk}/", {"happened_at": "2026-02-01T10:00:00-05:00"},
                              format="json")
    assert response.status_code == 200
    assert instant(response.json()["happened_at"]) == datetime(2026, 2, 1, 15, tzinfo=UTC)
    [revision] = as_alice.get(API + f"observations/{pk}/revisions/").json()
    assert instant(revision["happened_at"]) == datetime(2026, 3, 1, 10, tzinfo=UTC)


def test_update_sets_and_clears_the_expiry(as_alice):
    pk = saved(as_alice, "Note")["id"]
    with_ttl = as_alice.patch(API + f"observations/{pk}/", {"ttl": 60}, format="json").json()
    assert instant(with_ttl["expires_at"]) > timezone.now()
    cleared = as_alice.patch(API + f"observations/{pk}/", {"expires_at": None}, format="json").json()
    assert cleared["expires_at"] is None


@pytest.mark.parametrize(
    "body, field, code",
    [
        ({"happened_at": "2026-03-01T09:30:00"}, "happened_at", "naive_datetime"),
        ({"happened_at": "last tuesday"}, "happened_at", "invalid_datetime"),
        ({"happened_at": 1772400000}, "happened_at", "invalid_type"),
        ({"expires_at": "2099-03-01T09:30:00"}, "expires_at", "naive_datetime"),
        ({"expires_at": "2000-01-01T00:00:00Z"}, "expires_at", "in_the_past"),
        ({"ttl": 0}, "ttl", "min_value"),
        ({"ttl": -60}, "ttl", "min_value"),
        ({"ttl": MAX_TTL_SECONDS + 1}, "ttl", "max_value"),
        ({"ttl": 10**30}, "ttl", "max_value"),
        ({"ttl": "60"}, "ttl", "invalid_type"),
        ({"ttl": True}, "ttl", "invalid_type"),
        ({"ttl": 60, "expires_at": "2099-01-01T00:00:00Z"}, "ttl", "conflict"),
    ],
)
def test_save_refuses_bad_times_naming_the_field(as_alice, body, field, code):
    refused(save(as_alice, "Bad", **body), field, code)
    assert as_alice.get(API + "observations/").json()["results"] == []


def test_a_ttl_out_of_bounds_names_its_limit(as_alice):
    assert refused(save(as_alice, "Bad", ttl=0), "ttl", "min_value")["limit"] == 1
    assert refused(save(as_alice, "Bad", ttl=MAX_TTL_SECONDS + 1), "ttl", "max_value")["limit"] == MAX_TTL_SECONDS


@pytest.mark.parametrize(
    "body, field, code",
    [
        ({"happened_at": "2026-03-01T09:30:00"}, "happened_at", "naive_datetime"),
        ({"happened_at": None}, "happened_at", "null"),
        ({"expires_at": "2026-03-01 09:30"}, "expires_at", "naive_datetime"),
        ({"ttl": 0}, "ttl", "min_value"),
        ({"ttl": -1}, "ttl", "min_value"),
        ({"ttl": MAX_TTL_SECONDS * 2}, "ttl", "max_value"),
    ],
)
def test_update_refuses_bad_times_naming_the_field(as_alice, body, field, code):
    pk = saved(as_alice, "Note", happened_at="2026-03-01T10:00:00Z")["id"]
    refused(as_alice.patch(API + f"observations/{pk}/", body, format="json"), field, code)
    record = as_alice.get(API + f"observations/{pk}/").json()
    assert (record["happened_at"], record["expires_at"], record["revision_count"]) == (
        "2026-03-01T10:00:00+00:00", None, 1)


# ------------------------------------------------------------------------------ since / until

READS = ["observations/", "observations/search/", "context/"]


def titles(client, read: str, **params) -> list[str]:
    if read == "observations/search/":
        params.setdefault("q", "standup")
    response = client.get(API + read, params)
    assert response.status_code == 200, response.json()
    body = response.json()
    return sorted(item["title"] for item in (body["results"] if read == "observations/" else body))


@pytest.fixture
def hours(as_alice):
    """Alice's standups at 08:00, 09:00, 10:00, 11:00 and 12:00 UTC on DAY."""
    for hour in range(8, 13):
        saved(as_alice, f"{hour:02d}h", content="standup notes", happened_at=at(hour).isoformat())


@pytest.mark.parametrize("read", READS)
def test_since_is_inclusive_and_until_exclusive(as_alice, hours, read):
    assert titles(as_alice, read, since=at(9).isoformat(), until=at(11).isoformat()) == ["09h", "10h"]
    assert titles(as_alice, read, since=at(11).isoformat()) == ["11h", "12h"]
    assert titles(as_alice, read, until=at(9).isoformat()) == ["08h"]


@pytest.mark.parametrize("read", READS)
def test_offsets_and_z_in_the_query_string_name_the_same_instant(as_alice, hours, read):
    # 10:00+01:00 is 09:00 UTC; 12:00+01:00 is 11:00 UTC.
    assert titles(as_alice, read, since="2026-03-02T10:00:00+01:00", until="2026-03-02T12:00:00+01:00") == [
        "09h", "10h"]
    assert titles(as_alice, read, since="2026-03-02T09:00:00Z", until="2026-03-02T11:00:00Z") == ["09h", "10h"]
    assert titles(as_alice, read, since="2026-03-02T04:00:00-05:00") == ["09h", "10h", "11h", "12h"]


@pytest.mark.parametrize("read", READS)
def test_an_offset_with_its_plus_unescaped_is_read_as_sent(as_alice, hours, read):
    # A "+" left raw in a URL arrives as a space; the API puts it back rather than misread the time.
    query = "q=standup&" if read == "observations/search/" else ""
    response = as_alice.get(API + read + f"?{query}since=2026-03-02T12:00:00+01:00")
    body = response.json()
    assert sorted(item["title"] for item in (body["results"] if read == "observations/" else body)) == [
        "11h", "12h"]


@pytest.mark.parametrize("read", READS)
def test_a_date_is_its_midnight_utc(as_alice, hours, read):
    saved(as_alice, "day before", content="standup notes", happened_at="2026-03-01T23:59:59Z")
    assert titles(as_alice, read, since="2026-03-02", until="2026-03-03") == ["08h", "09h", "10h", "11h", "12h"]
    assert titles(as_alice, read, until="2026-03-02") == ["day before"]


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize(
    "params, field, code",
    [
        ({"since": "2026-03-02T09:00:00"}, "since", "naive_datetime"),
        ({"until": "2026-03-02 09:00"}, "until", "naive_datetime"),
        ({"since": "yesterday"}, "since", "invalid_datetime"),
        ({"since": ""}, "since", "invalid_datetime"),
        ({"since": "2026-03-02T10:00:00Z", "until": "2026-03-02T10:00:00Z"}, "until", "empty_period"),
        ({"since": "2026-03-02T10:00:00Z", "until": "2026-03-02T09:00:00Z"}, "until", "empty_period"),
    ],
)
def test_a_bad_period_is_400_naming_the_parameter(as_alice, read, params, field, code):
    if read == "observations/search/":
        params = {"q": "standup", **params}
    refused(as_alice.get(API + read, params), field, code)


@pytest.mark.parametrize("read", READS)
def test_a_period_never_shows_another_users_memories(as_alice, as_bob, hours, read):
    saved(as_bob, "bob 09h", content="standup notes", happened_at=at(9).isoformat())
    saved(as_bob, "bob 10h", content="standup notes", happened_at=at(10).isoformat())
    assert titles(as_alice, read, since=at(9).isoformat(), until=at(11).isoformat()) == ["09h", "10h"]
    assert titles(as_bob, read, since=at(9).isoformat(), until=at(11).isoformat()) == ["bob 09h", "bob 10h"]
    assert titles(as_bob, read, since=at(11).isoformat()) == []


def test_an_agent_acting_for_a_user_reads_only_that_users_period(as_agent, as_alice, as_bob, alice, hours):
    saved(as_bob, "bob 09h", content="standup notes", happened_at=at(9).isoformat())
    for read in READS:
        assert titles(as_agent, read, user_id=str(alice.pk), since=at(9).isoformat(), until=at(10).isoformat()) == [
            "09h"]


def test_a_period_narrows_the_list_filters_and_keeps_its_pages(as_alice, hours):
    saved(as_alice, "a decision", content="standup notes", type="decision", happened_at=at(9).isoformat())
    params = {"since": at(9).isoformat(), "until": at(12).isoformat()}
    assert titles(as_alice, "observations/", type="decision", **params) == ["a decision"]
    first = as_alice.get(API + "observations/", {**params, "page_size": 2}).json()
    second = as_alice.get(first["next"]).json()
    assert len(first["results"]) == 2 and len(second["results"]) == 2 and second["next"] is None
    shown = {item["title"] for item in first["results"] + second["results"]}
    assert shown == {"09h", "10h", "11h", "a decision"}


def test_a_period_costs_the_list_no_query(as_alice, hours, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):
        response = as_alice.get(API + "observations/", {"since": at(9).isoformat(), "until": at(12).isoformat()})
    assert len(response.json()["results"]) == 3


# --------------------------------------------------------------------------- date phrases


def yesterday_in(zone: zoneinfo.ZoneInfo) -> datetime:
    return datetime.combine(timezone.now().astimezone(zone).date() - timedelta(days=1), time(0), tzinfo=zone)


def test_a_date_phrase_is_read_in_the_requests_time_zone(as_alice):
    saved(as_alice, "Retro", content="the retro went well")
    zone = zoneinfo.ZoneInfo("Pacific/Kiritimati")  # UTC+14: its "yesterday" is seldom UTC's
    before = yesterday_in(zone)
    response = as_alice.get(API + "observations/search/", {"q": "retro yesterday", "time_zone": "Pacific/Kiritimati"})
    after = yesterday_in(zone)  # the request may have run across a midnight there
    [result] = response.json()
    period = result["score"]["breakdown"]["period"]
    assert period["phrase"] == "yesterday"
    assert instant(period["start"]) in (before, after)
    assert instant(period["end"]) - instant(period["start"]) == timedelta(days=1)


def test_a_date_phrase_without_a_time_zone_is_read_in_the_sites(as_alice, settings):
    saved(as_alice, "Retro", content="the retro went well")
    [result] = as_alice.get(API + "observations/search/", {"q": "retro yesterday"}).json()
    start = instant(result["score"]["breakdown"]["period"]["start"])
    assert start.astimezone(zoneinfo.ZoneInfo(settings.TIME_ZONE)).time() == time(0)


@pytest.mark.parametrize("value", ["Mars/Olympus", "", "+01:00"])
def test_an_unknown_time_zone_is_400_naming_it(as_alice, value):
    refused(as_alice.get(API + "observations/search/", {"q": "retro", "time_zone": value}), "time_zone",
            "invalid_time_zone")


# -------------------------------------------------------------------------------- expiry


def test_an_expired_memory_is_gone_from_every_read_at_once(as_alice, as_agent, alice):
    pk = saved(as_alice, "Short-lived", content="standup notes", ttl=1)["id"]
    kept = saved(as_alice, "Kept", content="standup notes")["id"]
    assert as_alice.get(API + f"observations/{pk}/").status_code == 200
    clock.sleep(1.1)  # a real second: the API reads the real clock

    for path in (f"observations/{pk}/", f"observations/{pk}/timeline/", f"observations/{pk}/revisions/"):
        assert as_alice.get(API + path).status_code == 404
    assert titles(as_alice, "observations/") == ["Kept"]
    assert titles(as_alice, "observations/search/") == ["Kept"]
    assert titles(as_alice, "context/") == ["Kept"]
    assert titles(as_agent, "observations/", user_id=str(alice.pk)) == ["Kept"]
    assert as_alice.get(API + "stats/").json()["observations"] == 1
    [session] = as_alice.get(API + "sessions/").json()["results"]
    assert session["observation_count"] == 1
    assert [row["id"] for row in read_json(as_alice.get(API + "export/"))["observations"]] == [kept]
    assert as_alice.patch(API + f"observations/{pk}/", {"title": "again"}, format="json").status_code == 404
    assert as_alice.delete(API + f"observations/{pk}/").status_code == 404
