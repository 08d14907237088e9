"""The outermost transaction of a service call: a lost race is rolled back and run again."""

import pytest
from django.db import transaction

from ilab_memory.models import Session
from ilab_memory.services.transactions import ATTEMPTS, RaceLost, atomic_with_retry
from tests.factories import SessionFactory


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


def test_a_race_lost_on_every_attempt_is_raised(transactional_db):
    calls = []

    def work():
        calls.append(1)
        raise RaceLost("always")

    with pytest.raises(RaceLost):
        atomic_with_retry(work, using="default")
    assert len(calls) == ATTEMPTS


def test_inside_an_outer_transaction_nothing_is_retried(transactional_db):
    calls = []

    def work():
        calls.append(1)
        raise RaceLost("the outer transaction already read what changed")

    with pytest.raises(RaceLost), transaction.atomic():
        atomic_with_retry(work, using="default")
    assert calls == [1]
