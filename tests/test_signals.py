"""SPEC §13: signals for integrators, sent after commit with their documented kwargs."""

from datetime import timedelta

import pytest
from django.db import transaction

from ilab_memory import signals
from ilab_memory.models import Observation, Session


@pytest.fixture
def received():
    got = []

    def record(signal):
        def receiver(sender, **kwargs):
            got.append((signal, sender, kwargs))
        return receiver

    receivers = {name: record(name) for name in ("session_started", "session_closed", "observation_saved", "user_forgotten")}
    for name, receiver in receivers.items():
        getattr(signals, name).connect(receiver)
    yield got
    for name, receiver in receivers.items():
        getattr(signals, name).disconnect(receiver)


def test_each_write_sends_its_signal_after_commit(tmem, received):
    started = tmem.mem_session_start("alice")
    saved = tmem.mem_save("alice", "Tea", "Green.").observation
    tmem.mem_save("alice", "Tea", "Green.")
    tmem.mem_update("alice", saved.id, content="Black.")
    tmem.mem_session_end("alice", summary="Talked about tea.")
    tmem.mem_forget_user("alice")
    assert [(name, sender) for name, sender, _ in received] == [
        ("session_started", Session), ("observation_saved", Observation), ("observation_saved", Observation),
        ("observation_saved", Observation), ("session_closed", Session), ("user_forgotten", Session),
    ]
    kwargs = [k for *_, k in received]
    assert kwargs[0] == {"signal": signals.session_started, "using": "default", "user_id": "alice",
                         "session_id": started.session_id}
    assert [k["action"] for k in kwargs[1:4]] == ["created", "duplicate", "updated"]
    assert kwargs[1]["observation_id"] == saved.id
    assert (kwargs[4]["is_auto_generated"], kwargs[4]["reason"]) == (False, "ended")
    assert kwargs[5]["counts"]["observations"] == 1


def test_an_expired_session_closed_by_a_start_says_so(tmem, received, clock):
    tmem.mem_save("alice", "Tea", "Green.")
    clock.shift(timedelta(hours=30))
    tmem.mem_session_start("alice")
    closed = [k for name, _, k in received if name == "session_closed"]
    assert [(k["is_auto_generated"], k["reason"]) for k in closed] == [(True, "expired")]


def test_nothing_is_sent_for_a_write_that_rolls_back(tmem, received):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            tmem.mem_save("alice", "Tea", "Green.")
            raise RuntimeError("the caller's transaction fails")
    assert received == []
