"""admin/common.py: big-table lists that never count the whole table nor load long text, and whose
query count does not grow with the page."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ilab_memory import admin as memory_admin
from ilab_memory.models import Session
from tests.admin.pages import OBSERVATIONS, SESSIONS, session_url
from tests.factories import ObservationFactory, ObservationRevisionFactory, SessionFactory


@pytest.mark.parametrize(
    "url, params",
    [
        (SESSIONS, {}),
        (SESSIONS, {"summary_kind": "auto", "q": "Memories"}),
        (OBSERVATIONS, {}),
        (OBSERVATIONS, {"session_summary_kind": "auto", "state": "live", "q": "Note"}),
    ],
)
def test_changelist_query_count_does_not_grow_with_the_page(admin_client, db, url, params):
    def seed(n):
        for _ in range(n):
            session = SessionFactory(completed=True, summary="Memories: x", is_auto_generated=True)
            ObservationFactory.create_batch(2, session=session, title="Note")
            ObservationRevisionFactory(observation__session=session, observation__title="Note")

    seed(2)
    small = queries_for(admin_client, url, params)
    seed(20)
    big = queries_for(admin_client, url, params)
    assert len(big) == len(small)

def test_changelist_never_counts_the_whole_table_nor_loads_long_text(admin_client, mix):
    for url in (OBSERVATIONS, SESSIONS):
        counts = [sql.upper() for sql in queries_for(admin_client, url) if sql.upper().startswith("SELECT COUNT(")]
        # One capped count (COUNT over a LIMITed subquery), never a full COUNT(*) of the table.
        assert len(counts) == 1 and "LIMIT" in counts[0], counts
    listing = [sql for sql in queries_for(admin_client, OBSERVATIONS) if "ORDER BY" in sql.upper()]
    assert listing and all('."content"' not in sql and '."metadata"' not in sql for sql in listing)

def test_session_change_page_query_count_does_not_grow_with_its_observations(admin_client, db):
    small, big = SessionFactory(), SessionFactory()
    ObservationFactory.create_batch(2, session=small)
    ObservationFactory.create_batch(40, session=big)
    assert len(queries_for(admin_client, session_url(small))) == len(queries_for(admin_client, session_url(big)))

def test_capped_paginator_counts_at_most_its_cap(db):
    SessionFactory.create_batch(5)

    class ThreeAtMost(memory_admin.CappedCountPaginator):
        cap = 3

    assert ThreeAtMost(Session.objects.order_by("pk"), 2).count == 3
    assert memory_admin.CappedCountPaginator(Session.objects.order_by("pk"), 2).count == 5


def queries_for(client, url, params=None) -> list[str]:
    client.get(url, params or {})  # warm up: the first request of a login may refresh its session row
    with CaptureQueriesContext(connection) as context:
        assert client.get(url, params or {}).status_code == 200
    return [q["sql"] for q in context.captured_queries]
