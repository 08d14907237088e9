"""Sessions: start, reuse, timeout, auto-close, summary, end, sweep."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.db.models import F
from django.test import override_settings
from django.utils import translation

from ilab_memory import ILabMemory
from ilab_memory.exceptions import NoActiveSession, ValidationError
from ilab_memory.models import Session, SessionStatus
from ilab_memory.types import iso
from tests import threads
from tests.conftest import START
from tests.factories import SessionFactory

H24 = timedelta(hours=24)
TICK = timedelta(microseconds=1)


def active(user_id):
    return Session.objects.get(user_id=user_id, status=SessionStatus.ACTIVE)


# -- start / reuse ---------------------------------------------------------------------


def test_start_opens_a_session_when_none_exists(mem, clock):
    response = mem.mem_session_start(user_id="alice")
    assert response.is_new is True
    session = Session.objects.get(pk=response.session_id)
    assert session.status == "active" and session.user_id == "alice"
    assert session.started_at == session.last_activity_at == START
    assert session.ended_at is None and session.summary is None and session.is_auto_generated is False


def test_start_inside_window_reuses_and_bumps_activity(mem, clock):
    first = mem.mem_session_start(user_id="alice")
    clock.shift(timedelta(hours=5))
    second = mem.mem_session_start(user_id="alice")
    assert second.is_new is False
    assert second.session_id == first.session_id
    assert active("alice").last_activity_at == START + timedelta(hours=5)


def test_start_keeps_session_alive_across_many_calls_within_window(mem, clock):
    first = mem.mem_session_start(user_id="alice")
    for _ in range(4):
        clock.shift(timedelta(hours=20))
        assert mem.mem_session_start(user_id="alice").session_id == first.session_id
    assert Session.objects.filter(user_id="alice").count() == 1


def test_start_exactly_at_timeout_boundary_reuses(mem, clock):
    first = mem.mem_session_start(user_id="alice")
    clock.shift(H24)  # last_activity_at == now - timeout: not yet expired
    second = mem.mem_session_start(user_id="alice")
    assert second.is_new is False and second.session_id == first.session_id


def test_start_just_past_timeout_auto_closes_and_opens_new(mem, clock):
    first = mem.mem_session_start(user_id="alice")
    clock.shift(H24 + TICK)
    second = mem.mem_session_start(user_id="alice")
    assert second.is_new is True and second.session_id != first.session_id
    old = Session.objects.get(pk=first.session_id)
    assert old.status == "completed"
    assert old.is_auto_generated is True
    assert [c.session_id for c in second.sessions_context] == [first.session_id]


def test_auto_close_sets_ended_at_to_the_moment_it_expired(mem, clock):
    first = mem.mem_session_start(user_id="alice")
    clock.shift(timedelta(hours=3))
    mem.mem_save("alice", "T", "C")
    clock.shift(timedelta(days=9))  # noticed much later
    mem.mem_session_start(user_id="alice")
    old = Session.objects.get(pk=first.session_id)
    assert old.ended_at == START + timedelta(hours=3) + H24
    assert old.ended_at == old.last_activity_at + H24


def test_session_timeout_override_on_the_facade(db, clock):
    from ilab_memory import ILabMemory

    short = ILabMemory(session_timeout_hours=2)
    first = short.mem_session_start("alice")
    clock.shift(timedelta(hours=2) + TICK)
    second = short.mem_session_start("alice")
    assert second.is_new and Session.objects.get(pk=first.session_id).ended_at == START + timedelta(hours=2)


def test_start_response_is_a_frozen_dataclass_with_four_fields(mem):
    import dataclasses

    response = mem.mem_session_start("alice")
    assert [f.name for f in dataclasses.fields(response)] == ["session_id", "is_new", "sessions_context", "memories"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.is_new = False


def test_sessions_context_lists_five_newest_completed_by_ended_at(mem, clock):
    ids = []
    for i in range(7):
        ids.append(mem.mem_session_start("alice").session_id)
        mem.mem_save("alice", f"title {i}", "body")
        clock.shift(timedelta(hours=1))
        mem.mem_session_end("alice", summary=f"summary {i}")
        clock.shift(timedelta(hours=1))
    response = mem.mem_session_start("alice")
    assert [c.session_id for c in response.sessions_context] == list(reversed(ids))[:5]
    newest = response.sessions_context[0]
    assert newest.summary == "summary 6" and newest.is_auto_generated is False
    assert newest.observation_count == 1
    assert newest.ended_at == iso(START + timedelta(hours=13))


def test_sessions_context_never_includes_another_users_sessions(mem):
    mem.mem_session_start("bob")
    mem.mem_session_end("bob", summary="bob's secret plans")
    response = mem.mem_session_start("alice")
    assert response.sessions_context == []


def test_memories_are_ranked_live_observations_of_the_user_capped_at_ten(mem, clock):
    for i in range(12):
        mem.mem_save("alice", f"t{i}", f"c{i}")
        clock.shift(timedelta(minutes=1))
    mem.mem_save("bob", "bob only", "x")
    response = mem.mem_session_start("alice")
    assert len(response.memories) == 10
    assert response.memories[0].title == "t11"
    assert all(m.title != "bob only" for m in response.memories)
    values = [m.score.value for m in response.memories]
    assert values == sorted(values, reverse=True)


# -- implicit creation, writes touch the session -----------------------------------------


def test_save_without_start_creates_an_implicit_session(mem, clock):
    result = mem.mem_save("alice", "T", "C")
    session = active("alice")
    assert result.observation.session_id == str(session.id)
    assert mem.mem_session_start("alice").is_new is False


def test_summary_without_start_creates_an_implicit_session(mem):
    record = mem.mem_session_summary("alice", "Narrative")
    assert record.status == "active" and record.summary == "Narrative"


def test_save_advances_last_activity(mem, clock):
    mem.mem_session_start("alice")
    clock.shift(timedelta(hours=23))
    mem.mem_save("alice", "T", "C")
    assert active("alice").last_activity_at == START + timedelta(hours=23)
    clock.shift(timedelta(hours=23))
    assert mem.mem_session_start("alice").is_new is False


def test_update_and_summary_advance_last_activity(mem, clock):
    saved = mem.mem_save("alice", "T", "C").observation
    clock.shift(timedelta(hours=2))
    mem.mem_update("alice", saved.id, content="C2")
    assert active("alice").last_activity_at == START + timedelta(hours=2)
    clock.shift(timedelta(hours=2))
    mem.mem_session_summary("alice", "so far")
    assert active("alice").last_activity_at == START + timedelta(hours=4)


def test_write_that_finds_the_session_expired_auto_closes_and_opens_new(mem, clock):
    first = mem.mem_session_start("alice").session_id
    mem.mem_save("alice", "Old", "C", type="decision")
    clock.shift(H24 + TICK)
    result = mem.mem_save("alice", "New", "C")
    old = Session.objects.get(pk=first)
    assert old.status == "completed"
    assert old.summary == "Memories: [decision] Old"
    assert result.observation.session_id != first


def test_summary_on_expired_session_goes_to_a_new_session(mem, clock):
    first = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    record = mem.mem_session_summary("alice", "fresh")
    assert record.id != first
    assert Session.objects.get(pk=first).summary == "Memories: (none)"


# -- synthetic summaries -------------------------------------------------------------------


def test_synthetic_summary_lists_live_observations_in_creation_order(mem, clock):
    first = mem.mem_session_start("alice").session_id
    mem.mem_save("alice", "First", "a", type="decision")
    clock.shift(timedelta(minutes=1))
    doomed = mem.mem_save("alice", "Deleted", "b").observation
    clock.shift(timedelta(minutes=1))
    mem.mem_save("alice", "Third", "c", type="bugfix")
    mem.mem_delete("alice", doomed.id)
    clock.shift(H24 + timedelta(minutes=1))
    mem.mem_session_start("alice")
    assert Session.objects.get(pk=first).summary == "Memories: [decision] First, [bugfix] Third"


def test_synthetic_summary_without_observations_says_none(mem, clock):
    first = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    session = Session.objects.get(pk=first)
    assert session.summary == "Memories: (none)"
    assert session.is_auto_generated is True


@override_settings(LANGUAGE_CODE="es")
def test_synthetic_summary_speaks_the_sites_language(mem, clock):
    empty = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    full = mem.mem_session_start("alice").session_id
    mem.mem_save("alice", "Usa tabuladores", "Prefiere tabuladores.", type="preference")
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    assert Session.objects.get(pk=empty).summary == "Memorias registradas: (ninguna)"
    assert Session.objects.get(pk=full).summary == "Memorias registradas: [preference] Usa tabuladores"


def test_the_language_of_the_request_that_closes_a_session_does_not_choose_its_summarys(mem, clock):
    first = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    with translation.override("es"):  # what LocaleMiddleware does for a Spanish browser
        mem.mem_session_start("alice")
    assert Session.objects.get(pk=first).summary == "Memories: (none)"


@override_settings(LANGUAGE_CODE="es", ILAB_MEMORY={"AUTO_SUMMARY_PREFIX": "Done:"})
def test_a_prefix_setting_is_used_as_written_in_any_language(mem, clock):
    first = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    assert Session.objects.get(pk=first).summary == "Done: (ninguna)"


def test_synthetic_summary_caps_items_and_counts_the_rest(mem, clock):
    first = mem.mem_session_start("alice").session_id
    for i in range(23):
        mem.mem_save("alice", f"t{i:02d}", f"content {i}")
        clock.shift(timedelta(seconds=1))
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    listed = ", ".join(f"[manual] t{i:02d}" for i in range(20))
    assert Session.objects.get(pk=first).summary == f"Memories: {listed}, … (+3)"


def test_synthetic_summary_with_exactly_max_items_has_no_suffix(mem, clock):
    first = mem.mem_session_start("alice").session_id
    for i in range(20):
        mem.mem_save("alice", f"t{i:02d}", f"content {i}")
        clock.shift(timedelta(seconds=1))
    mem.mem_session_end("alice")
    assert not Session.objects.get(pk=first).summary.endswith(")")


def test_synthetic_summary_prefix_and_cap_come_from_settings(db, clock, settings):
    from ilab_memory import ILabMemory

    settings.ILAB_MEMORY = {"AUTO_SUMMARY_PREFIX": "Saved:", "AUTO_SUMMARY_MAX_ITEMS": 1}
    mem = ILabMemory()
    mem.mem_save("alice", "A", "a")
    clock.shift(timedelta(seconds=1))
    mem.mem_save("alice", "B", "b")
    assert mem.mem_session_end("alice").summary == "Saved: [manual] A, … (+1)"


def test_auto_close_keeps_a_narrative_summary(mem, clock):
    first = mem.mem_session_start("alice").session_id
    mem.mem_save("alice", "T", "C")
    mem.mem_session_summary("alice", "We agreed on the plan.")
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    session = Session.objects.get(pk=first)
    assert session.summary == "We agreed on the plan."
    assert session.is_auto_generated is False
    assert session.status == "completed"


def test_observation_moved_to_a_later_session_is_not_in_the_old_synthetic_summary(mem, clock):
    first = mem.mem_session_start("alice").session_id
    saved = mem.mem_save("alice", "Moved", "C").observation
    mem.mem_session_end("alice", summary="done")
    second = mem.mem_session_start("alice").session_id
    mem.mem_update("alice", saved.id, content="C2")
    clock.shift(H24 + TICK)
    mem.mem_session_start("alice")
    assert Session.objects.get(pk=second).summary == "Memories: [manual] Moved"
    assert Session.objects.get(pk=first).summary == "done"


# -- mem_session_summary ---------------------------------------------------------------------


def test_session_summary_stores_narrative_without_closing(mem):
    sid = mem.mem_session_start("alice").session_id
    record = mem.mem_session_summary("alice", "Progress so far")
    assert record.id == sid and record.status == "active" and record.ended_at is None
    assert record.summary == "Progress so far" and record.is_auto_generated is False


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_session_summary_rejects_blank(mem, blank):
    mem.mem_session_start("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_session_summary("alice", blank)
    assert error.value.field == "summary"
    assert active("alice").summary is None


def test_session_summary_over_limit_is_rejected_and_nothing_stored(mem):
    mem.mem_session_start("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_session_summary("alice", "x" * 20_001)
    assert (error.value.field, error.value.limit, error.value.size) == ("summary", 20_000, 20_001)
    assert "20000" in str(error.value) and "20001" in str(error.value)
    assert active("alice").summary is None


def test_session_summary_at_limit_is_accepted(mem):
    assert len(mem.mem_session_summary("alice", "x" * 20_000).summary) == 20_000


# -- mem_session_end -------------------------------------------------------------------------


def test_end_with_summary_closes_now_with_human_summary(mem, clock):
    sid = mem.mem_session_start("alice").session_id
    clock.shift(timedelta(hours=1))
    closed = mem.mem_session_end(user_id="alice", summary="Done for today.")
    assert closed.id == sid and closed.status == "completed"
    assert closed.ended_at == iso(START + timedelta(hours=1))
    assert closed.summary == "Done for today." and closed.is_auto_generated is False


def test_end_without_summary_keeps_the_stored_narrative(mem):
    mem.mem_session_summary("alice", "Stored narrative")
    closed = mem.mem_session_end("alice")
    assert closed.summary == "Stored narrative" and closed.is_auto_generated is False


@pytest.mark.parametrize("blank", [None, "", "   "])
def test_end_with_blank_summary_never_wipes_a_stored_one(mem, blank):
    mem.mem_session_summary("alice", "Stored narrative")
    assert mem.mem_session_end("alice", summary=blank).summary == "Stored narrative"


def test_end_argument_replaces_the_stored_narrative(mem):
    mem.mem_session_summary("alice", "Stored narrative")
    assert mem.mem_session_end("alice", summary="Final words").summary == "Final words"


def test_end_without_any_summary_writes_the_synthetic_one(mem):
    mem.mem_save("alice", "Saved thing", "C", type="config")
    closed = mem.mem_session_end("alice", summary="  ")
    assert closed.summary == "Memories: [config] Saved thing"
    assert closed.is_auto_generated is True
    assert closed.observation_count == 1


def test_end_of_an_expired_session_closes_it_now(mem, clock):
    mem.mem_session_start("alice")
    clock.shift(timedelta(days=3))
    closed = mem.mem_session_end("alice", summary="late")
    assert closed.ended_at == iso(START + timedelta(days=3))


def test_end_without_active_session_raises_no_active_session(mem):
    with pytest.raises(NoActiveSession) as error:
        mem.mem_session_end("alice")
    assert isinstance(error.value, LookupError)


def test_end_twice_raises_the_second_time(mem):
    mem.mem_session_start("alice")
    mem.mem_session_end("alice")
    with pytest.raises(LookupError):
        mem.mem_session_end("alice")


def test_end_with_over_limit_summary_changes_nothing(mem):
    mem.mem_session_start("alice")
    with pytest.raises(ValidationError):
        mem.mem_session_end("alice", summary="y" * 20_001)
    assert active("alice").status == "active"


def test_start_after_end_opens_a_new_session_and_shows_the_summary(mem):
    """The seed's flow: end with a human summary, come back, see it in sessions_context."""
    first = mem.mem_session_start("alice").session_id
    mem.mem_session_end("alice", summary="Human words")
    response = mem.mem_session_start("alice")
    assert response.is_new and response.session_id != first
    assert response.sessions_context[0].summary == "Human words"
    assert response.sessions_context[0].is_auto_generated is False


# -- sweep -----------------------------------------------------------------------------------


def test_sweep_closes_only_expired_sessions(mem, clock):
    mem.mem_session_start("old")
    mem.mem_save("old", "Thing", "C")
    clock.shift(timedelta(hours=12))
    mem.mem_session_start("recent")
    clock.shift(timedelta(hours=12) + TICK)
    closed = mem.mem_close_idle()
    old = Session.objects.get(user_id="old")
    assert closed == [str(old.id)]
    assert old.status == "completed" and old.ended_at == START + H24
    assert old.summary == "Memories: [manual] Thing" and old.is_auto_generated
    assert active("recent")


def test_sweep_twice_changes_nothing(mem, clock):
    mem.mem_session_start("alice")
    clock.shift(H24 + TICK)
    mem.mem_close_idle()
    before = list(Session.objects.values())
    clock.shift(timedelta(days=2))
    assert mem.mem_close_idle() == []
    assert list(Session.objects.values()) == before


def test_sweep_keeps_narrative_summaries(mem, clock):
    mem.mem_session_summary("alice", "Narrative")
    clock.shift(H24 + TICK)
    mem.mem_close_idle()
    session = Session.objects.get(user_id="alice")
    assert session.summary == "Narrative" and not session.is_auto_generated


def test_close_idle_command_prints_what_it_closed(mem, clock, capsys):
    sid = mem.mem_session_start("alice").session_id
    clock.shift(H24 + TICK)
    call_command("ilab_memory_close_idle", verbosity=2)
    out = capsys.readouterr().out
    assert sid in out and "Closed 1 idle session(s)." in out
    call_command("ilab_memory_close_idle")
    assert "Closed 0 idle session(s)." in capsys.readouterr().out


def test_the_old_names_of_closing_idle_sessions_still_work_and_say_so(mem, clock, capsys):
    mem.mem_session_start("alice")
    mem.mem_session_start("bob")
    clock.shift(H24 + TICK)
    now = START + H24 + TICK
    assert Session.objects.expired(now, 24).count() == Session.objects.idle(now, 24).count() == 2
    with pytest.warns(DeprecationWarning, match="mem_close_idle"):
        assert len(mem.mem_close_expired()) == 2
    from ilab_memory.services.sessions import sessions_close_expired, sessions_close_idle

    assert sessions_close_expired is sessions_close_idle
    call_command("ilab_memory_close_expired")  # the old command: both halves of the sweep, and a notice
    out, err = capsys.readouterr()
    assert "Closed 0 idle session(s)." in out and "Erased 0 expired memory(ies)." in out
    assert "deprecated" in err and "ilab_memory_close_idle" in err


# -- database invariants ---------------------------------------------------------------------


def test_database_rejects_a_second_active_session_for_a_user(db):
    SessionFactory(user_id="alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        SessionFactory(user_id="alice")


def test_database_allows_many_completed_sessions_per_user(db):
    SessionFactory(user_id="alice", completed=True)
    SessionFactory(user_id="alice", completed=True)
    SessionFactory(user_id="alice")
    assert Session.objects.filter(user_id="alice").count() == 3


def test_database_rejects_completed_session_without_ended_at(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        SessionFactory(user_id="alice", status=SessionStatus.COMPLETED, ended_at=None)


def test_get_and_list_sessions_are_scoped_by_user(mem):
    sid = mem.mem_session_start("alice").session_id
    assert mem.mem_get_session("alice", sid).id == sid
    with pytest.raises(LookupError):
        mem.mem_get_session("bob", sid)
    with pytest.raises(LookupError):
        mem.mem_get_session("alice", "not-a-uuid")
    assert [s.id for s in mem.mem_list_sessions("alice")] == [sid]
    assert mem.mem_list_sessions("bob") == []


# -- many callers at the same moment -----------------------------------------------------------
# Threads on one database, each on its own connection: one active session per user, every caller
# gets its id. (tests/reliability/test_concurrency.py runs many agents, in threads and processes.)

THREADS = 8
ROUNDS = 15


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_for_one_user_yield_one_session():
    mem = ILabMemory()
    for round_ in range(ROUNDS):
        user = f"user-{round_}"
        responses = threads.run_together(lambda i: mem.mem_session_start(user), THREADS)
        ids = {r.session_id for r in responses}
        assert len(ids) == 1
        assert sum(r.is_new for r in responses) == 1
        assert Session.objects.filter(user_id=user).count() == 1
        assert Session.objects.get(user_id=user).status == SessionStatus.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_on_an_expired_session_close_it_once():
    mem = ILabMemory()
    for round_ in range(5):
        user = f"user-{round_}"
        old = mem.mem_session_start(user).session_id
        # Age the session past the timeout (threads share the real clock, so move the row).
        Session.objects.filter(pk=old).update(
            started_at=F("started_at") - timedelta(hours=25),
            last_activity_at=F("last_activity_at") - timedelta(hours=25),
        )
        responses = threads.run_together(lambda i: mem.mem_session_start(user), THREADS)
        ids = {r.session_id for r in responses}
        assert len(ids) == 1 and old not in ids
        assert sum(r.is_new for r in responses) == 1
        assert Session.objects.filter(user_id=user, status=SessionStatus.ACTIVE).count() == 1
        closed = Session.objects.get(pk=old)
        assert closed.status == SessionStatus.COMPLETED and closed.is_auto_generated
