"""Shared fixtures: the facade on the test database, a clock to travel with, settings helpers."""

from datetime import datetime, timezone

import pytest
import time_machine

from ilab_memory import ILabMemory

START = datetime(2026, 1, 15, 9, 0, tzinfo=timezone.utc)


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
