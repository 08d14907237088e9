"""Time through both Python faces (``mem``: the facade, then ``MemoryClient`` over HTTP):
happened_at and expiry on writes, since/until on reads, date phrases read at a moment in a time
zone, and an expired memory gone from every read at once. The same calls, the same answers."""

from __future__ import annotations

import time as clock
import zoneinfo
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ilab_memory.exceptions import ObservationNotFound, ValidationError
from ilab_memory.validation import MAX_TTL_SECONDS

DAY = datetime(2026, 3, 2, tzinfo=UTC)
MADRID = zoneinfo.ZoneInfo("Europe/Madrid")


def at(hour: int) -> datetime:
    return DAY + timedelta(hours=hour)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def refused(call, field: str, code: str) -> ValidationError:
    with pytest.raises(ValidationError) as raised:
        call()
    assert (raised.value.field, raised.value.code) == (field, code)
    return raised.value


@pytest.fixture
def hours(mem):
    """Alice's standups at 08:00 … 12:00 UTC on DAY, and Bob's at 09:00 and 10:00."""
    for hour in range(8, 13):
        mem.mem_save("alice", f"{hour:02d}h", "standup notes", happened_at=at(hour))
    for hour in (9, 10):
        mem.mem_save("bob", f"bob {hour:02d}h", "standup notes", happened_at=at(hour))


def reads(mem, user_id="alice", **period) -> dict[str, list[str]]:
    """The titles each period read returns."""
    return {
        "list": sorted(o.title for o in mem.mem_list_observations(user_id, **period)),
        "search": sorted(o.title for o in mem.mem_search(user_id, "standup", **period)),
        "context": sorted(o.title for o in mem.mem_context(user_id, **period)),
    }


def each(titles: list[str]) -> dict[str, list[str]]:
    return {"list": titles, "search": titles, "context": titles}


# ------------------------------------------------------------------------------------ writes


@pytest.mark.parametrize(
    "happened_at",
    [datetime(2026, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=1))), "2026-03-01T09:30:00+01:00",
     "2026-03-01T08:30:00Z", datetime(2026, 3, 1, 9, 30, tzinfo=MADRID)],
)
def test_happened_at_is_kept_in_utc_whatever_form_it_came_in(mem, happened_at):
    record = mem.mem_save("alice", "Moved", "to Berlin", happened_at=happened_at).observation
    assert record.happened_at == "2026-03-01T08:30:00+00:00"
    assert record.expires_at is None


def test_a_date_happened_at_is_its_midnight_utc(mem):
    assert mem.mem_save("alice", "Day", "a day", happened_at=date(2026, 3, 1)).observation.happened_at == (
        "2026-03-01T00:00:00+00:00")


@pytest.mark.parametrize("ttl", [3600, timedelta(hours=1), 3600.0])
def test_a_ttl_in_seconds_or_as_a_timedelta_sets_expires_at(mem, ttl):
    before = datetime.now(UTC)
    expires = instant(mem.mem_save("alice", "Trip", "note", ttl=ttl).observation.expires_at)
    assert before + timedelta(hours=1) <= expires <= datetime.now(UTC) + timedelta(hours=1)


@pytest.mark.parametrize(
    "kwargs, field, code",
    [
        ({"happened_at": datetime(2026, 3, 1, 9, 30)}, "happened_at", "naive_datetime"),
        ({"happened_at": "2026-03-01T09:30:00"}, "happened_at", "naive_datetime"),
        ({"happened_at": "March"}, "happened_at", "invalid_datetime"),
        ({"happened_at": 1772400000}, "happened_at", "invalid_type"),
        ({"expires_at": datetime(2099, 1, 1)}, "expires_at", "naive_datetime"),
        ({"expires_at": datetime(2000, 1, 1, tzinfo=UTC)}, "expires_at", "in_the_past"),
        ({"ttl": 0}, "ttl", "min_value"),
        ({"ttl": -1}, "ttl", "min_value"),
        ({"ttl": timedelta(0)}, "ttl", "min_value"),
        ({"ttl": MAX_TTL_SECONDS + 1}, "ttl", "max_value"),
        ({"ttl": timedelta(days=365 * 200)}, "ttl", "max_value"),
        ({"ttl": float("inf")}, "ttl", "invalid_type"),
        ({"ttl": "60"}, "ttl", "invalid_type"),
        ({"ttl": True}, "ttl", "invalid_type"),
        ({"ttl": 60, "expires_at": datetime(2099, 1, 1, tzinfo=UTC)}, "ttl", "conflict"),
    ],
)
def test_bad_times_on_save_name_the_field(mem, kwargs, field, code):
    refused(lambda: mem.mem_save("alice", "Bad", "time", **kwargs), field, code)
    assert mem.mem_list_observations("alice") == []


def test_a_ttl_out_of_bounds_names_its_limit(mem):
    assert refused(lambda: mem.mem_save("alice", "Bad", "ttl", ttl=0), "ttl", "min_value").limit == 1
    error = refused(lambda: mem.mem_save("alice", "Bad", "ttl", ttl=MAX_TTL_SECONDS * 2), "ttl", "max_value")
    assert error.limit == MAX_TTL_SECONDS


def test_update_moves_happened_at_and_the_revision_keeps_the_old_one(mem):
    pk = mem.mem_save("alice", "Moved", "to Berlin", happened_at=at(9)).observation.id
    record = mem.mem_update("alice", pk, happened_at=datetime(2026, 2, 1, 10, tzinfo=MADRID))
    assert record.happened_at == "2026-02-01T09:00:00+00:00"
    [revision] = mem.mem_revisions("alice", pk)
    assert instant(revision.happened_at) == at(9)


def test_update_sets_and_clears_the_expiry(mem):
    pk = mem.mem_save("alice", "Note", "short").observation.id
    assert instant(mem.mem_update("alice", pk, ttl=timedelta(minutes=5)).expires_at) > datetime.now(UTC)
    assert mem.mem_update("alice", pk, expires_at=None).expires_at is None
    moment = datetime(2099, 1, 1, tzinfo=UTC)
    assert instant(mem.mem_update("alice", pk, expires_at=moment).expires_at) == moment


@pytest.mark.parametrize(
    "kwargs, field, code",
    [
        ({"happened_at": None}, "happened_at", "null"),
        ({"happened_at": datetime(2026, 3, 1)}, "happened_at", "naive_datetime"),
        ({"ttl": -5}, "ttl", "min_value"),
        ({"ttl": timedelta(days=365 * 200)}, "ttl", "max_value"),
    ],
)
def test_bad_times_on_update_name_the_field_and_change_nothing(mem, kwargs, field, code):
    pk = mem.mem_save("alice", "Note", "kept", happened_at=at(9)).observation.id
    refused(lambda: mem.mem_update("alice", pk, **kwargs), field, code)
    record = mem.mem_get_observation("alice", pk)
    assert (instant(record.happened_at), record.expires_at, record.revision_count) == (at(9), None, 1)


# ------------------------------------------------------------------------------ since / until


def test_since_is_inclusive_and_until_exclusive_on_every_read(mem, hours):
    assert reads(mem, since=at(9), until=at(11)) == each(["09h", "10h"])
    assert reads(mem, since=at(11)) == each(["11h", "12h"])
    assert reads(mem, until=at(9)) == each(["08h"])


def test_a_period_in_any_zone_or_form_is_the_same_instant(mem, hours):
    expected = each(["09h", "10h"])
    assert reads(mem, since=at(9).astimezone(MADRID), until=at(11).astimezone(MADRID)) == expected
    assert reads(mem, since="2026-03-02T10:00:00+01:00", until="2026-03-02T06:00:00-05:00") == expected
    assert reads(mem, since="2026-03-02T09:00:00Z", until="2026-03-02T11:00:00Z") == expected
    assert reads(mem, since=date(2026, 3, 2), until="2026-03-03") == each(["08h", "09h", "10h", "11h", "12h"])


def test_a_period_never_shows_another_users_memories(mem, hours):
    assert reads(mem, since=at(9), until=at(11)) == each(["09h", "10h"])
    assert reads(mem, "bob", since=at(8), until=at(13)) == each(["bob 09h", "bob 10h"])
    assert reads(mem, "bob", since=at(11)) == each([])


@pytest.mark.parametrize(
    "period, field, code",
    [
        ({"since": datetime(2026, 3, 2, 9)}, "since", "naive_datetime"),
        ({"until": "2026-03-02T09:00:00"}, "until", "naive_datetime"),
        ({"since": "yesterday"}, "since", "invalid_datetime"),
        ({"since": 5}, "since", "invalid_type"),
        ({"since": at(10), "until": at(10)}, "until", "empty_period"),
        ({"since": at(10), "until": "2026-03-02T09:00:00Z"}, "until", "empty_period"),
    ],
)
def test_a_bad_period_names_the_argument_on_every_read(mem, period, field, code):
    refused(lambda: mem.mem_list_observations("alice", **period), field, code)
    refused(lambda: mem.mem_search("alice", "standup", **period), field, code)
    refused(lambda: mem.mem_context("alice", **period), field, code)


# ---------------------------------------------------------------------------- date phrases


@pytest.mark.parametrize("zone", ["Europe/Madrid", MADRID])
def test_a_date_phrase_is_read_at_now_in_the_time_zone(mem, zone):
    mem.mem_save("alice", "Retro", "the retro went well", happened_at=datetime(2026, 3, 4, 15, tzinfo=UTC))
    now = datetime(2026, 3, 5, 23, 30, tzinfo=UTC)  # already 6 March in Madrid
    [result] = mem.mem_search("alice", "retro yesterday", time_zone=zone, now=now)
    period = result.score.breakdown["period"]
    assert period["phrase"] == "yesterday"
    assert instant(period["start"]) == datetime(2026, 3, 5, tzinfo=MADRID)
    assert instant(period["end"]) == datetime(2026, 3, 6, tzinfo=MADRID)


@pytest.mark.parametrize(
    "kwargs, field, code",
    [
        ({"time_zone": "Mars/Olympus"}, "time_zone", "invalid_time_zone"),
        ({"time_zone": 5}, "time_zone", "invalid_type"),
        ({"now": datetime(2026, 3, 5)}, "now", "naive_datetime"),
        ({"now": "soon"}, "now", "invalid_datetime"),
    ],
)
def test_a_bad_time_zone_or_now_names_it(mem, kwargs, field, code):
    refused(lambda: mem.mem_search("alice", "retro", **kwargs), field, code)


# -------------------------------------------------------------------------------- expiry


def test_an_expired_memory_is_gone_from_every_read_at_once(mem):
    pk = mem.mem_save("alice", "Short-lived", "standup notes", ttl=1).observation.id
    mem.mem_save("alice", "Kept", "standup notes")
    assert mem.mem_get_observation("alice", pk).title == "Short-lived"
    clock.sleep(1.1)  # a real second: the server and the facade read the real clock
    assert reads(mem) == each(["Kept"])
    for call in (mem.mem_get_observation, mem.mem_revisions, mem.mem_timeline, mem.mem_delete):
        with pytest.raises(ObservationNotFound):
            call("alice", pk)
    with pytest.raises(ObservationNotFound):
        mem.mem_update("alice", pk, title="again")
    assert mem.mem_stats("alice").observations == 1
    assert [o["title"] for o in mem.mem_export("alice")["observations"]] == ["Kept"]


def test_the_client_sends_a_time_zone_by_its_name_only(client_for, accounts, live_db):
    remote = client_for(accounts["agent"])
    remote.mem_save("alice", "Retro", "the retro went well")
    assert remote.mem_search("alice", "retro", time_zone=UTC)  # UTC has a name
    # The facade takes any tzinfo; a fixed offset has no IANA name to travel by.
    refused(lambda: remote.mem_search("alice", "retro", time_zone=timezone(timedelta(hours=1))), "time_zone",
            "invalid_time_zone")
