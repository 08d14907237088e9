"""Hot paths issue a fixed number of queries, however long the user's history is."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import ObservationFactory, SessionFactory


TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")


def queries_of(fn) -> int:
    """Statements that touch data (transaction control differs between a test and production)."""
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return sum(1 for q in ctx.captured_queries if not q["sql"].upper().startswith(TRANSACTION_CONTROL))


def on(*, sqlite: int, postgresql: int) -> int:
    return postgresql if connection.vendor == "postgresql" else sqlite


def grow_history(user_id: str, n: int) -> None:
    session = SessionFactory(user_id=user_id)
    ObservationFactory.create_batch(n, session=session, user_id=user_id)
    for _ in range(3):
        SessionFactory(user_id=user_id, completed=True)


@pytest.mark.parametrize("size", [5, 250])
def test_session_start_reuse_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_session_start("alice")
    # find-and-bump the live session, completed sessions with their counts, ranked memories
    assert queries_of(lambda: mem.mem_session_start("alice")) == 3


@pytest.mark.parametrize("size", [5, 250])
def test_session_start_new_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_session_end("alice", summary="done")
    # the bump finds no live session; (PostgreSQL: the user's lock), the locked read of the
    # active session, insert one, completed sessions, ranked memories
    assert queries_of(lambda: mem.mem_session_start("alice")) == on(sqlite=5, postgresql=6)


@pytest.mark.parametrize("size", [5, 250])
def test_save_create_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_session_start("alice")
    # find-and-bump the session, count a duplicate (none), insert
    assert queries_of(lambda: mem.mem_save("alice", "New", "Body")) == 3


@pytest.mark.parametrize("size", [5, 250])
def test_save_duplicate_and_revise_query_counts_are_constant(mem, size):
    grow_history("alice", size)
    mem.mem_save("alice", "Dup", "Body")
    mem.mem_save("alice", "Topic", "Body", topic_key="t")
    duplicate = queries_of(lambda: mem.mem_save("alice", "Dup", "Body"))
    revise = queries_of(lambda: mem.mem_save("alice", "Topic", "Body 2", topic_key="t"))
    # duplicate: bump, count it; revise: bump, lock the topic's row, keep its revision, replace
    assert (duplicate, revise) == (2, 4)


@pytest.mark.parametrize("size", [5, 250])
def test_context_query_count_is_one(mem, size):
    grow_history("alice", size)
    assert queries_of(lambda: mem.mem_context("alice")) == 1


def test_auto_close_on_start_adds_a_fixed_number_of_queries(mem, clock):
    grow_history("alice", 40)
    clock.shift(timedelta(days=2))
    # the bump finds none live; (PostgreSQL: the user's lock), the locked read finds it
    # expired; the synthetic summary's items and their overflow count, the close, insert the
    # new session, the two reads
    assert queries_of(lambda: mem.mem_session_start("alice")) == on(sqlite=8, postgresql=9)


@pytest.mark.parametrize("size", [5, 250])
def test_search_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_save("alice", "Celery retry policy", "Tasks retry with backoff.")
    mem.mem_search("alice", "retry")  # the SQLite index self-check runs once per call, counted below
    assert queries_of(lambda: mem.mem_search("alice", "retry")) in (1, 2)
    assert queries_of(lambda: mem.mem_search("alice", "retry backoff nothingmatches")) in (1, 2)


def test_search_query_count_does_not_grow_with_history(mem):
    grow_history("alice", 5)
    mem.mem_save("alice", "Celery retry policy", "Tasks retry with backoff.")
    small = queries_of(lambda: mem.mem_search("alice", "retry"))
    session = SessionFactory(user_id="alice", completed=True)
    ObservationFactory.create_batch(200, session=session, user_id="alice", title="retry retry")
    assert queries_of(lambda: mem.mem_search("alice", "retry")) == small
