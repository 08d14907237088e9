"""Shared fixtures: the facade on the test database, a clock to travel with, settings helpers."""

import os
from datetime import UTC, datetime

import pytest
import time_machine

from ilab_memory import ILabMemory

START = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    """A stopped clock at START; ``clock.shift(timedelta)`` or ``clock.move_to(dt)`` travels."""
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def mem(db):
    return ILabMemory()


@pytest.fixture
def tmem(transactional_db):
    """The facade for tests that need real commits (threads, several connections)."""
    return ILabMemory()


def pytest_collection_modifyitems(config, items):
    """The PostgreSQL run skips what the SQLite run already proves: tests of an embedded SQLite
    file, or of no database at all, run the same code whatever DATABASE_URL names."""
    if not os.environ.get("DATABASE_URL"):
        return
    skip = pytest.mark.skip(reason="engine independent: the SQLite run covers it")
    for item in items:
        if item.get_closest_marker("engine_independent"):
            item.add_marker(skip)
