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
    # find-and-bump the live session, completed sessions with their counts, ranked memories:
    # one statement on PostgreSQL (a round trip each costs more than the work)
    assert queries_of(lambda: mem.mem_session_start("alice")) == on(sqlite=3, postgresql=1)


@pytest.mark.parametrize("size", [5, 250])
def test_session_start_new_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_session_end("alice", summary="done")
    # SQLite: the bump finds no live session; open one (the user has no active session),
    # completed sessions, ranked memories. PostgreSQL: one statement opens the session and reads.
    assert queries_of(lambda: mem.mem_session_start("alice")) == on(sqlite=4, postgresql=1)


@pytest.mark.parametrize("size", [5, 250])
def test_save_create_query_count_is_constant(mem, size):
    grow_history("alice", size)
    mem.mem_session_start("alice")
    # find-and-bump the session, count a duplicate (none), insert (the last two are one
    # statement on PostgreSQL)
    assert queries_of(lambda: mem.mem_save("alice", "New", "Body")) == on(sqlite=3, postgresql=2)


@pytest.mark.parametrize("size", [5, 250])
def test_save_duplicate_and_revise_query_counts_are_constant(mem, size):
    grow_history("alice", size)
    mem.mem_save("alice", "Dup", "Body")
    mem.mem_save("alice", "Topic", "Body", topic_key="t")
    duplicate = queries_of(lambda: mem.mem_save("alice", "Dup", "Body"))
    revise = queries_of(lambda: mem.mem_save("alice", "Topic", "Body 2", topic_key="t"))
    # duplicate: bump, count it; revise: bump, find the topic and keep its revision, replace
    # (the last two are one statement on PostgreSQL)
    assert (duplicate, revise) == (2, on(sqlite=3, postgresql=2))


@pytest.mark.parametrize("size", [5, 250])
def test_context_query_count_is_one(mem, size):
    grow_history("alice", size)
    assert queries_of(lambda: mem.mem_context("alice")) == 1


def test_auto_close_on_start_adds_a_fixed_number_of_queries(mem, clock):
    grow_history("alice", 40)
    clock.shift(timedelta(days=2))
    # SQLite: the bump and the open find the expired session; select it, the synthetic summary
    # items, their overflow count, the close, insert the new session, the two reads.
    # PostgreSQL: the start statement, which closes it, opens the next and reads.
    assert queries_of(lambda: mem.mem_session_start("alice")) == on(sqlite=9, postgresql=1)
