"""Signals for integrators, sent after commit with their documented kwargs."""

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

    receivers = {name: record(name) for name in ("session_started", "session_closed", "observation_saved",
                                                 "user_forgotten")}
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
    with pytest.raises(RuntimeError), transaction.atomic():
        tmem.mem_save("alice", "Tea", "Green.")
        raise RuntimeError("the caller's transaction fails")
    assert received == []


@pytest.fixture
def model_saves():
    """Django's own pre_save/post_save for the memory's models: (signal, model, created, fields)."""
    from django.db.models.signals import post_save, pre_save

    from ilab_memory.models import ObservationRevision

    got = []

    def pre(sender, instance, update_fields=None, **kwargs):
        got.append(("pre_save", sender, instance._state.adding, update_fields and frozenset(update_fields)))

    def post(sender, instance, created, update_fields=None, **kwargs):
        got.append(("post_save", sender, created, update_fields and frozenset(update_fields)))

    for model in (Observation, ObservationRevision):
        pre_save.connect(pre, sender=model)
        post_save.connect(post, sender=model)
    yield got
    for model in (Observation, ObservationRevision):
        pre_save.disconnect(pre, sender=model)
        post_save.disconnect(post, sender=model)


def test_django_model_signals_fire_for_each_create_revise_and_update(mem, model_saves):
    from ilab_memory.models import ObservationRevision

    saved = mem.mem_save("alice", "Tea", "Green.", topic_key="drink").observation
    assert model_saves == [("pre_save", Observation, True, None), ("post_save", Observation, True, None)]
    model_saves.clear()
    mem.mem_save("alice", "Tea", "Black.", topic_key="drink")  # a revise: the old version kept first
    mem.mem_update("alice", saved.id, title="Coffee")
    revised = [(name, model, created) for name, model, created, _ in model_saves]
    assert revised == 2 * [("pre_save", ObservationRevision, True), ("post_save", ObservationRevision, True),
                           ("pre_save", Observation, False), ("post_save", Observation, False)]
    fields = {f for name, model, _, f in model_saves if model is Observation and name == "post_save"}
    assert all({"title", "content", "revision_count", "updated_at"} <= f for f in fields)
    assert Observation.objects.get(pk=saved.id).revision_count == 3


def test_a_duplicate_is_counted_like_an_update_without_model_signals(mem, model_saves):
    mem.mem_save("alice", "Tea", "Green.")
    model_saves.clear()
    assert mem.mem_save("alice", "Tea", "Green.").action == "duplicate"
    assert model_saves == []
