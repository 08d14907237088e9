"""Memories that expire (``expires_at``, ``ttl``, the ``RETENTION`` setting) through the facade:
gone from every read and every write by id the moment they expire, then erased by the sweep
with everything derived from them (revisions, vector, search index entry), checked in the
database on each engine."""

import os
import secrets
import time
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test import override_settings

from ilab_memory import ILabMemory, signals
from ilab_memory.exceptions import ObservationNotFound, ValidationError
from ilab_memory.models import Observation, ObservationRevision, ObservationVector

from .conftest import START
from .histories import postgresql_dump

MINUTE = timedelta(minutes=1)
# Each kind of expiry: the save's keywords (and the instance's overrides) that make a memory
# expire one minute after it is written.
EXPIRIES = {
    "ttl": ({"ttl": 60}, {}),
    "ttl as a timedelta": ({"ttl": MINUTE}, {}),
    "expires_at": ({"expires_at": START + MINUTE}, {}),
    "RETENTION of its type": ({"type": "conversation"}, {"retention": {"conversation": MINUTE}}),
}


def index_entries(observation_id) -> int:
    """The memory's entries in the full-text index: the FTS5 table's on SQLite; on PostgreSQL the
    tsvector is a column of the row itself."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            token = str(observation_id).replace("-", "")  # SQLite stores a UUID as 32 hex digits
            cursor.execute("SELECT COUNT(*) FROM ilab_memory_search WHERE ilab_memory_search MATCH %s",
                           [f'observation_id : "{token}"'])
        else:
            cursor.execute("SELECT COUNT(*) FROM ilab_memory_observation WHERE id = %s AND search_vector IS NOT NULL",
                           [str(observation_id)])
        return cursor.fetchone()[0]


def traces_of(observation_id) -> dict[str, int]:
    """Every stored thing of one memory, counted in the database."""
    return {
        "row": Observation.objects.filter(pk=observation_id).count(),
        "revisions": ObservationRevision.objects.filter(observation_id=observation_id).count(),
        "vector": ObservationVector.objects.filter(observation_id=observation_id).count(),
        "index": index_entries(observation_id),
    }


def history(mem, *, save: dict, user: str = "alice"):
    """A session with a memory that stays (``kept``) and one that expires in a minute
    (``passing``), revised once so that it has a history; both share the words "Lisbon trip"."""
    kept = mem.mem_save(user, "Lisbon trip dates", "We fly to Lisbon on the 3rd.").observation
    passing = mem.mem_save(user, "Lisbon trip hotel", "Hotel near the river, booked.", topic_key="lisbon-hotel",
                           **save).observation
    kwargs = {"type": save["type"]} if "type" in save else {}
    kwargs.update({k: v for k, v in save.items() if k != "type"})
    passing = mem.mem_save(user, "Lisbon trip hotel", "Hotel near the river, booked and paid.",
                           topic_key="lisbon-hotel", **kwargs).observation
    assert passing.revision_count == 2
    mem.mem_session_end(user, summary="Planned the Lisbon trip.")
    return kept, passing


def reads(mem, user: str, kept, passing) -> dict[str, set[str]]:
    """The ids every read of ``user`` returns."""
    session_id = kept.session_id
    timeline = mem.mem_timeline(user, kept.id)
    everything = {
        "list": {o.id for o in mem.mem_list_observations(user)},
        "search by words": {r.id for r in mem.mem_search(user, "Lisbon trip hotel river")},
        "context": {c.id for c in mem.mem_context(user)},
        "timeline": {o.id for o in [*timeline.before, *timeline.after]},
        "export": {o["id"] for o in mem.mem_export(user)["observations"]},
    }
    counts = {
        "stats": mem.mem_stats(user).observations,
        "session": mem.mem_get_session(user, session_id).observation_count,
        "session list": next(s for s in mem.mem_list_sessions(user) if s.id == session_id).observation_count,
        "session start": mem.mem_session_start(user).sessions_context[0].observation_count,
    }
    return everything, counts


@pytest.mark.parametrize("kind", EXPIRIES)
def test_an_expired_memory_is_absent_from_every_read_at_once(db, clock, kind):
    save, overrides = EXPIRIES[kind]
    mem = ILabMemory(**overrides)
    kept, passing = history(mem, save=save)
    seen, counts = reads(mem, "alice", kept, passing)
    assert all(passing.id in ids for ids in seen.values()), seen  # the checks can see it
    assert counts == {"stats": 2, "session": 2, "session list": 2, "session start": 2}
    assert mem.mem_get_observation("alice", passing.id).title == "Lisbon trip hotel"

    clock.shift(MINUTE)  # exactly at its expiry: gone

    seen, counts = reads(mem, "alice", kept, passing)
    assert all(passing.id not in ids for ids in seen.values()), seen
    assert all(kept.id in ids for name, ids in seen.items() if name != "timeline"), seen
    assert counts == {"stats": 1, "session": 1, "session list": 1, "session start": 1}
    assert mem.mem_stats("alice").observations_by_scope == {"": 1}
    for read in (mem.mem_get_observation, mem.mem_revisions, mem.mem_timeline):
        with pytest.raises(ObservationNotFound):
            read("alice", passing.id)
    assert traces_of(passing.id)["row"] == 1  # invisible before the sweep, not yet erased


@pytest.mark.parametrize("kind", EXPIRIES)
def test_a_write_by_id_finds_nothing_once_expired(db, clock, kind):
    save, overrides = EXPIRIES[kind]
    mem = ILabMemory(**overrides)
    _, passing = history(mem, save=save)
    clock.shift(MINUTE)
    for write in (
        lambda: mem.mem_update("alice", passing.id, content="Changed."),
        lambda: mem.mem_update("alice", passing.id, expires_at=None),  # no reviving by clearing it
        lambda: mem.mem_update("alice", passing.id, ttl=3600, scope="*"),
        lambda: mem.mem_delete("alice", passing.id),
        lambda: mem.mem_delete("alice", passing.id, hard=True),
    ):
        with pytest.raises(ObservationNotFound):
            write()
    row = Observation.objects.get(pk=passing.id)
    assert row.content == "Hotel near the river, booked and paid." and row.deleted_at is None


def test_a_soft_deleted_memory_that_expired_cannot_be_restored(mem, clock):
    from ilab_memory.services.observations import observation_restore

    passing = mem.mem_save("alice", "Gate", "B12.", ttl=60).observation
    kept = mem.mem_save("alice", "Seat", "14A.").observation
    for observation in (passing, kept):
        mem.mem_delete("alice", observation.id)
    clock.shift(MINUTE)
    assert observation_restore(user_id="alice", observation_id=kept.id).deleted_at is None
    with pytest.raises(ObservationNotFound):
        observation_restore(user_id="alice", observation_id=passing.id)


def test_an_expired_memory_is_not_found_by_meaning(db, clock):
    mem = ILabMemory()  # the site's embedder: the offline multilingual model
    kept = mem.mem_save("alice", "Prefers 'Ali'", "Alice asked to be called Ali, never Alice.").observation
    passing = mem.mem_save("alice", "Nickname at work", "Colleagues call her Lisa.", ttl=60).observation
    query = "what name does she go by"
    before = mem.mem_search("alice", query)
    assert passing.id in {r.id for r in before}
    assert all(r.score.breakdown["cosine"] is not None for r in before)  # found through the vectors
    clock.shift(MINUTE)
    after = mem.mem_search("alice", query)
    assert {r.id for r in after} <= {kept.id}  # the expired one is gone; the other one's standing alone decides


def test_another_users_memories_never_expire_with_yours_and_never_show(db, clock):
    mem = ILabMemory()
    _, alices = history(mem, save={"ttl": 60})
    bobs = mem.mem_save("bob", "Lisbon trip hotel", "Bob's hotel.", ttl=3600).observation
    clock.shift(MINUTE)
    assert [r.id for r in mem.mem_search("bob", "Lisbon trip hotel")] == [bobs.id]
    assert mem.mem_erase_expired() == 1
    assert traces_of(alices.id) == {"row": 0, "revisions": 0, "vector": 0, "index": 0}
    assert traces_of(bobs.id)["row"] == traces_of(bobs.id)["index"] == 1
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("alice", bobs.id)


def test_a_new_save_takes_an_expired_memorys_topic_key(mem, clock):
    first = mem.mem_save("alice", "Hotel", "By the river.", topic_key="hotel", ttl=60).observation
    clock.shift(MINUTE)
    second = mem.mem_save("alice", "Hotel", "By the castle.", topic_key="hotel")
    assert second.action == "created" and second.observation.id != first.id
    assert second.observation.revision_count == 1 and second.observation.expires_at is None
    # The expired holder is set aside (soft-deleted), not erased by the write: the sweep erases it.
    assert Observation.objects.get(pk=first.id).deleted_at == START + MINUTE
    assert [o.id for o in mem.mem_list_observations("alice", topic_key="hotel")] == [second.observation.id]
    assert mem.mem_erase_expired() == 1
    assert traces_of(first.id) == {"row": 0, "revisions": 0, "vector": 0, "index": 0}
    assert traces_of(second.observation.id)["row"] == 1


def test_an_update_may_take_an_expired_memorys_topic_key(mem, clock):
    holder = mem.mem_save("alice", "Hotel", "By the river.", topic_key="hotel", ttl=60).observation
    other = mem.mem_save("alice", "Flights", "Lisbon on the 3rd.").observation
    clock.shift(MINUTE)
    assert mem.mem_update("alice", other.id, topic_key="hotel").topic_key == "hotel"
    assert Observation.objects.get(pk=holder.id).deleted_at is not None  # set aside; the sweep erases it
    assert mem.mem_erase_expired() == 1 and traces_of(holder.id)["row"] == 0


def test_an_expired_holder_set_aside_stays_expired_to_a_restore(mem, clock):
    first = mem.mem_save("alice", "Hotel", "By the river.", topic_key="hotel", ttl=60).observation
    clock.shift(MINUTE)
    mem.mem_save("alice", "Hotel", "By the castle.", topic_key="hotel")
    from ilab_memory.services.observations import observation_restore

    with pytest.raises(ObservationNotFound):
        observation_restore(user_id="alice", observation_id=first.id)


def test_a_duplicate_never_revives_an_expired_twin(mem, clock):
    first = mem.mem_save("alice", "Gate B12", "Boarding at gate B12.", ttl=60).observation
    clock.shift(MINUTE)  # well inside the dedupe window, but expired
    again = mem.mem_save("alice", "Gate B12", "Boarding at gate B12.")
    assert again.action == "created" and again.observation.id != first.id
    assert again.observation.duplicate_count == 1
    assert Observation.objects.get(pk=first.id).duplicate_count == 1
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("alice", first.id)


def test_a_duplicate_of_a_live_twin_keeps_its_expiry(mem, clock):
    first = mem.mem_save("alice", "Gate B12", "Boarding at gate B12.", ttl=60).observation
    again = mem.mem_save("alice", "Gate B12", "Boarding at gate B12.", ttl=3600)
    assert again.action == "duplicate" and again.observation.expires_at == first.expires_at


def test_changing_retention_takes_effect_at_once_both_ways(mem, clock):
    chat = mem.mem_save("alice", "Chat", "We talked about Lisbon.", type="conversation").observation
    decision = mem.mem_save("alice", "Decision", "We go to Lisbon.", type="decision").observation
    clock.shift(timedelta(days=91))
    assert {o.id for o in mem.mem_list_observations("alice")} == {chat.id, decision.id}
    with override_settings(ILAB_MEMORY={"RETENTION": {"conversation": timedelta(days=90)}}):
        assert {o.id for o in ILabMemory().mem_list_observations("alice")} == {decision.id}
        assert ILabMemory().mem_stats("alice").observations_by_type == {"decision": 1}
    # A longer retention brings back a memory that was not erased yet: nothing happened to it.
    with override_settings(ILAB_MEMORY={"RETENTION": {"conversation": timedelta(days=92)}}):
        assert {o.id for o in ILabMemory().mem_list_observations("alice")} == {chat.id, decision.id}
        assert ILabMemory().mem_erase_expired() == 0


def test_retention_counts_from_the_last_write(db, clock):
    mem = ILabMemory(retention={"conversation": timedelta(days=90)})
    chat = mem.mem_save("alice", "Chat", "We talked about Lisbon.", type="conversation").observation
    clock.shift(timedelta(days=60))
    mem.mem_update("alice", chat.id, content="We talked about Lisbon and Porto.")
    clock.shift(timedelta(days=60))
    assert mem.mem_get_observation("alice", chat.id).content == "We talked about Lisbon and Porto."
    clock.shift(timedelta(days=30))
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("alice", chat.id)


def test_expires_at_and_ttl_on_update_and_clearing_it(mem, clock):
    saved = mem.mem_save("alice", "Trip", "Lisbon.", ttl=60).observation
    assert saved.expires_at == (START + MINUTE).isoformat()
    kept = mem.mem_update("alice", saved.id, expires_at=None)
    assert kept.expires_at is None
    clock.shift(timedelta(days=365))
    assert mem.mem_get_observation("alice", saved.id).expires_at is None
    later = mem.mem_update("alice", saved.id, ttl=timedelta(hours=2))
    assert later.expires_at == (START + timedelta(days=365, hours=2)).isoformat()


@pytest.mark.parametrize("given, field, code", [
    ({"ttl": 0}, "ttl", "min_value"),
    ({"ttl": -5}, "ttl", "min_value"),
    ({"ttl": 101 * 366 * 86400}, "ttl", "max_value"),
    ({"ttl": "an hour"}, "ttl", "invalid_type"),
    ({"ttl": float("nan")}, "ttl", "invalid_type"),
    ({"ttl": True}, "ttl", "invalid_type"),
    ({"expires_at": START - MINUTE}, "expires_at", "in_the_past"),
    ({"expires_at": START}, "expires_at", "in_the_past"),
    ({"expires_at": "2026-02-01T00:00:00"}, "expires_at", "naive_datetime"),
    ({"expires_at": START + MINUTE, "ttl": 60}, "ttl", "conflict"),
])
def test_a_bad_expiry_is_refused_naming_the_field_and_nothing_is_stored(mem, clock, given, field, code):
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", "Trip", "Lisbon.", **given)
    assert error.value.field == field and error.value.code == code
    assert not Observation.objects.exists()


# -- the sweep ------------------------------------------------------------------------------


def test_the_sweep_erases_the_row_revisions_vector_and_index_entry(db, clock):
    mem = ILabMemory()
    kept, passing = history(mem, save={"ttl": 60})
    mem.mem_search("alice", "Lisbon trip")  # both get a vector of the model
    assert traces_of(passing.id) == {"row": 1, "revisions": 1, "vector": 1, "index": 1}
    assert mem.mem_erase_expired() == 0  # nothing expired yet
    clock.shift(MINUTE)
    assert mem.mem_erase_expired() == 1
    assert traces_of(passing.id) == {"row": 0, "revisions": 0, "vector": 0, "index": 0}
    assert traces_of(kept.id) == {"row": 1, "revisions": 0, "vector": 1, "index": 1}
    assert mem.mem_erase_expired() == 0  # running it again is a no-op


def test_the_sweep_erases_soft_deleted_memories_that_expired_and_keeps_the_rest(db, clock):
    mem = ILabMemory(retention={"conversation": timedelta(days=30)})
    deleted_passing = mem.mem_save("alice", "Old chat", "About Lisbon.", type="conversation").observation
    deleted_kept = mem.mem_save("alice", "Old note", "About Porto.").observation
    for observation in (deleted_passing, deleted_kept):
        mem.mem_delete("alice", observation.id)
    clock.shift(timedelta(days=30))
    assert mem.mem_erase_expired() == 1
    assert traces_of(deleted_passing.id)["row"] == 0
    assert Observation.objects.get(pk=deleted_kept.id).deleted_at is not None


def test_the_sweep_erases_every_batch_of_every_kind_of_expiry(db, clock):
    """Each kind is walked along its own index in batches; a stopped clock makes every row of a
    kind tie on its column, which a batch must not take for the next one's start."""
    from ilab_memory.services import expiry

    mem = ILabMemory(retention={"conversation": MINUTE, "chat": MINUTE})
    ids = [mem.mem_save(f"user-{n % 3}", f"Note {n}", f"Body {n}.", ttl=60).observation.id for n in range(7)]
    ids += [mem.mem_save("alice", f"Chat {n}", f"Body {n}.", type=("conversation", "chat")[n % 2]).observation.id
            for n in range(5)]
    kept = mem.mem_save("alice", "Decision", "Kept.", type="decision").observation.id
    clock.shift(MINUTE)
    progress = []
    assert expiry.observations_erase_expired(config=mem._config(), batch_size=3, progress=progress.append) == 12
    assert progress == [3, 6, 7, 9, 12]  # 7 by expires_at in 3 batches; then 2 chats, 3 conversations
    assert not Observation.objects.filter(pk__in=ids).exists()
    assert list(Observation.objects.values_list("pk", flat=True)) == [uuid.UUID(kept)]


def test_the_signal_names_each_users_erased_memories_after_commit(tmem, clock):
    got = []

    def receiver(sender, **kwargs):
        got.append((sender, kwargs))

    alice = tmem.mem_save("alice", "Gate", "B12.", ttl=60).observation
    bob = tmem.mem_save("bob", "Gate", "C3.", ttl=60).observation
    tmem.mem_save("bob", "Seat", "14A.")
    clock.shift(MINUTE)
    signals.observations_expired.connect(receiver)
    try:
        with transaction.atomic():
            assert tmem.mem_erase_expired() == 2
            assert got == []  # not before the erasure commits
        assert sorted((kw["user_id"], kw["observation_ids"], kw["using"]) for _, kw in got) == [
            ("alice", [alice.id], "default"), ("bob", [bob.id], "default")]
        assert {sender for sender, _ in got} == {Observation}
        got.clear()
        with transaction.atomic():
            tmem.mem_save("carol", "Gate", "A1.", expires_at=START + 2 * MINUTE)
        clock.shift(2 * MINUTE)
        with pytest.raises(RuntimeError), transaction.atomic():
            tmem.mem_erase_expired()
            raise RuntimeError("rolled back")
        assert got == []  # a rolled-back sweep sends nothing
        assert Observation.objects.filter(user_id="carol").count() == 1
    finally:
        signals.observations_expired.disconnect(receiver)


def test_the_command_erases_expired_memories(db, clock, capsys):
    mem = ILabMemory()
    _, passing = history(mem, save={"ttl": 60})
    clock.shift(MINUTE)
    call_command("ilab_memory_erase_expired")
    assert "Erased 1 expired memory(ies)." in capsys.readouterr().out
    assert traces_of(passing.id) == {"row": 0, "revisions": 0, "vector": 0, "index": 0}


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads the SQLite file itself")
def test_an_erased_memory_is_in_no_byte_of_the_sqlite_file_or_its_wal(tmem):
    marker = f"Zq{secrets.token_hex(8)}"
    kept = tmem.mem_save("alice", "Lisbon", "We fly on the 3rd.").observation
    tmem.mem_save("alice", f"Hotel {marker}", f"Booked {marker} by the river.", ttl=1)
    tmem.mem_search("alice", marker)
    path = connection.settings_dict["NAME"]

    def stored() -> bytes:
        data = b""
        for suffix in ("", "-wal"):
            if os.path.exists(path + suffix):
                with open(path + suffix, "rb") as handle:
                    data += handle.read()
        return data

    assert marker.lower().encode() in stored()  # the check can see it
    time.sleep(1.1)  # a real second: the memory expires
    assert tmem.mem_erase_expired() == 1
    after = stored()
    assert marker.encode() not in after and marker.lower().encode() not in after
    assert [r.id for r in tmem.mem_search("alice", "Lisbon")] == [kept.id]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="dumps PostgreSQL tables")
def test_an_erased_memory_is_in_no_row_of_any_postgresql_table(tmem):
    marker = f"Zq{secrets.token_hex(8)}"
    tmem.mem_save("alice", f"Hotel {marker}", f"Booked {marker} by the river.", ttl=1)
    tmem.mem_search("alice", marker)
    assert marker.lower() in postgresql_dump()  # the check can see it
    time.sleep(1.1)
    assert tmem.mem_erase_expired() == 1
    assert marker.lower() not in postgresql_dump().lower()


# -- the setting ----------------------------------------------------------------------------


@pytest.mark.parametrize("retention, problem", [
    ({"conversation": 90}, "RETENTION must map type slugs to positive datetime.timedelta values"),
    ({"conversation": timedelta(0)}, "RETENTION must map type slugs to positive datetime.timedelta values"),
    ({"Not A Slug": timedelta(days=1)}, "RETENTION must map type slugs to positive datetime.timedelta values"),
    ([("conversation", timedelta(days=1))], "RETENTION must map type slugs to positive datetime.timedelta values"),
])
def test_manage_py_check_reports_a_bad_retention(retention, problem):
    from django.core.management.base import SystemCheckError

    with override_settings(ILAB_MEMORY={"RETENTION": retention}):
        with pytest.raises(SystemCheckError) as error:
            call_command("check")
    assert "ilab_memory.E003" in str(error.value) and problem in str(error.value)


def test_manage_py_check_reports_a_retention_of_a_type_not_allowed():
    from django.core.management.base import SystemCheckError

    settings = {"OBSERVATION_TYPES": ["decision"], "RETENTION": {"conversation": timedelta(days=1)}}
    with override_settings(ILAB_MEMORY=settings):
        with pytest.raises(SystemCheckError) as error:
            call_command("check")
    assert "ilab_memory.E003" in str(error.value) and "OBSERVATION_TYPES does not allow" in str(error.value)


def test_a_good_retention_passes_the_check():
    with override_settings(ILAB_MEMORY={"RETENTION": {"conversation": timedelta(days=90)}}):
        call_command("check")
