"""Fixtures of the console's tests."""

import pytest

from tests.factories import ObservationFactory, SessionFactory


@pytest.fixture
def mix(db):
    """Sessions of every summary kind, each holding observations of different types."""
    auto = SessionFactory(
        user_id="alice", completed=True, summary="Memories: [decision] Use PostgreSQL", is_auto_generated=True
    )
    human = SessionFactory(user_id="bob", completed=True, summary="Talked about the retry pattern")
    blank = SessionFactory(user_id="carol", completed=True, summary="")
    active = SessionFactory(user_id="alice2")
    rows = {
        "auto": auto,
        "human": human,
        "blank": blank,
        "active": active,
        "auto_obs": ObservationFactory(session=auto, type="decision", title="Use PostgreSQL",
                                       content="Chosen for prod."),
        "human_obs": ObservationFactory(session=human, type="pattern", title="Retries", content="Exponential backoff."),
        "blank_obs": ObservationFactory(session=blank, type="manual", title="Plain note", content="Nothing special."),
        "active_obs": ObservationFactory(session=active, type="decision", title="Use Redis", content="For the cache."),
    }
    rows["deleted_obs"] = ObservationFactory(session=active, title="Gone", content="x", deleted_at=active.started_at)
    return rows
