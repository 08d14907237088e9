"""The raw statements of ``ilab_memory.sql``: what each one does, and that the ranked context
reads the user's own index whatever the other users hold."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from ilab_memory import sql
from ilab_memory.conf import get_config
from ilab_memory.models import Observation, Session
from tests.factories import ObservationFactory, SessionFactory


def test_bump_finds_and_keeps_alive_only_a_live_session(db):
    now = timezone.now()
    live = SessionFactory(user_id="alice", last_activity_at=now - timedelta(hours=2))
    SessionFactory(user_id="bob", last_activity_at=now - timedelta(hours=30))
    since = now - timedelta(hours=24)
    assert sql.bump_live_session("alice", now=now, live_since=since, using="default") == live.pk
    assert Session.objects.get(pk=live.pk).last_activity_at == now
    assert sql.bump_live_session("bob", now=now, live_since=since, using="default") is None
    assert sql.bump_live_session("carol", now=now, live_since=since, using="default") is None


def test_count_duplicate_counts_the_newest_live_twin_and_returns_it(db):
    now = timezone.now()
    session, other = SessionFactory(user_id="alice"), SessionFactory(user_id="alice", completed=True)
    old = ObservationFactory(session=other, title="T", content="C", created_at=now - timedelta(minutes=5))
    new = ObservationFactory(session=other, title="T", content="C", created_at=now - timedelta(minutes=1))
    ObservationFactory(session=other, title="T", content="C", created_at=now, deleted_at=now)
    counted = sql.count_duplicate(
        user_id="alice", digest=new.dedupe_hash, since=now - timedelta(minutes=15), session_id=session.pk,
        now=now, blocks=1, topic_key="a-topic", using="default",
    )
    assert isinstance(counted, Observation) and counted.id == new.pk and counted.duplicate_count == 2
    assert counted.session_id == session.pk
    assert counted.created_at == new.created_at and counted.metadata == new.metadata
    assert counted.topic_key == "a-topic" and counted.redacted_blocks == 1 and counted.last_seen_at == now
    assert Observation.objects.get(pk=old.pk).duplicate_count == 1


def test_count_duplicate_outside_the_window_or_of_another_user_is_none(db):
    now = timezone.now()
    twin = ObservationFactory(session=SessionFactory(user_id="alice"), created_at=now - timedelta(minutes=20))
    for user_id, since in (("alice", now - timedelta(minutes=15)), ("bob", now - timedelta(days=1))):
        assert sql.count_duplicate(
            user_id=user_id, digest=twin.dedupe_hash, since=since, session_id=twin.session_id, now=now,
            blocks=0, topic_key=None, using="default",
        ) is None


def test_ranked_context_orders_by_score_then_update_then_id(db):
    now = timezone.now()
    session = SessionFactory(user_id="alice")
    tied = [ObservationFactory(session=session, updated_at=now) for _ in range(3)]
    decision = ObservationFactory(session=session, type="decision", updated_at=now - timedelta(hours=20))
    ObservationFactory(session=SessionFactory(user_id="bob"), type="decision", updated_at=now)
    rows = sql.ranked_context("alice", now=now, type_weights=get_config().TYPE_WEIGHTS, head_chars=11,
                              candidates=200, limit=3, using="default")
    assert [r.id for r in rows] == [decision.pk, *sorted((t.pk for t in tied), key=lambda pk: pk.hex, reverse=True)[:2]]
    assert rows[0].score == pytest.approx(1.5 * 0.995**20) and rows[0].content_head == decision.content[:11]


def write_history(user_id: str, count: int, *, newest):
    session = SessionFactory(user_id=user_id)
    Observation.objects.bulk_create(
        (Observation(session=session, user_id=user_id, title=f"t{k}", content="x", dedupe_hash=str(k),
                     created_at=newest - timedelta(minutes=k), updated_at=newest - timedelta(minutes=k),
                     last_seen_at=newest)
         for k in range(count)),
        batch_size=2000,
    )


@pytest.mark.parametrize("heavy, others", [(40000, 5000), (10000, 10000)])
def test_ranked_context_reads_the_users_own_index_in_order(db, heavy, others):
    """A heavy user whose rows are older than everybody else's made PostgreSQL walk the
    all-users (updated_at) index with ``user_id = x``, skipping the others' rows one by one."""
    now = timezone.now()
    write_history("heavy", heavy, newest=now - timedelta(days=30))
    write_history("busy", others, newest=now)
    config = get_config()
    statement = sql.ranked_context_sql(connection.vendor, len(config.TYPE_WEIGHTS), 200, 10)
    now_param = Observation._meta.get_field("updated_at").get_db_prep_value(now, connection)
    from ilab_memory import scoring

    params = [301, *scoring.factor_params(now_param=now_param, type_weights=config.TYPE_WEIGHTS), "heavy"]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute(("EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN ") + statement, params)
        rows = cursor.fetchall()
    if connection.vendor == "sqlite":
        candidates = next(node for node, _, _, detail in rows if detail == "CO-ROUTINE c")
        plan = " ".join(detail for _, parent, _, detail in rows if parent == candidates)
    else:
        plan = " ".join(str(part) for row in rows for part in row)
    assert "ilab_mem_obs_user_updated" in plan
    assert "ilab_mem_obs_updated " not in plan + " "  # the all-users index
    assert "Bitmap" not in plan and "TEMP B-TREE" not in plan  # read in order, not sorted
