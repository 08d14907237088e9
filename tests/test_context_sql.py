"""The database ranks context candidates exactly as Python would: same floats, same order."""

import random
import re
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


# Weights whose decimal repr is not what they hold (0.1 + 0.2 is 0.30000000000000004).
AWKWARD_WEIGHTS = {"decision": 2 / 3, "manual": 0.1 + 0.2, "preference": 1.1, "bugfix": 3}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("overrides", [
    {}, {"TYPE_WEIGHTS": AWKWARD_WEIGHTS},
    # Bound on the client (PostgreSQL: Django's ClientCursor), the weights arrive as decimals.
    {"TYPE_WEIGHTS": AWKWARD_WEIGHTS, "PREPARED_STATEMENTS": False},
], ids=["defaults", "awkward weights", "awkward weights bound on the client"])
def test_sql_scores_are_the_python_floats_bit_for_bit(db, seed, overrides, settings):
    settings.ILAB_MEMORY = overrides
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


def write_history(user_id: str, count: int, *, newest):
    from ilab_memory.models import Observation

    session = SessionFactory(user_id=user_id)
    Observation.objects.bulk_create(
        ObservationFactory.build(session=session, user_id=user_id, created_at=newest - timedelta(minutes=k),
                                 updated_at=newest - timedelta(minutes=k))
        for k in range(count)
    )


def heavy_user_older_than_the_others(now):
    """A heavy user whose rows are older than everybody else's: PostgreSQL 15 walked the
    all-users (updated_at) index with ``user_id = x`` and skipped the others' rows (checked)."""
    write_history("heavy", 40000, newest=now - timedelta(days=30))
    write_history("busy", 5000, newest=now)


def two_users_on_a_small_table(now):
    """Two histories of a year, as the benchmark writes them: with ``BETWEEN x AND x`` the
    generic plan guessed 0.5 % of the rows for the user and sorted all 10,000 (checked)."""
    from benchmarks.perf_data import HistoryWriter

    HistoryWriter().add_users([("other", 10000), ("heavy", 10000)], label="histories")


@pytest.mark.parametrize("history", [heavy_user_older_than_the_others, two_users_on_a_small_table])
def test_context_reads_the_users_own_index_in_order(db, history):
    from django.db import connection

    from ilab_memory.services.statements import ranked_context_sql

    now = timezone.now()
    history(now)
    config = get_config()
    sql = ranked_context_sql(connection.vendor, len(config.TYPE_WEIGHTS), 200, 10)
    params = [301, *scoring.context_value_params(now=now, type_weights=config.TYPE_WEIGHTS), "heavy"]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            rows = cursor.fetchall()
        candidates = next(node for node, _, _, detail in rows if detail == "CO-ROUTINE c")
        # Only the candidates' reading: the ranking above them sorts the 200 scores.
        plans = [" ".join(detail for _, parent, _, detail in rows if parent == candidates)]
    else:
        plans = custom_and_generic_plans(sql, params)
        # The generic plan is made without the user: it must still expect the user to fill the
        # candidate limit, or a cost guess close to the edge may sort all of the user's rows.
        ordered_scan = re.search(r"Index Scan using ilab_mem_obs_user_updated on \w+ +\(cost=\S+ rows=(\d+)", plans[1])
        assert ordered_scan and int(ordered_scan[1]) >= config.CONTEXT_CANDIDATES
    for plan in plans:
        assert "ilab_mem_obs_user_updated" in plan
        assert "ilab_mem_obs_updated " not in plan + " "  # the all-users index
        assert "Bitmap" not in plan and "TEMP B-TREE" not in plan  # the user's rows read in order, not sorted
