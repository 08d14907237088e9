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
from ilab_memory.services.statements import Statements
from tests.factories import ObservationFactory, SessionFactory

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's one-statement start")


def claim(user_id: str, *, now=None):
    config = get_config()
    now = now or timezone.now()
    return Statements("default").claim_start(
        user_id, now=now, live_since=now - timedelta(hours=config.SESSION_TIMEOUT_HOURS), sessions=5,
        type_weights=config.TYPE_WEIGHTS, head_chars=301, candidates=200, limit=10,
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


def test_an_expired_session_is_left_to_the_slow_path_untouched(db):
    expired_at = timezone.now() - timedelta(hours=30)
    session = SessionFactory(user_id="alice", last_activity_at=expired_at)
    assert claim("alice") is None
    session.refresh_from_db()
    assert (session.status, session.last_activity_at) == (SessionStatus.ACTIVE, expired_at)
    assert Session.objects.filter(user_id="alice").count() == 1


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


@pytest.mark.django_db(transaction=True)
def test_a_start_that_loses_the_race_to_open_joins_the_winner(tmem):
    import psycopg

    settings = connection.settings_dict
    other = psycopg.connect(dbname=settings["NAME"], host=settings["HOST"], port=settings["PORT"] or 5432,
                            user=settings["USER"])
    winner_id = uuid.uuid4()
    now = timezone.now()
    # The winner has inserted the user's first session and not committed yet.
    other.execute(
        "INSERT INTO ilab_memory_session (id, user_id, status, started_at, last_activity_at, "
        "is_auto_generated, redacted_blocks) VALUES (%s, 'alice', 'active', %s, %s, false, 0)",
        (winner_id, now, now),
    )
    result = {}

    def start():
        try:
            result["response"] = tmem.mem_session_start("alice")
        finally:
            connection.close()

    starter = threading.Thread(target=start)
    starter.start()
    time.sleep(0.3)  # the starter is now waiting on the winner's uncommitted row
    other.commit()
    other.close()
    starter.join(timeout=30)
    response = result["response"]
    assert (response.session_id, response.is_new) == (str(winner_id), False)
    assert Session.objects.filter(user_id="alice").count() == 1


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
