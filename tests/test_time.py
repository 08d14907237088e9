"""The second clock through the facade: when a memory happened (``happened_at``), and reads kept
to a period (``since`` / ``until``: since inclusive, until exclusive) on search, list and context."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation, ObservationRevision

from .conftest import START

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
APRIL = datetime(2025, 4, 1, tzinfo=UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_happened_at_defaults_to_the_save_time(mem, clock):
    saved = mem.mem_save("alice", "Standup moved", "The standup is at 10 now.").observation
    assert utc(saved.happened_at) == START == utc(saved.created_at)
    assert mem.mem_list_observations("alice")[0].happened_at == saved.happened_at


@pytest.mark.parametrize("given, stored", [
    (datetime(2025, 3, 9, 14, 30, tzinfo=timezone(timedelta(hours=1))), datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
    (date(2025, 3, 9), datetime(2025, 3, 9, tzinfo=UTC)),
    ("2025-03-09", datetime(2025, 3, 9, tzinfo=UTC)),
    ("2025-03-09T14:30:00+01:00", datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
    ("2025-03-09T13:30:00Z", datetime(2025, 3, 9, 13, 30, tzinfo=UTC)),
])
def test_happened_at_given_is_stored_in_utc(mem, clock, given, stored):
    saved = mem.mem_save("alice", "Moved to Berlin", "Alice moved to Berlin.", happened_at=given).observation
    assert utc(saved.happened_at) == stored
    assert Observation.objects.get(pk=saved.id).happened_at == stored
    assert utc(mem.mem_get_observation("alice", saved.id).happened_at) == stored
    assert utc(saved.created_at) == START  # the other clock is untouched


@pytest.mark.parametrize("given, code", [
    (datetime(2025, 3, 9, 14, 30), "naive_datetime"),
    ("2025-03-09T14:30:00", "naive_datetime"),
    ("the ninth of March", "invalid_datetime"),
    (1741525800, "invalid_type"),
])
def test_a_moment_without_an_offset_or_unreadable_is_refused_and_nothing_stored(mem, given, code):
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", "Moved to Berlin", "Alice moved to Berlin.", happened_at=given)
    assert error.value.field == "happened_at" and error.value.code == code
    assert not Observation.objects.exists()


def test_an_update_of_happened_at_keeps_the_old_value_in_the_revision(mem, clock):
    saved = mem.mem_save("alice", "Moved", "Alice moved to Berlin.", happened_at="2025-03-09").observation
    clock.shift(timedelta(hours=1))
    updated = mem.mem_update("alice", saved.id, happened_at="2025-02-20T08:00:00Z")
    assert utc(updated.happened_at) == datetime(2025, 2, 20, 8, tzinfo=UTC)
    [revision] = mem.mem_revisions("alice", saved.id)
    assert utc(revision.happened_at) == datetime(2025, 3, 9, tzinfo=UTC)
    assert ObservationRevision.objects.get().happened_at == datetime(2025, 3, 9, tzinfo=UTC)
    with pytest.raises(ValidationError) as error:
        mem.mem_update("alice", saved.id, happened_at=None)
    assert error.value.field == "happened_at"


@pytest.fixture
def dated(mem, clock):
    """Alice's memories at the edges of March 2025, one in another scope, and Bob's in March."""
    moments = {
        "last of February": MARCH - timedelta(microseconds=1),
        "first of March": MARCH,
        "mid March": datetime(2025, 3, 15, 12, tzinfo=UTC),
        "last of March": APRIL - timedelta(microseconds=1),
        "first of April": APRIL,
    }
    ids = {name: mem.mem_save("alice", f"Lisbon trip {name}", f"Lisbon trip note, {name}.",
                              happened_at=moment).observation.id
           for name, moment in moments.items()}
    ids["coder's March"] = mem.mem_save("alice", "Lisbon trip coder", "Lisbon trip note from the coder.",
                                        happened_at=datetime(2025, 3, 20, tzinfo=UTC), scope="coder").observation.id
    ids["bob's March"] = mem.mem_save("bob", "Lisbon trip bob", "Lisbon trip note of Bob.",
                                      happened_at=datetime(2025, 3, 20, tzinfo=UTC)).observation.id
    return ids


READS = {
    "search": lambda mem, user, **kw: mem.mem_search(user, "Lisbon trip", limit=50, **kw),
    "list": lambda mem, user, **kw: mem.mem_list_observations(user, **kw),
    "context": lambda mem, user, **kw: mem.mem_context(user, limit=50, **kw),
}


@pytest.mark.parametrize("read", READS)
def test_since_is_inclusive_and_until_exclusive_on_every_read(mem, dated, read):
    march = {dated[n] for n in ("first of March", "mid March", "last of March")}
    found = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL)}
    assert found == march
    assert {r.id for r in READS[read](mem, "alice", since=MARCH)} == march | {dated["first of April"]}
    assert {r.id for r in READS[read](mem, "alice", until=MARCH)} == {dated["last of February"]}
    # The same period written as dates and as text with another offset.
    assert {r.id for r in READS[read](mem, "alice", since=date(2025, 3, 1), until="2025-04-01T02:00:00+02:00")} == march


@pytest.mark.parametrize("read", READS)
def test_a_period_keeps_to_the_scopes_read_and_to_the_user(mem, dated, read):
    coder = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL, scope="coder")}
    assert dated["coder's March"] in coder and dated["mid March"] in coder  # the shared space is read too
    assert dated["coder's March"] not in {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL)}
    assert {r.id for r in READS[read](mem, "bob", since=MARCH, until=APRIL)} == {dated["bob's March"]}
    everything = {r.id for r in READS[read](mem, "alice", since=MARCH, until=APRIL, scope="*")}
    assert dated["bob's March"] not in everything and dated["coder's March"] in everything


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("since, until, field, code", [
    (APRIL, MARCH, "until", "empty_period"),
    (MARCH, MARCH, "until", "empty_period"),
    (datetime(2025, 3, 1), None, "since", "naive_datetime"),
    (None, "next week", "until", "invalid_datetime"),
])
def test_a_bad_period_is_refused_naming_the_field(mem, dated, read, since, until, field, code):
    with pytest.raises(ValidationError) as error:
        READS[read](mem, "alice", since=since, until=until)
    assert error.value.field == field and error.value.code == code


def test_a_revision_moves_a_memory_out_of_the_period_at_once(mem, dated):
    mem.mem_update("alice", dated["mid March"], happened_at="2024-12-24")
    found = {r.id for r in mem.mem_list_observations("alice", since=MARCH, until=APRIL)}
    assert dated["mid March"] not in found
    assert dated["mid March"] in {r.id for r in mem.mem_search("alice", "Lisbon", until=MARCH, limit=50)}
