"""The operator console's overview at 1M observations: how long its queries take.

    .venv/bin/python -m benchmarks.perf_admin                                              # SQLite
    DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.perf_admin    # PostgreSQL

Loads 1,000,000 observations (HistoryWriter: 100 users of 10,000 memories spread over a year,
sessions of 50), then 2,000 expired sessions still open and 50,000 memories queued for a vector,
and times ``selectors_admin.overview`` (every query the overview page runs besides Django's own
session and user lookups) and a user's page reads (``selectors.stats`` and the latest rows of a
10,000-memory user). Prints the median of 5 warm runs, and the time and the plan (what each
step scans) of each query of one run.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from datetime import timedelta

from .perf_env import configure_django, create_scratch, versions

USERS, PER_USER = 100, 10_000
EXPIRED_OPEN, QUEUED = 2_000, 50_000
RUNS = 5


def load() -> None:
    from django.db import connection
    from django.utils import timezone

    from ilab_memory.models import Observation, ObservationVector, Session, SessionStatus

    from .perf_data import BulkLoad, HistoryWriter  # after Django is configured

    writer = HistoryWriter()
    with BulkLoad():
        writer.add_users([(f"user-{n}", PER_USER) for n in range(USERS)], label="1M observations")
    now = timezone.now()
    Session.objects.bulk_create(
        [
            Session(id=uuid.uuid4(), user_id=f"idle-{n}", status=SessionStatus.ACTIVE,
                    started_at=now - timedelta(days=3), last_activity_at=now - timedelta(days=2, minutes=n))
            for n in range(EXPIRED_OPEN)
        ],
        batch_size=1000,
    )
    ids = list(Observation.objects.order_by().values_list("pk", "user_id")[:QUEUED])
    ObservationVector.objects.bulk_create(
        [ObservationVector(observation_id=pk, user_id=user_id, queued_at=now) for pk, user_id in ids], batch_size=1000
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would leave them after a load


def timed(fn) -> tuple[float, list[tuple[float, str]]]:
    """Median seconds of ``RUNS`` warm calls, and (seconds, SQL) of each query of the last one."""
    from django.db import connection

    fn()  # warm
    times, queries = [], []

    def record(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            queries.append((time.perf_counter() - start, sql, params))

    for _ in range(RUNS):
        queries.clear()
        with connection.execute_wrapper(record):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times), list(queries)


def plan(sql: str, params) -> list[str]:
    """The database's plan of one statement: which table or index each step reads."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("EXPLAIN " + sql, params)
            return [row[0] for row in cursor.fetchall() if "Scan" in row[0]]
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return [row[-1] for row in cursor.fetchall()]


def report(label: str, fn) -> None:
    median, queries = timed(fn)
    print(f"{label}: {median * 1000:.1f} ms median of {RUNS}, {len(queries)} queries")
    for seconds, sql, params in queries:
        print(f"    {seconds * 1000:7.1f} ms  {sql[:150]}")
        for step in plan(sql, params):
            print(f"                 {step.strip()}")


def main(argv=None) -> int:
    scratch = create_scratch("admin")
    configure_django(scratch)
    print(versions(scratch))
    load()

    from django.utils import timezone

    from ilab_memory import selectors, selectors_admin
    from ilab_memory.conf import get_config
    from ilab_memory.models import Observation

    print(f"rows: {Observation.objects.count()} observations")
    config = get_config()
    report("overview", lambda: selectors_admin.overview(now=timezone.now(), timeout_hours=config.SESSION_TIMEOUT_HOURS))

    def user_page():
        selectors.stats(user_id="user-7", config=config)
        selectors_admin.user_recent_sessions(user_id="user-7", limit=20)
        selectors_admin.user_recent_observations(user_id="user-7", limit=20)

    report("user page (10,000 memories)", user_page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
