"""Reads: the context ranking as callers see it (ids, timestamps, order, start == context)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import ObservationFactory, SessionFactory


def test_context_returns_uuid_strings_and_utc_timestamps_like_the_record(mem, clock):
    saved = mem.mem_save("alice", "A decision", "We chose PostgreSQL.", type="decision").observation
    memory = mem.mem_context("alice")[0]
    assert memory.id == saved.id and "-" in memory.id
    assert memory.session_id == saved.session_id
    assert memory.updated_at == saved.updated_at
    assert memory.score.value == pytest.approx(1.5)  # just written, decision weight


def test_context_ranking_on_raw_rows_matches_the_documented_order(mem, clock):
    session = SessionFactory(user_id="alice")
    now = timezone.now()
    base = {"session": session, "user_id": "alice"}
    ObservationFactory(**base, title="old decision", type="decision", updated_at=now - timedelta(hours=60),
                       created_at=now - timedelta(hours=60))
    ObservationFactory(**base, title="fresh manual", type="manual", updated_at=now - timedelta(hours=1),
                       created_at=now - timedelta(hours=1))
    ObservationFactory(**base, title="mid preference", type="preference", updated_at=now - timedelta(hours=20),
                       created_at=now - timedelta(hours=20))
    # 1.0 * 0.995**1 = 0.995;  1.4 * 0.995**20 = 1.267;  1.5 * 0.995**60 = 1.111
    assert [m.title for m in mem.mem_context("alice")] == ["mid preference", "old decision", "fresh manual"]
    values = [m.score.value for m in mem.mem_context("alice")]
    assert values == sorted(values, reverse=True)


def test_context_ties_break_by_newest_update_then_id(mem, clock):
    session = SessionFactory(user_id="alice")
    now = timezone.now()
    rows = [ObservationFactory(session=session, user_id="alice", updated_at=now, created_at=now) for _ in range(4)]
    expected = sorted((str(r.id) for r in rows), reverse=True)
    assert [m.id for m in mem.mem_context("alice")] == expected


def test_start_memories_equal_the_context_ranking(mem, clock):
    for k in range(12):
        mem.mem_save("alice", f"note {k}", f"body {k}", type="decision" if k % 3 == 0 else "manual")
        clock.shift(timedelta(minutes=30))
    started = mem.mem_session_start("alice")
    assert [m.id for m in started.memories] == [m.id for m in mem.mem_context("alice")]
    assert len(started.memories) == 10


def test_context_and_start_read_raw_timestamps_without_use_tz(mem, settings):
    mem.mem_save("alice", "A decision", "We chose PostgreSQL.", type="decision")
    mem.mem_session_end("alice", summary="done")
    settings.USE_TZ = False
    assert [m.title for m in mem.mem_context("alice")] == ["A decision"]
    started = mem.mem_session_start("alice")
    assert [c.summary for c in started.sessions_context] == ["done"]
