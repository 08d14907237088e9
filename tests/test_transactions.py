"""The outermost transaction of a service call: a lost race is rolled back and run again."""

import threading

import pytest
from django.db import connection, transaction

from ilab_memory.exceptions import Conflict
from ilab_memory.models import Session
from ilab_memory.services.transactions import ATTEMPTS, RaceLost, atomic_with_retry
from tests.factories import SessionFactory
from tests.threads import run_together


def test_a_lost_race_is_rolled_back_and_run_again(transactional_db):
    attempts = []

    def work():
        attempts.append(len(attempts) + 1)
        SessionFactory(user_id=f"attempt-{len(attempts)}")
        if len(attempts) == 1:
            raise RaceLost("a concurrent writer changed the row")
        return "done"

    assert atomic_with_retry(work, using="default") == "done"
    assert attempts == [1, 2]
    # The first attempt's write went with its rollback.
    assert list(Session.objects.values_list("user_id", flat=True)) == ["attempt-2"]


def test_a_race_lost_on_every_attempt_is_a_conflict(transactional_db):
    calls = []

    def work():
        calls.append(1)
        raise RaceLost("always")

    with pytest.raises(Conflict) as raised:
        atomic_with_retry(work, using="default")
    assert len(calls) == ATTEMPTS and isinstance(raised.value.__cause__, RaceLost)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's write lock leaves no deadlock")
def test_a_deadlock_postgresql_settles_is_run_again(transactional_db):
    """Two writers lock two rows in opposite orders: PostgreSQL cancels one (deadlock
    detected), which reruns after the other commits, and both writes land."""
    first, second = SessionFactory(user_id="a"), SessionFactory(user_id="b")
    both_hold_one = threading.Barrier(2)
    attempts = []

    def writer(i):
        order = [first.pk, second.pk][:: 1 if i == 0 else -1]

        def work():
            attempts.append(i)
            Session.objects.select_for_update().get(pk=order[0])
            if attempts.count(i) == 1:
                both_hold_one.wait(timeout=10)
            Session.objects.filter(pk=order[1]).update(summary=f"writer {i}")
            return i

        return atomic_with_retry(work, using="default")

    assert run_together(writer, 2) == [0, 1]
    assert len(attempts) >= 3  # one of them ran again (on a busy machine, a rerun may deadlock too)


def test_inside_an_outer_transaction_nothing_is_retried(transactional_db):
    calls = []

    def work():
        calls.append(1)
        raise RaceLost("the outer transaction already read what changed")

    with pytest.raises(RaceLost), transaction.atomic():
        atomic_with_retry(work, using="default")
    assert calls == [1]
