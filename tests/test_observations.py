"""Observations: save (create / revise / duplicate), update, get, delete, timeline, stats, limits."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from ilab_memory import ILabMemory
from ilab_memory.exceptions import ObservationNotFound, ValidationError
from ilab_memory.models import Observation, ObservationRevision, Session, SessionStatus
from tests import threads

TICK = timedelta(microseconds=1)


def counts():
    return Observation.objects.count(), ObservationRevision.objects.count(), Session.objects.count()


# -- create -------------------------------------------------------------------------------


def test_save_creates_an_observation_with_every_field(mem, clock):
    result = mem.mem_save(
        "alice", "Use UTC", "All timestamps are UTC.", type="decision", topic_key="Time Zones", metadata={"k": [1, "v"]}
    )
    o = result.observation
    assert result.action == "created"
    assert (o.user_id, o.type, o.title, o.content, o.topic_key) == (
        "alice", "decision", "Use UTC", "All timestamps are UTC.", "time-zones"
    )
    assert o.metadata == {"k": [1, "v"]}
    assert (o.revision_count, o.duplicate_count, o.redacted_blocks, o.deleted_at) == (1, 1, 0, None)
    assert o.created_at == o.updated_at == o.last_seen_at == "2026-01-15T09:00:00+00:00"


def test_save_defaults_to_manual_type_and_empty_metadata(mem):
    o = mem.mem_save("alice", "T", "C").observation
    assert o.type == "manual" and o.metadata == {} and o.topic_key is None


def test_save_result_and_record_are_frozen(mem):
    import dataclasses

    result = mem.mem_save("alice", "T", "C")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.action = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.observation.title = "x"


# -- topic_key revise --------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, normalized",
    [("Database Choice", "database-choice"), ("  db\t\n choice ", "db-choice"), ("DB-CHOICE", "db-choice")],
)
def test_topic_key_is_normalized(mem, raw, normalized):
    assert mem.mem_save("alice", "T", "C", topic_key=raw).observation.topic_key == normalized


def test_blank_topic_key_means_none(mem):
    assert mem.mem_save("alice", "T", "C", topic_key="   ").observation.topic_key is None


def test_same_topic_key_revises_in_place_keeping_history(mem, clock):
    first = mem.mem_save("alice", "DB", "Postgres 14", type="decision", topic_key="db", metadata={"v": 1}).observation
    clock.shift(timedelta(hours=1))
    result = mem.mem_save("alice", "DB v2", "Postgres 15", type="architecture", topic_key=" DB ", metadata={"v": 2})
    o = result.observation
    assert result.action == "revised"
    assert o.id == first.id
    assert (o.title, o.content, o.type, o.metadata) == ("DB v2", "Postgres 15", "architecture", {"v": 2})
    assert o.revision_count == 2 and o.updated_at == "2026-01-15T10:00:00+00:00"
    assert o.created_at == first.created_at
    history = mem.mem_revisions("alice", o.id)
    assert [(r.revision, r.title, r.content, r.type, r.metadata) for r in history] == [
        (1, "DB", "Postgres 14", "decision", {"v": 1})
    ]
    assert Observation.objects.count() == 1


def test_topic_keys_are_per_user(mem):
    a = mem.mem_save("alice", "T", "C", topic_key="shared").observation
    b = mem.mem_save("bob", "T", "C", topic_key="shared")
    assert b.action == "created" and b.observation.id != a.id


def test_soft_deleted_topic_is_not_revised(mem):
    a = mem.mem_save("alice", "T", "C", topic_key="k").observation
    mem.mem_delete("alice", a.id)
    result = mem.mem_save("alice", "T2", "C2", topic_key="k")
    assert result.action == "created" and result.observation.id != a.id


def test_revise_moves_observation_to_current_session(mem, clock):
    first = mem.mem_save("alice", "T", "C", topic_key="k").observation
    mem.mem_session_end("alice", summary="s1")
    second = mem.mem_session_start("alice").session_id
    revised = mem.mem_save("alice", "T", "C2", topic_key="k").observation
    assert first.session_id != second and revised.session_id == second


# -- duplicates ----------------------------------------------------------------------------


def test_same_type_title_and_normalized_content_in_window_is_a_duplicate(mem, clock):
    first = mem.mem_save("alice", "Title", "Some   Content\nhere").observation
    clock.shift(timedelta(minutes=5))
    result = mem.mem_save("alice", "Title", "some content HERE  ")
    assert result.action == "duplicate"
    o = result.observation
    assert o.id == first.id and o.duplicate_count == 2
    assert o.content == "Some   Content\nhere"  # text unchanged
    assert o.last_seen_at == "2026-01-15T09:05:00+00:00"
    assert o.updated_at == first.updated_at
    assert Observation.objects.count() == 1


def test_dedupe_window_edge_is_inclusive(mem, clock):
    mem.mem_save("alice", "T", "C")
    clock.shift(timedelta(minutes=15))
    assert mem.mem_save("alice", "T", "C").action == "duplicate"


def test_dedupe_window_measured_from_creation_not_last_seen(mem, clock):
    mem.mem_save("alice", "T", "C")
    clock.shift(timedelta(minutes=10))
    assert mem.mem_save("alice", "T", "C").action == "duplicate"
    clock.shift(timedelta(minutes=5) + TICK)
    assert mem.mem_save("alice", "T", "C").action == "created"


def test_just_outside_dedupe_window_creates(mem, clock):
    mem.mem_save("alice", "T", "C")
    clock.shift(timedelta(minutes=15) + TICK)
    assert mem.mem_save("alice", "T", "C").action == "created"
    assert Observation.objects.count() == 2


@pytest.mark.parametrize(
    "changes",
    [{"type": "decision"}, {"title": "t"}, {"content": "C but different"}],
)
def test_different_type_title_or_content_is_not_a_duplicate(mem, changes):
    mem.mem_save("alice", "T", "C")
    fields = {"title": "T", "content": "C", "type": "manual", **changes}
    assert mem.mem_save("alice", fields["title"], fields["content"], type=fields["type"]).action == "created"


def test_other_users_identical_save_is_not_a_duplicate(mem):
    mem.mem_save("alice", "T", "C")
    assert mem.mem_save("bob", "T", "C").action == "created"


def test_deleted_observation_is_not_a_duplicate_target(mem):
    o = mem.mem_save("alice", "T", "C").observation
    mem.mem_delete("alice", o.id)
    assert mem.mem_save("alice", "T", "C").action == "created"


def test_dedupe_window_setting_zero_only_matches_same_instant(db, clock, settings):
    from ilab_memory import ILabMemory

    settings.ILAB_MEMORY = {"DEDUPE_WINDOW_MINUTES": 0}
    mem = ILabMemory()
    mem.mem_save("alice", "T", "C")
    clock.shift(TICK)
    assert mem.mem_save("alice", "T", "C").action == "created"


def test_duplicate_moves_observation_to_current_session(mem, clock):
    first = mem.mem_save("alice", "T", "C").observation
    mem.mem_session_end("alice")
    second = mem.mem_session_start("alice").session_id
    result = mem.mem_save("alice", "T", "C")
    assert result.action == "duplicate" and result.observation.session_id == second != first.session_id


# -- Braess #4 on create and update ----------------------------------------------------------


def test_create_belongs_to_the_active_session(mem):
    sid = mem.mem_session_start("alice").session_id
    assert mem.mem_save("alice", "T", "C").observation.session_id == sid


def test_update_moves_observation_to_current_session_and_keeps_history(mem, clock):
    o = mem.mem_save("alice", "T", "C", metadata={"a": 1}).observation
    mem.mem_session_end("alice")
    second = mem.mem_session_start("alice").session_id
    clock.shift(timedelta(minutes=3))
    updated = mem.mem_update("alice", o.id, content="C2")
    assert updated.session_id == second
    assert (updated.title, updated.content, updated.metadata) == ("T", "C2", {"a": 1})
    assert updated.revision_count == 2 and updated.updated_at == "2026-01-15T09:03:00+00:00"
    [old] = mem.mem_revisions("alice", o.id)
    assert (old.content, old.session_id) == ("C", o.session_id)


# -- update -----------------------------------------------------------------------------------


def test_update_requires_at_least_one_field(mem):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ValidationError):
        mem.mem_update("alice", o.id)
    assert ObservationRevision.objects.count() == 0


def test_update_rejects_unknown_fields(mem):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ValidationError) as error:
        mem.mem_update("alice", o.id, colour="red")
    assert error.value.field == "colour"


def test_update_can_set_and_clear_topic_key(mem):
    o = mem.mem_save("alice", "T", "C").observation
    assert mem.mem_update("alice", o.id, topic_key="New Topic").topic_key == "new-topic"
    assert mem.mem_update("alice", o.id, topic_key=None).topic_key is None


def test_update_to_a_taken_topic_key_is_rejected(mem):
    mem.mem_save("alice", "A", "a", topic_key="taken")
    b = mem.mem_save("alice", "B", "b").observation
    before = counts()
    with pytest.raises(ValidationError) as error:
        mem.mem_update("alice", b.id, topic_key="TAKEN")
    assert error.value.field == "topic_key"
    assert counts() == before


def test_update_of_another_users_observation_is_not_found(mem):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ObservationNotFound):
        mem.mem_update("bob", o.id, title="hijack")
    assert mem.mem_get_observation("alice", o.id).title == "T"
    assert not Session.objects.filter(user_id="bob").exists()  # nothing half-written


def test_update_of_deleted_observation_is_not_found(mem):
    o = mem.mem_save("alice", "T", "C").observation
    mem.mem_delete("alice", o.id)
    with pytest.raises(ObservationNotFound):
        mem.mem_update("alice", o.id, title="x")


def test_update_keeps_every_version_in_order(mem, clock):
    o = mem.mem_save("alice", "v1", "c").observation
    for n in range(2, 5):
        clock.shift(timedelta(minutes=1))
        mem.mem_update("alice", o.id, title=f"v{n}")
    assert [r.title for r in mem.mem_revisions("alice", o.id)] == ["v3", "v2", "v1"]
    assert mem.mem_get_observation("alice", o.id).revision_count == 4


# -- get / delete ------------------------------------------------------------------------------


def test_get_returns_full_content(mem):
    o = mem.mem_save("alice", "T", "x" * 5000).observation
    assert mem.mem_get_observation("alice", o.id).content == "x" * 5000


@pytest.mark.parametrize("bad_id", ["nope", "", "00000000-0000-0000-0000-000000000000", None, 42])
def test_get_with_unknown_or_malformed_id_is_not_found(mem, bad_id):
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("alice", bad_id)


def test_get_of_another_users_observation_is_not_found(mem):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("bob", o.id)


def test_soft_delete_hides_everywhere_but_keeps_the_row(mem):
    o = mem.mem_save("alice", "T", "C").observation
    assert mem.mem_delete("alice", o.id).hard is False
    with pytest.raises(ObservationNotFound):
        mem.mem_get_observation("alice", o.id)
    assert mem.mem_context("alice") == []
    assert mem.mem_session_start("alice").memories == []
    assert mem.mem_stats("alice").observations == 0
    assert Observation.objects.get(pk=o.id).deleted_at is not None
    with pytest.raises(ObservationNotFound):
        mem.mem_delete("alice", o.id)


def test_hard_delete_removes_row_and_history(mem):
    o = mem.mem_save("alice", "T", "C").observation
    mem.mem_update("alice", o.id, title="T2")
    mem.mem_delete("alice", o.id, hard=True)
    assert not Observation.objects.filter(pk=o.id).exists()
    assert not ObservationRevision.objects.exists()


def test_hard_delete_works_on_a_soft_deleted_observation(mem):
    o = mem.mem_save("alice", "T", "C").observation
    mem.mem_delete("alice", o.id)
    mem.mem_delete("alice", o.id, hard=True)
    assert not Observation.objects.exists()


def test_delete_of_another_users_observation_is_not_found(mem):
    o = mem.mem_save("alice", "T", "C").observation
    for hard in (False, True):
        with pytest.raises(ObservationNotFound):
            mem.mem_delete("bob", o.id, hard=hard)
    assert Observation.objects.get(pk=o.id).deleted_at is None


def test_restore_undoes_a_soft_delete(mem):
    from ilab_memory.services.observations import observation_restore

    o = mem.mem_save("alice", "T", "C", topic_key="k").observation
    mem.mem_delete("alice", o.id)
    assert observation_restore(user_id="alice", observation_id=o.id).deleted_at is None
    mem.mem_delete("alice", o.id)
    mem.mem_save("alice", "T2", "C2", topic_key="k")
    with pytest.raises(ValidationError):
        observation_restore(user_id="alice", observation_id=o.id)


# -- timeline, context, stats -----------------------------------------------------------------


def test_timeline_returns_neighbours_in_the_same_session_in_order(mem, clock):
    ids = []
    for i in range(8):
        ids.append(mem.mem_save("alice", f"t{i}", f"c{i}").observation.id)
        clock.shift(timedelta(seconds=1))
    mem.mem_session_end("alice")
    mem.mem_save("alice", "next session", "x")
    timeline = mem.mem_timeline("alice", ids[4], before=2, after=5)
    assert timeline.anchor.id == ids[4]
    assert [c.id for c in timeline.before] == ids[2:4]
    assert [c.id for c in timeline.after] == ids[5:8]
    with pytest.raises(ObservationNotFound):
        mem.mem_timeline("bob", ids[4])


def test_context_is_read_only(mem, clock):
    mem.mem_save("alice", "T", "C")
    session = Session.objects.get(user_id="alice")
    clock.shift(timedelta(hours=30))
    assert len(mem.mem_context("alice")) == 1
    assert Session.objects.get(pk=session.pk).last_activity_at == session.last_activity_at
    assert Session.objects.filter(user_id="alice").count() == 1
    assert mem.mem_context("nobody") == []
    assert not Session.objects.filter(user_id="nobody").exists()


def test_context_preview_is_cut_at_300_characters_with_ellipsis(mem):
    mem.mem_save("alice", "long", "é" * 301)
    mem.mem_save("alice", "exact", "a" * 300)
    previews = {m.title: m.preview for m in mem.mem_context("alice")}
    assert previews["long"] == "é" * 300 + "…"
    assert previews["exact"] == "a" * 300


def test_stats_counts_the_users_rows_only(mem):
    a = mem.mem_save("alice", "A", "a", type="decision").observation
    mem.mem_save("alice", "B", "b")
    mem.mem_update("alice", a.id, title="A2")
    mem.mem_delete("alice", a.id)
    mem.mem_session_end("alice", summary="done")
    mem.mem_session_start("alice")
    mem.mem_save("bob", "B", "b")
    stats = mem.mem_stats("alice")
    assert (stats.sessions, stats.active_sessions, stats.completed_sessions) == (2, 1, 1)
    assert (stats.human_summaries, stats.auto_summaries) == (1, 0)
    assert (stats.observations, stats.deleted_observations, stats.revisions) == (1, 1, 1)
    assert stats.observations_by_type == {"manual": 1}


# -- validation and limits: nothing stored ------------------------------------------------------


LIMIT_CASES = [
    ("title", {"title": "t" * 301}, 300, 301),
    ("content", {"content": "c" * 50_001}, 50_000, 50_001),
    ("topic_key", {"topic_key": "k" * 121}, 120, 121),
    ("metadata", {"metadata": {"k": "v" * 16_400}}, 16_384, None),
]


@pytest.mark.parametrize("field, override, limit, size", LIMIT_CASES)
def test_over_limit_save_is_rejected_naming_field_limit_and_size(mem, field, override, limit, size):
    fields = {"title": "T", "content": "C", **override}
    before = counts()
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", **fields)
    assert error.value.field == field and error.value.limit == limit
    if size is not None:
        assert error.value.size == size
    assert str(limit) in str(error.value) and field in str(error.value)
    assert counts() == before


@pytest.mark.parametrize("field, value", [("title", "t" * 300), ("content", "c" * 50_000), ("topic_key", "k" * 120)])
def test_values_at_the_limit_are_accepted_untruncated(mem, field, value):
    fields = {"title": "T", "content": "C", field: value}
    o = mem.mem_save("alice", **fields).observation
    assert getattr(o, field) == value


def test_limits_count_characters_not_bytes(mem):
    assert mem.mem_save("alice", "ü" * 300, "C").observation.title == "ü" * 300


def test_limits_come_from_settings(db, settings):
    from ilab_memory import ILabMemory

    settings.ILAB_MEMORY = {"MAX_TITLE_CHARS": 5}
    with pytest.raises(ValidationError) as error:
        ILabMemory().mem_save("alice", "123456", "C")
    assert error.value.limit == 5


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"title": "  "}, "title"),
        ({"content": "\n"}, "content"),
        ({"title": None}, "title"),
        ({"content": 42}, "content"),
        ({"title": "a\x00b"}, "title"),
        ({"content": "bad \ud800 surrogate"}, "content"),
        ({"type": "Not A Slug"}, "type"),
        ({"type": "x" * 41}, "type"),
        ({"type": ""}, "type"),
        ({"topic_key": 5}, "topic_key"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"metadata": {"f": float("nan")}}, "metadata"),
        ({"metadata": {"s": {1, 2}}}, "metadata"),
        ({"metadata": {"n": "a\x00"}}, "metadata"),
    ],
)
def test_bad_shapes_are_rejected_and_nothing_stored(mem, kwargs, field):
    fields = {"title": "T", "content": "C", **kwargs}
    before = counts()
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", **fields)
    assert error.value.field == field
    assert counts() == before


def test_deeply_nested_metadata_is_rejected(mem):
    nested = {}
    node = nested
    for _ in range(50):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", "T", "C", metadata=nested)
    assert error.value.field == "metadata"


@pytest.mark.parametrize("user_id", ["", "   ", "a" * 256, "bad\nid", "bad\x00id", None, 7])
def test_bad_user_id_is_rejected(mem, user_id):
    with pytest.raises(ValidationError) as error:
        mem.mem_save(user_id, "T", "C")
    assert error.value.field == "user_id"
    assert counts() == (0, 0, 0)


def test_user_id_is_stripped(mem):
    mem.mem_save("  alice  ", "T", "C")
    assert mem.mem_session_start("alice").is_new is False


def test_user_id_of_255_characters_is_accepted(mem):
    assert mem.mem_save("u" * 255, "T", "C").observation.user_id == "u" * 255


def test_observation_types_setting_restricts_types(db, settings):
    from ilab_memory import ILabMemory

    settings.ILAB_MEMORY = {"OBSERVATION_TYPES": ["decision", "manual"]}
    mem = ILabMemory()
    assert mem.mem_save("alice", "T", "C", type="decision").observation.type == "decision"
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", "T", "C", type="bugfix")
    assert error.value.field == "type"


def test_validation_messages_never_echo_the_value(mem):
    secret = "SECRET-VALUE-" * 30
    with pytest.raises(ValidationError) as error:
        mem.mem_save("alice", secret, "C")
    assert "SECRET" not in str(error.value)


def test_huge_metadata_integers_are_rejected(mem):
    for number in (10**5000, 2**63, -(2**63) - 1):
        with pytest.raises(ValidationError) as error:
            mem.mem_save("alice", "T", "C", metadata={"n": number})
        assert error.value.field == "metadata"
    assert mem.mem_save("alice", "T", "C", metadata={"n": 2**63 - 1}).observation.metadata == {"n": 2**63 - 1}


@pytest.mark.parametrize("hard", ["false", 0, 1, None])
def test_delete_hard_must_be_a_bool(mem, hard):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ValidationError) as error:
        mem.mem_delete("alice", o.id, hard=hard)
    assert error.value.field == "hard"
    assert Observation.objects.get(pk=o.id).deleted_at is None


@pytest.mark.parametrize("kwargs", [{"before": 2**64}, {"after": -1}, {"before": "5"}])
def test_timeline_bounds_are_validated(mem, kwargs):
    o = mem.mem_save("alice", "T", "C").observation
    with pytest.raises(ValidationError):
        mem.mem_timeline("alice", o.id, **kwargs)


def test_session_records_carry_plain_string_status(mem):
    mem.mem_session_start("alice")
    closed = mem.mem_session_end("alice")
    assert type(closed.status) is str and repr(closed.status) == "'completed'"


def test_new_topic_save_repeating_a_recent_memory_is_a_duplicate_that_takes_the_topic(mem, clock):
    first = mem.mem_save("alice", "T", "C").observation
    clock.shift(timedelta(minutes=1))
    result = mem.mem_save("alice", "T", "C", topic_key="Plan")
    assert result.action == "duplicate" and result.observation.id == first.id
    assert result.observation.topic_key == "plan" and result.observation.duplicate_count == 2
    assert mem.mem_save("alice", "T2", "C2", topic_key="plan").action == "revised"


def test_repeat_under_another_topic_stays_a_duplicate_of_the_first_topic(mem, clock):
    first = mem.mem_save("alice", "T", "C", topic_key="a").observation
    result = mem.mem_save("alice", "T", "C", topic_key="b")
    assert result.action == "duplicate" and result.observation.id == first.id
    assert result.observation.topic_key == "a"


# -- many callers at the same moment -----------------------------------------------------------
# Threads on one database, each on its own connection: saves without a session share one, identical
# saves are one row and duplicates, saves on one topic revise one row.

THREADS = 8
ROUNDS = 15


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_without_a_session_share_one_implicit_session():
    mem = ILabMemory()
    for round_ in range(ROUNDS):
        user = f"saver-{round_}"
        results = threads.run_together(lambda i: mem.mem_save(user, f"title {i}", f"content {i}"), THREADS)
        assert {r.action for r in results} == {"created"}
        session = Session.objects.get(user_id=user)
        assert session.status == SessionStatus.ACTIVE
        assert {r.observation.session_id for r in results} == {str(session.id)}
        assert Observation.objects.filter(user_id=user).count() == THREADS


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_saves_count_duplicates_once():
    mem = ILabMemory()
    results = threads.run_together(lambda i: mem.mem_save("dup", "Same", "same content"), THREADS)
    assert Observation.objects.filter(user_id="dup").count() == 1
    assert sorted(r.action for r in results) == ["created"] + ["duplicate"] * (THREADS - 1)
    assert Observation.objects.get(user_id="dup").duplicate_count == THREADS


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_on_one_topic_revise_one_row():
    mem = ILabMemory()
    results = threads.run_together(lambda i: mem.mem_save("topic", f"v{i}", f"c{i}", topic_key="plan"), THREADS)
    assert Observation.objects.filter(user_id="topic").count() == 1
    assert sorted(r.action for r in results) == ["created"] + ["revised"] * (THREADS - 1)
    assert Observation.objects.get(user_id="topic").revision_count == THREADS


# -- a revise racing a soft delete (PostgreSQL) -------------------------------------------------
# A revise whose topic row is soft-deleted while it waits loses the race, and the retry creates.


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_a_topic_deleted_during_a_revise_is_not_revised_and_the_save_creates(tmem):
    import psycopg

    first = tmem.mem_save("alice", "Plan", "v1", topic_key="plan").observation
    settings = connection.settings_dict
    deleter = psycopg.connect(dbname=settings["NAME"], host=settings["HOST"], port=settings["PORT"] or 5432,
                              user=settings["USER"])
    # A concurrent soft delete holds the row, not committed yet (it never takes the session lock).
    deleter.execute("UPDATE ilab_memory_observation SET deleted_at = %s WHERE id = %s", (timezone.now(), first.id))
    result = {}

    def save():
        try:
            result["saved"] = tmem.mem_save("alice", "Plan", "v2", topic_key="plan")
        finally:
            connection.close()

    saver = threading.Thread(target=save)
    saver.start()
    time.sleep(0.3)  # the revise now waits for the deleter's row lock
    deleter.commit()
    deleter.close()
    saver.join(timeout=30)
    saved = result["saved"]
    assert saved.action == "created" and saved.observation.id != first.id
    assert Observation.objects.get(pk=first.id).revision_count == 1  # the deleted row was never revised
    assert not ObservationRevision.objects.filter(observation_id=first.id).exists()  # the lost try's copy rolled back
