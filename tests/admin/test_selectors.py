"""admin/selectors.py: what the overview and a user's page read, from real rows."""

from datetime import UTC, datetime, timedelta

from ilab_memory.admin import selectors
from ilab_memory.models import Observation
from tests.factories import ObservationFactory, SessionFactory

DAY = datetime(2026, 3, 2, tzinfo=UTC)


def test_sessions_per_day_counts_each_kind_on_its_day_and_every_empty_day(db):
    SessionFactory(started_at=DAY + timedelta(hours=1), completed=True, summary="Memories: x", is_auto_generated=True)
    SessionFactory(started_at=DAY + timedelta(hours=2), completed=True, summary="Talked")
    SessionFactory(started_at=DAY + timedelta(days=2, hours=3))  # no summary yet
    SessionFactory(started_at=DAY - timedelta(days=1))  # before the window
    days = selectors.sessions_per_day(since=DAY, days=3)
    assert [(d.day.isoformat(), d.auto, d.human, d.none) for d in days] == [
        ("2026-03-02", 1, 1, 0), ("2026-03-03", 0, 0, 0), ("2026-03-04", 0, 0, 1)]


def test_written_since_counts_live_memories_most_first(db):
    session = SessionFactory(user_id="ana")
    ObservationFactory.create_batch(2, session=session, type="decision")
    ObservationFactory(session=session, type="pattern")
    ObservationFactory(session=session, type="pattern", deleted_at=session.started_at)  # not live
    assert selectors.written_since("type", since=DAY - timedelta(days=3650), limit=10) == [
        ("decision", 2), ("pattern", 1)]


def test_capped_count_stops_at_its_cap(db):
    session = SessionFactory()
    ObservationFactory.create_batch(4, session=session)
    capped = selectors.capped_count(Observation.objects.all(), along="created_at", cap=3)
    assert (capped.value, capped.more) == (3, True)
    assert selectors.capped_count(Observation.objects.all(), along="created_at", cap=10).more is False


def test_a_users_scope_names_are_its_own_in_order(db):
    for scope in ("writer", "", "coder"):
        SessionFactory(user_id="ana", scope=scope)
    SessionFactory(user_id="bob", scope="other")
    assert selectors.user_scope_names(user_id="ana") == ["", "coder", "writer"]
    assert selectors.user_scope_names(user_id="ana", limit=2) == ["", "coder"]
    assert selectors.user_scope_names(user_id="ana", limit=None) == ["", "coder", "writer"]
