"""Many callers at the same moment: one active session per user, every caller gets its id."""

from datetime import timedelta

import pytest
from django.db.models import F

from ilab_memory import ILabMemory
from ilab_memory.models import Observation, Session, SessionStatus
from tests import threads

THREADS = 8
ROUNDS = 15


def run_together(target, n=THREADS):
    return threads.run_together(target, n)


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_for_one_user_yield_one_session():
    mem = ILabMemory()
    for round_ in range(ROUNDS):
        user = f"user-{round_}"
        responses = run_together(lambda i: mem.mem_session_start(user))
        ids = {r.session_id for r in responses}
        assert len(ids) == 1
        assert sum(r.is_new for r in responses) == 1
        assert Session.objects.filter(user_id=user).count() == 1
        assert Session.objects.get(user_id=user).status == SessionStatus.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_on_an_expired_session_close_it_once():
    mem = ILabMemory()
    for round_ in range(5):
        user = f"user-{round_}"
        old = mem.mem_session_start(user).session_id
        # Age the session past the timeout (threads share the real clock, so move the row).
        Session.objects.filter(pk=old).update(
            started_at=F("started_at") - timedelta(hours=25),
            last_activity_at=F("last_activity_at") - timedelta(hours=25),
        )
        responses = run_together(lambda i: mem.mem_session_start(user))
        ids = {r.session_id for r in responses}
        assert len(ids) == 1 and old not in ids
        assert sum(r.is_new for r in responses) == 1
        assert Session.objects.filter(user_id=user, status=SessionStatus.ACTIVE).count() == 1
        closed = Session.objects.get(pk=old)
        assert closed.status == SessionStatus.COMPLETED and closed.is_auto_generated


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_without_a_session_share_one_implicit_session():
    mem = ILabMemory()
    for round_ in range(ROUNDS):
        user = f"saver-{round_}"
        results = run_together(lambda i: mem.mem_save(user, f"title {i}", f"content {i}"))
        assert {r.action for r in results} == {"created"}
        session = Session.objects.get(user_id=user)
        assert session.status == SessionStatus.ACTIVE
        assert {r.observation.session_id for r in results} == {str(session.id)}
        assert Observation.objects.filter(user_id=user).count() == THREADS


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_saves_count_duplicates_once():
    mem = ILabMemory()
    results = run_together(lambda i: mem.mem_save("dup", "Same", "same content"))
    assert Observation.objects.filter(user_id="dup").count() == 1
    assert sorted(r.action for r in results) == ["created"] + ["duplicate"] * (THREADS - 1)
    assert Observation.objects.get(user_id="dup").duplicate_count == THREADS


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_on_one_topic_revise_one_row():
    mem = ILabMemory()
    results = run_together(lambda i: mem.mem_save("topic", f"v{i}", f"c{i}", topic_key="plan"))
    assert Observation.objects.filter(user_id="topic").count() == 1
    assert sorted(r.action for r in results) == ["created"] + ["revised"] * (THREADS - 1)
    assert Observation.objects.get(user_id="topic").revision_count == THREADS
