"""PostgreSQL: a start is one prepared statement that bumps or opens the session and reads."""

import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from ilab_memory.conf import get_config
from ilab_memory.models import Session, SessionStatus
from ilab_memory.services.statements import Statements, claim_start_sql
from tests.factories import ObservationFactory, SessionFactory

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's one-statement start")


def claim(user_id: str, *, now=None):
    config = get_config()
    now = now or timezone.now()
    return Statements("default").claim_start(
        user_id, now=now, timeout=timedelta(hours=config.SESSION_TIMEOUT_HOURS), sessions=5,
        type_weights=config.TYPE_WEIGHTS, head_chars=301, candidates=200, limit=10,
        summary_prefix=config.AUTO_SUMMARY_PREFIX, summary_items=config.AUTO_SUMMARY_MAX_ITEMS,
    )


def prepared_statements() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


def test_it_opens_the_first_session_then_bumps_it(db):
    ObservationFactory(user_id="alice", session=SessionFactory(user_id="alice", completed=True))
    opened_id, is_new, recent, ranked = claim("alice")
    assert is_new and len(recent) == 1 and len(ranked) == 1
    later = timezone.now() + timedelta(minutes=5)
    bumped_id, is_new, _, _ = claim("alice", now=later)
    assert (bumped_id, is_new) == (opened_id, False)
    assert Session.objects.get(pk=opened_id).last_activity_at == later


def test_an_expired_session_is_closed_and_the_next_opened_by_the_same_statement(db):
    expired_at = timezone.now() - timedelta(hours=30)
    session = SessionFactory(user_id="alice", last_activity_at=expired_at)
    ObservationFactory(user_id="alice", session=session, title="Kept", type="decision")
    opened_id, is_new, recent, _ = claim("alice")
    session.refresh_from_db()
    assert is_new and opened_id != session.pk
    assert (session.status, session.ended_at) == (SessionStatus.COMPLETED, expired_at + timedelta(hours=24))
    assert (session.summary, session.is_auto_generated) == ("Memorias registradas: [decision] Kept", True)
    # The reads see the session it closed, although their snapshot still holds it as active.
    assert [row[0] for row in recent] == [session.pk] and recent[0][3] == session.summary and recent[0][5] == 1
    assert Session.objects.get(user_id="alice", status=SessionStatus.ACTIVE).pk == opened_id


def test_the_statements_run_prepared(mem):
    mem.mem_session_start("alice")
    mem.mem_save("alice", "Title", "Body")
    prepared = prepared_statements()
    assert any("WITH bumped AS" in text for text in prepared)
    assert any("WITH twin AS" in text for text in prepared)  # the save's count-or-insert


def test_while_django_logs_queries_they_run_unprepared_with_their_sql_in_the_log(mem):
    with CaptureQueriesContext(connection) as queries:
        mem.mem_session_start("alice")
    assert not any("WITH bumped AS" in text for text in prepared_statements())
    assert "WITH bumped AS" in queries.captured_queries[0]["sql"]
    assert "'alice'" in queries.captured_queries[0]["sql"]


def test_prepared_statements_can_be_turned_off(mem):
    mem.mem_session_start("alice")  # opens the session (its statement may be prepared: on by default)
    before = prepared_statements()
    with override_settings(ILAB_MEMORY={"PREPARED_STATEMENTS": False}):
        mem.mem_save("bob", "Title", "Body")
        mem.mem_session_start("carol")
        mem.mem_context("carol")
    assert prepared_statements() == before


def test_errors_from_a_prepared_statement_are_djangos(db):
    statements = Statements("default")
    statements.insert_session("alice", now=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        statements.insert_session("alice", now=timezone.now())


def other_connection():
    import psycopg

    settings = connection.settings_dict
    return psycopg.connect(dbname=settings["NAME"], host=settings["HOST"], port=settings["PORT"] or 5432,
                           user=settings["USER"])


def start_while(tmem, other, user_id: str):
    """Start ``user_id`` while ``other`` holds an uncommitted write it waits for; then commit it."""
    result = {}

    def start():
        try:
            result["response"] = tmem.mem_session_start(user_id)
        finally:
            connection.close()

    starter = threading.Thread(target=start)
    starter.start()
    time.sleep(0.3)  # the starter is now waiting on the other's uncommitted row
    other.commit()
    other.close()
    starter.join(timeout=30)
    return result["response"]


@pytest.mark.django_db(transaction=True)
def test_a_start_that_loses_the_race_to_open_joins_the_winner(tmem):
    other = other_connection()
    winner_id = uuid.uuid4()
    now = timezone.now()
    # The winner has inserted the user's first session and not committed yet.
    other.execute(
        "INSERT INTO ilab_memory_session (id, user_id, status, started_at, last_activity_at, "
        "is_auto_generated, redacted_blocks) VALUES (%s, 'alice', 'active', %s, %s, false, 0)",
        (winner_id, now, now),
    )
    response = start_while(tmem, other, "alice")
    assert (response.session_id, response.is_new) == (str(winner_id), False)
    assert Session.objects.filter(user_id="alice").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_start_that_waited_for_a_concurrent_end_keeps_its_summary_and_opens_anew(tmem):
    expired = SessionFactory(user_id="alice", last_activity_at=timezone.now() - timedelta(hours=30))
    other = other_connection()
    # mem_session_end in another process: the expired session closed now, with a human summary.
    other.execute(
        "UPDATE ilab_memory_session SET status = 'completed', ended_at = now(), summary = 'Ended by hand' "
        "WHERE id = %s", (expired.pk,),
    )
    response = start_while(tmem, other, "alice")
    expired.refresh_from_db()
    assert (expired.summary, expired.is_auto_generated) == ("Ended by hand", False)  # not auto-closed over it
    assert response.is_new and response.session_id != str(expired.pk)
    assert [s.summary for s in response.sessions_context] == ["Ended by hand"]
    assert Session.objects.filter(user_id="alice", status=SessionStatus.ACTIVE).count() == 1


def show(setting: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {setting}")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_reuse_on_its_own_skips_the_flush_for_that_commit_only(tmem):
    tmem.mem_session_start("alice")
    with CaptureQueriesContext(connection) as queries:
        tmem.mem_session_start("alice")
    assert "set_config('synchronous_commit', 'off', true)" in queries.captured_queries[0]["sql"]
    tmem.mem_session_start("alice")  # prepared, as in production
    assert show("synchronous_commit") == "on"  # the setting ended with the start's own transaction


@pytest.mark.django_db(transaction=True)
def test_inside_a_callers_transaction_the_commit_waits_for_the_flush(tmem):
    tmem.mem_session_start("alice")
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            tmem.mem_session_start("alice")
        tmem.mem_session_start("alice")
        assert show("synchronous_commit") == "on"
    assert "synchronous_commit" not in queries.captured_queries[0]["sql"]


@pytest.mark.django_db(transaction=True)
def test_the_connection_keeps_generic_plans_unless_the_site_prepares_its_own(tmem):
    connection.close()
    tmem.mem_session_start("alice")
    assert show("plan_cache_mode") == "force_generic_plan"
    connection.close()
    connection.ensure_connection()
    connection.connection.prepare_threshold = 5  # as OPTIONS {"prepare_threshold": 5} would
    tmem.mem_session_start("alice")
    assert show("plan_cache_mode") == "auto"


def test_the_start_statement_is_short_enough_for_psycopgs_query_cache():
    """psycopg caches the parse of a query's placeholders only up to 4,096 characters; a longer
    start statement was parsed again on every call (0.28 ms of a 2.5 ms start, measured)."""
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    config = get_config()
    for relax_commit in (False, True):
        sql = claim_start_sql(len(config.TYPE_WEIGHTS), config.CONTEXT_SESSIONS, config.CONTEXT_CANDIDATES,
                              config.CONTEXT_MEMORIES, config.AUTO_SUMMARY_MAX_ITEMS, relax_commit=relax_commit)
        assert len(sql) <= MAX_CACHED_STATEMENT_LENGTH
