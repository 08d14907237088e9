"""The fixed-SQL reads agree with the ORM when the database stores times in another zone."""

from contextlib import contextmanager

import pytest
from django.db import connection, connections

from ilab_memory.dbvalues import db_datetime


@contextmanager
def database_time_zone(name: str):
    """Django's per-database TIME_ZONE (only SQLite stores naive local times with it)."""
    wrapper = connections["default"]  # the real wrapper: ``connection`` is only a proxy
    saved = wrapper.settings_dict["TIME_ZONE"]
    wrapper.settings_dict["TIME_ZONE"] = name
    for cached in ("timezone", "timezone_name"):
        wrapper.__dict__.pop(cached, None)
    try:
        yield
    finally:
        wrapper.settings_dict["TIME_ZONE"] = saved
        for cached in ("timezone", "timezone_name"):
            wrapper.__dict__.pop(cached, None)


def test_naive_driver_values_are_read_in_the_connections_zone(db):
    with database_time_zone("America/New_York"):
        assert db_datetime("2026-01-15 04:00:00", using="default").isoformat() == "2026-01-15T09:00:00+00:00"
    assert db_datetime("2026-01-15 04:00:00", using="default").isoformat() == "2026-01-15T04:00:00+00:00"
    assert db_datetime(None, using="default") is None


def test_context_and_sessions_context_match_the_records_in_a_non_utc_database(mem, clock):
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL connections are pinned to UTC by Django")
    with database_time_zone("America/New_York"):
        saved = mem.mem_save("alice", "T", "C").observation
        closed = mem.mem_session_end("alice", summary="done")
        response = mem.mem_session_start("alice")
    [memory] = response.memories
    assert memory.updated_at == saved.updated_at
    assert memory.score.breakdown["hours_since_update"] == 0
    assert response.sessions_context[0].ended_at == closed.ended_at
