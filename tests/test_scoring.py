"""ContextScore, and why it cannot be compared with a SearchScore."""

import dataclasses
from datetime import timedelta

import pytest

from ilab_memory.types import ContextScore, SearchScore
from tests.conftest import START
from tests.factories import ObservationFactory, SessionFactory


def score(mem, **fields):
    """The ContextScore mem_context gives one observation of ``fields`` (the clock at START)."""
    ObservationFactory(session=SessionFactory(user_id="solo"), **{"updated_at": START, **fields})
    (memory,) = mem.mem_context("solo")
    return memory.score


def test_context_and_search_scores_cannot_be_compared():
    c, s = ContextScore(0.5), SearchScore(0.5)
    for op in (lambda: c < s, lambda: c > s, lambda: c <= s, lambda: s >= c, lambda: c == s, lambda: sorted([c, s])):
        with pytest.raises(TypeError):
            op()


def test_scores_of_one_kind_compare_by_value():
    assert ContextScore(0.2) < ContextScore(0.3)
    assert SearchScore(0.9) > SearchScore(0.1)
    assert ContextScore(0.5, {"a": 1}) == ContextScore(0.5, {"b": 2})


def test_scores_are_frozen_and_carry_a_breakdown(mem, clock):
    s = score(mem)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.value = 2
    assert set(s.breakdown) == {"hours_since_update", "recency", "type_weight", "reinforcement", "scope"}


def test_recency_decays_0_995_per_hour(mem, clock):
    s = score(mem, updated_at=START - timedelta(hours=10))
    assert s.value == pytest.approx(0.995**10)
    assert s.breakdown["hours_since_update"] == pytest.approx(10)
    assert s.breakdown["recency"] == pytest.approx(0.995**10)


def test_an_update_in_the_future_counts_as_now(mem, clock):
    assert score(mem, updated_at=START + timedelta(hours=3)).value == pytest.approx(1.0)


@pytest.mark.parametrize("type_, weight", [("decision", 1.5), ("preference", 1.4), ("whatever", 1.0)])
def test_type_weight_multiplies_and_unknown_types_weigh_one(mem, clock, type_, weight):
    s = score(mem, type=type_)
    assert s.value == pytest.approx(weight)
    assert s.breakdown["type_weight"] == pytest.approx(weight)


def test_type_weights_come_from_the_setting(mem, clock, settings):
    settings.ILAB_MEMORY = {"TYPE_WEIGHTS": {"note": 2 / 3}}
    assert score(mem, type="note").value == pytest.approx(2 / 3)


@pytest.mark.parametrize("revisions, duplicates, expected", [
    (1, 1, 1.0), (2, 1, 1 + 0.5 * 1 / 5), (3, 3, 1 + 0.5 * 4 / 8), (10_000, 1, 1 + 0.5 * 9999 / 10003),
])
def test_reinforcement_grows_with_use_but_is_bounded(mem, clock, revisions, duplicates, expected):
    s = score(mem, revision_count=revisions, duplicate_count=duplicates)
    assert s.value == pytest.approx(expected)
    assert s.breakdown["reinforcement"] == pytest.approx(expected) and s.value < 1.5


def test_context_ranking_prefers_weighted_types_and_breaks_ties_deterministically(mem, clock):
    session = SessionFactory(user_id="alice")
    now = START
    a = ObservationFactory(session=session, type="manual", updated_at=now)
    b = ObservationFactory(session=session, type="decision", updated_at=now - timedelta(hours=20))
    c = ObservationFactory(session=session, type="manual", updated_at=a.updated_at)
    ranked = [m.id for m in mem.mem_context("alice")]
    assert ranked[0] == str(b.id)  # 1.5 * 0.995**20 ≈ 1.36 > 1.0
    assert ranked[1:] == sorted([str(a.id), str(c.id)], reverse=True)
    assert ranked == [m.id for m in mem.mem_context("alice")]


def test_context_candidates_are_bounded_by_setting(db, settings, clock):
    from ilab_memory import ILabMemory

    session = SessionFactory(user_id="alice")
    old_decision = ObservationFactory(
        session=session, type="decision",
        updated_at=START - timedelta(hours=1),
    )
    ObservationFactory.create_batch(3, session=session, type="manual")
    settings.ILAB_MEMORY = {"CONTEXT_CANDIDATES": 3}
    assert str(old_decision.id) not in [m.id for m in ILabMemory().mem_context("alice")]
    settings.ILAB_MEMORY = {"CONTEXT_CANDIDATES": 4}
    assert ILabMemory().mem_context("alice")[0].id == str(old_decision.id)
