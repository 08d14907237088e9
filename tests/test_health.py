"""health.py: each part of a probe's answer read from real rows at a given clock (the endpoint that
serves it: tests/api/test_health.py)."""

from datetime import UTC, datetime, timedelta

from ilab_memory import health
from ilab_memory.conf import get_config
from ilab_memory.models import ObservationVector
from tests.factories import ObservationFactory, SessionFactory

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def waiting(n, *, since: timedelta):
    session = SessionFactory(user_id="ana")
    for observation in ObservationFactory.create_batch(n, session=session, user_id="ana"):
        ObservationVector.objects.update_or_create(
            observation=observation, defaults={"user_id": "ana", "model_id": None, "queued_at": NOW - since})


def test_an_empty_queue_on_a_migrated_database_is_healthy_in_every_part(db):
    report = health.check(now=NOW)
    assert report.ok and report.failing == []
    assert [part.name for part in report.parts] == ["database", "migrations", "backlog", "runner"]
    assert health.migrations_applied() == []


def test_the_backlog_is_its_size_and_its_oldest_wait(db):
    waiting(3, since=timedelta(seconds=90))
    backlog = health.backlog(now=NOW)
    assert (backlog.size, backlog.oldest_seconds, backlog.capped) == (3, 90.0, False)


def test_a_backlog_older_than_its_limit_fails_that_part_only(db):
    limit = get_config().HEALTH_BACKLOG_SECONDS
    waiting(1, since=timedelta(seconds=limit + 5))
    report = health.check(now=NOW, config=get_config({"EMBEDDING_RUNNER": None}))
    assert report.failing == ["backlog"]


def test_a_runner_is_seen_by_its_lease_or_a_vector_it_stored_lately(db):
    waiting(1, since=timedelta(hours=1))
    assert not health.runner_seen(since=NOW - timedelta(minutes=5), now=NOW)
    ObservationVector.objects.update(claimed_until=NOW + timedelta(minutes=1))
    assert health.runner_seen(since=NOW - timedelta(minutes=5), now=NOW)


def test_sessions_idle_past_the_timeout_are_counted_until_a_sweep_closes_them(db):
    config = get_config()
    SessionFactory(last_activity_at=NOW - timedelta(hours=config.SESSION_TIMEOUT_HOURS + 1))
    SessionFactory(last_activity_at=NOW)
    assert health.expired_open(now=NOW, config=config) == 1
