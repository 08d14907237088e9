"""Hot paths issue a fixed number of queries, however long the user's history is."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ilab_memory.services.embedding import embed_waiting, queue_missing
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
    # find-and-bump the session, count a duplicate (none), insert, queue its vector
    assert queries_of(lambda: mem.mem_save("alice", "New", "Body")) == 4


@pytest.mark.parametrize("size", [5, 250])
def test_save_duplicate_and_revise_query_counts_are_constant(mem, size):
    grow_history("alice", size)
    mem.mem_save("alice", "Dup", "Body")
    mem.mem_save("alice", "Topic", "Body", topic_key="t")
    duplicate = queries_of(lambda: mem.mem_save("alice", "Dup", "Body"))
    revise = queries_of(lambda: mem.mem_save("alice", "Topic", "Body 2", topic_key="t"))
    # duplicate: bump, count it (its vector stays); revise: bump, lock and read the topic's row
    # (one more than the former copy-in-SQL), keep its revision, save it, queue its vector again
    assert (duplicate, revise) == (2, 5)


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


WORDS_ONLY = {"EMBEDDER": None}
# A search embeds its budget of the queue itself; no background embedder writes meanwhile.
RECORDING = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}


def searched_history(mem, settings, setting: dict, size: int, *, unrelated: bool = False):
    """``mem`` under ``setting``, Alice's history of ``size`` and a memory about retries (and
    with ``unrelated`` one a search for them finds by meaning only), searched once (the queue
    embedded, the matrix loaded): what the next search costs is its own."""
    settings.ILAB_MEMORY = setting
    grow_history("alice", size)
    mem.mem_save("alice", "Celery retry policy", "Tasks retry with backoff.")
    if unrelated:
        mem.mem_save("alice", "Deploy", "Restart the workers.")
    mem.mem_search("alice", "retry")
    return mem


@pytest.mark.parametrize("size", [5, 250])
@pytest.mark.parametrize("setting, expected", [
    # the engine's query, on SQLite too: no self-check of the index (``post_migrate`` repairs it)
    (WORDS_ONLY, on(sqlite=1, postgresql=1)),
    # and: the user's queue (empty), the user's vector stamp (the matrix is cached), that the
    # nearest rows are still stored as loaded, the rows of candidates found by meaning only;
    # then the user's null, for the candidates whose words are not enough (its stamp)
    (RECORDING, on(sqlite=6, postgresql=6)),
])
def test_search_query_count_is_constant(tmem, settings, size, setting, expected):
    """Committed rows (tmem): a matrix read inside a transaction is never cached."""
    mem = searched_history(tmem, settings, setting, size, unrelated=True)
    assert queries_of(lambda: mem.mem_search("alice", "retry")) == expected
    assert queries_of(lambda: mem.mem_search("alice", "retry backoff nothingmatches")) == expected


def test_a_search_asks_nothing_of_the_schema(tmem, settings):
    """The index's triggers are repaired by ``post_migrate`` and a SQLite connection gets its
    terms table when it opens: a search reads no schema table, not even on a new connection."""
    settings.ILAB_MEMORY = WORDS_ONLY
    tmem.mem_save("alice", "Celery retry policy", "Tasks retry with backoff.")
    connection.close()
    with CaptureQueriesContext(connection) as ctx:
        assert [r.title for r in tmem.mem_search("alice", "retry")] == ["Celery retry policy"]
    assert [q["sql"] for q in ctx.captured_queries if "sqlite_" in q["sql"] or "pg_catalog" in q["sql"]] == []


@pytest.mark.parametrize("setting", [WORDS_ONLY, RECORDING])
def test_search_query_count_does_not_grow_with_history(tmem, settings, setting):
    mem = searched_history(tmem, settings, setting, 5)
    small = queries_of(lambda: mem.mem_search("alice", "retry"))
    for k in range(30):
        mem.mem_save("alice", f"retry retry {k}", "Another retry note.")
    embed_waiting()  # more than a search's budget: the rest is the background embedder's
    mem.mem_search("alice", "retry")
    assert queries_of(lambda: mem.mem_search("alice", "retry")) == small


# A period that holds the whole history: the reads below cost what they cost without one.
EVERYTHING = {"since": "2000-01-01", "until": "2100-01-01"}


@pytest.mark.parametrize("size", [5, 250])
def test_reads_of_a_period_cost_what_reads_without_one_cost(mem, size):
    grow_history("alice", size)
    assert queries_of(lambda: mem.mem_context("alice", **EVERYTHING)) == 1
    assert queries_of(lambda: mem.mem_list_observations("alice", **EVERYTHING)) == 1
    assert queries_of(lambda: mem.mem_list_observations("alice")) == 1


@pytest.mark.parametrize("setting, extra", [
    (WORDS_ONLY, 0),  # the engine's statement keeps to the period itself
    (RECORDING, 1),  # and the period's memories, so meaning weighs each of them
])
def test_a_search_of_a_period_costs_at_most_one_query_more(tmem, settings, setting, extra):
    mem = searched_history(tmem, settings, setting, 40)
    queue_missing()  # the history was written without vectors: every memory gets one, so each
    embed_waiting()  # search judges its candidates on their meaning
    mem.mem_search("alice", "retry")
    plain = queries_of(lambda: mem.mem_search("alice", "retry"))
    assert queries_of(lambda: mem.mem_search("alice", "retry", **EVERYTHING)) == plain + extra
    # A date phrase is read in Python: no query.
    assert queries_of(lambda: mem.mem_search("alice", "retry last week")) == plain
