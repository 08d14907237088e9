"""The database ranks context candidates exactly as Python would: same floats, same order."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from ilab_memory.conf import get_config
from ilab_memory.selectors import _ranked_in_python
from ilab_memory.services import scoring
from ilab_memory.services.statements import Statements
from tests.factories import ObservationFactory, SessionFactory
from tests.plans import custom_and_generic_plans
from tests.test_dbvalues import database_time_zone

TYPES = ["decision", "manual", "preference", "bugfix", "unlisted-type"]


def varied_history(user_id: str, n: int, *, seed: int):
    """Observations with awkward timestamps: whole seconds, shared instants, the future."""
    rng = random.Random(seed)
    session = SessionFactory(user_id=user_id)
    now = timezone.now()
    shared = now - timedelta(hours=3, microseconds=17)
    for _ in range(n):
        roll = rng.random()
        if roll < 0.15:
            updated = shared
        elif roll < 0.25:
            updated = (now - timedelta(hours=rng.randint(0, 900))).replace(microsecond=0)
        elif roll < 0.3:  # a fraction that rounds up at millisecond precision
            updated = (now - timedelta(hours=rng.randint(0, 900))).replace(microsecond=999_600 + rng.randint(0, 399))
        elif roll < 0.35:
            updated = now + timedelta(minutes=rng.randint(1, 90))  # clock skew: hours clamp to 0
        else:
            updated = now - timedelta(microseconds=rng.randint(0, 10**13))
        ObservationFactory(
            session=session, user_id=user_id, type=rng.choice(TYPES), created_at=updated, updated_at=updated,
            revision_count=rng.choice([1, 1, 2, 7]), duplicate_count=rng.choice([1, 3, 40]),
        )
    return now


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sql_scores_are_the_python_floats_bit_for_bit(db, seed):
    now = varied_history("alice", 120, seed=seed)
    config = get_config()
    statements = Statements("default")
    assert statements.ranks_context_in_sql
    rows = statements.ranked_context(
        "alice", now=now, type_weights=config.TYPE_WEIGHTS, head_chars=301, candidates=200, limit=200
    )
    assert len(rows) == 120
    for row in rows:
        updated_at = statements.values.datetime(row[5])
        expected = scoring.context_value(
            hours=scoring.hours_between(updated_at, now),
            type_weight=float(config.TYPE_WEIGHTS.get(row[1], 1.0)),
            extra=scoring.reinforcing_uses(row[7], row[8]),
        )
        assert row[9] == expected  # equal floats, not approximately


@pytest.mark.parametrize("limit", [10, 200])
def test_sql_ranking_is_the_python_ranking(db, limit):
    now = varied_history("alice", 150, seed=limit)
    varied_history("bob", 30, seed=99)  # another user's rows never compete
    config = get_config()
    statements = Statements("default")
    in_sql = statements.ranked_context(
        "alice", now=now, type_weights=config.TYPE_WEIGHTS, head_chars=301, candidates=120, limit=limit
    )
    in_python = _ranked_in_python(statements, "alice", now=now, limit=limit,
                                  config=get_config({"CONTEXT_CANDIDATES": 120}))
    assert [row[0] for row in in_sql] == [row[0] for row in in_python]


def test_sql_ranking_follows_the_configured_weights(db):
    now = varied_history("alice", 40, seed=5)
    config = get_config({"TYPE_WEIGHTS": {"bugfix": 9.0}})
    statements = Statements("default")
    in_sql = statements.ranked_context(
        "alice", now=now, type_weights=config.TYPE_WEIGHTS, head_chars=301, candidates=200, limit=10
    )
    in_python = _ranked_in_python(statements, "alice", now=now, limit=10, config=config)
    assert [row[0] for row in in_sql] == [row[0] for row in in_python]
    assert in_sql[0][1] == "bugfix"


def test_local_time_sqlite_ranks_in_python(mem, clock):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("only SQLite stores naive local times")
    with database_time_zone("America/New_York"):
        assert not Statements("default").ranks_context_in_sql
        mem.mem_save("alice", "T", "C")
        assert [m.title for m in mem.mem_context("alice")] == ["T"]


def test_context_reads_the_users_own_index_even_when_others_wrote_since(db):
    """A heavy user whose rows are older than everybody else's must not make the planner walk
    the all-users (updated_at) index and skip the others' rows (PostgreSQL did, with ``=``)."""
    from django.db import connection

    from ilab_memory.models import Observation
    from ilab_memory.services.statements import ranked_context_sql

    if connection.vendor != "postgresql":
        pytest.skip("SQLite's planner picks the user's index either way")
    # Big enough that PostgreSQL 15 picked the wrong index with ``user_id = x`` (checked).
    now = timezone.now()
    heavy, busy = SessionFactory(user_id="heavy"), SessionFactory(user_id="busy")
    Observation.objects.bulk_create(
        ObservationFactory.build(session=heavy, user_id="heavy", created_at=now - timedelta(days=30, minutes=k),
                                 updated_at=now - timedelta(days=30, minutes=k))
        for k in range(40000)
    )
    Observation.objects.bulk_create(
        ObservationFactory.build(session=busy, user_id="busy", created_at=now - timedelta(minutes=k),
                                 updated_at=now - timedelta(minutes=k))
        for k in range(5000)
    )
    config = get_config()
    sql = ranked_context_sql(connection.vendor, len(config.TYPE_WEIGHTS), 200, 10)
    params = [301, *scoring.context_value_params(now=now, type_weights=config.TYPE_WEIGHTS), "heavy", "heavy"]
    custom_plan, generic_plan = custom_and_generic_plans(sql, params)
    for plan in (custom_plan, generic_plan):
        assert "ilab_mem_obs_user_updated" in plan
        assert "ilab_mem_obs_updated " not in plan + " "
