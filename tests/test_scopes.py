"""Scopes through the facade: the rules, what each read sees, and bad values."""

from datetime import timedelta

import pytest
from django.test import override_settings

from ilab_memory import ILabMemory
from ilab_memory.conf import get_config
from ilab_memory.exceptions import NoActiveSession, ObservationNotFound, SessionNotFound, ValidationError
from ilab_memory.models import Observation, ObservationVector, Session
from ilab_memory.scopes import (
    ALL,
    EVERY_SCOPE,
    SHARED,
    clean_read_reach,
    clean_target_scope,
    clean_write_scope,
)
from tests.test_query_counts import queries_of

HOSTILE = ["Support", "sup port", "../x", "a" * 65, "x\x00", "-lead", "ünï", "a,b", 7, ["x"], {"a": 1}]


@pytest.fixture
def words(db):
    """The facade with search by words only: each test here is about which rows a read reaches."""
    return ILabMemory(embedder=None)


# -- the values -----------------------------------------------------------------------------


def test_a_write_lands_in_one_scope_and_a_read_reaches_it_and_the_shared_space():
    config = get_config()
    assert clean_write_scope("support", config=config) == "support"
    assert clean_write_scope(None, config=config) == clean_write_scope("", config=config) == SHARED
    assert clean_target_scope(ALL, config=config) == ALL
    reach = clean_read_reach("support", config=config)
    assert (reach.scopes, reach.own) == (("support", SHARED), "support")
    assert clean_read_reach("*", config=config) is EVERY_SCOPE
    listed = clean_read_reach(["b", "a", "b"], config=config)
    assert (listed.scopes, listed.own, listed.key) == (("b", "a"), None, "b,a")
    assert clean_read_reach(["a"], config=config).scopes == ("a",)  # a list reads exactly what it names


@pytest.mark.parametrize("value", HOSTILE)
def test_a_bad_scope_is_refused_naming_the_field(value):
    with pytest.raises(ValidationError) as error:
        clean_write_scope(value, config=get_config())
    assert error.value.field == "scope"
    assert "\x00" not in str(error.value) and "../" not in str(error.value)  # never echoed


@pytest.mark.parametrize("value", ["*", ["a", "b"]])
def test_a_write_cannot_name_every_scope_or_a_list(value):
    with pytest.raises(ValidationError) as error:
        clean_write_scope(value, config=get_config())
    assert error.value.code == "one_scope_required"


def test_the_scope_limit_and_the_allowed_scopes_come_from_the_settings():
    config = get_config().with_overrides({"MAX_SCOPE_CHARS": 6, "SCOPES": ["coding"]})
    with pytest.raises(ValidationError) as error:
        clean_write_scope("support", config=config)
    assert (error.value.code, error.value.limit) == ("max_length", 6)
    with pytest.raises(ValidationError) as error:
        clean_write_scope("tests", config=config)
    assert error.value.code == "scope_not_allowed"
    assert clean_write_scope("", config=config) == SHARED  # the shared space is always allowed
    with pytest.raises(ValidationError):
        clean_read_reach(["coding", "other"], config=config)
    with pytest.raises(ValidationError):
        clean_read_reach([], config=config)


def test_a_bad_scope_writes_nothing(words):
    for value in ("Bad Scope", "*", "a" * 65):
        with pytest.raises(ValidationError):
            words.mem_save("alice", "T", "C", scope=value)
        with pytest.raises(ValidationError):
            words.mem_session_start("alice", scope=value)
    assert not Session.objects.exists() and not Observation.objects.exists()


# -- sessions -------------------------------------------------------------------------------


def test_each_scope_has_its_own_active_session(words):
    shared = words.mem_session_start("alice")
    support = words.mem_session_start("alice", scope="support")
    coding = words.mem_session_start("alice", scope="coding")
    assert len({shared.session_id, support.session_id, coding.session_id}) == 3
    assert words.mem_session_start("alice", scope="support").session_id == support.session_id
    ended = words.mem_session_end("alice", "Support is done.", scope="support")
    assert (ended.scope, ended.status) == ("support", "completed")
    assert words.mem_session_start("alice", scope="coding").is_new is False
    with pytest.raises(NoActiveSession):
        words.mem_session_end("alice", scope="support")
    assert Session.objects.active().count() == 2


def test_the_timeout_runs_per_scope(words, clock):
    support = words.mem_session_start("alice", scope="support")
    clock.shift(timedelta(hours=20))
    coding = words.mem_session_start("alice", scope="coding")
    clock.shift(timedelta(hours=5))  # support's last activity is 25 h old, coding's 5 h
    assert words.mem_session_start("alice", scope="coding").session_id == coding.session_id
    again = words.mem_session_start("alice", scope="support")
    assert again.is_new and again.session_id != support.session_id
    closed = Session.objects.get(pk=support.session_id)
    assert closed.is_auto_generated and closed.scope == "support"


def test_a_scope_sees_its_own_and_the_shared_spaces_past_sessions(words):
    for scope in ("", "support", "coding"):
        words.mem_session_start("alice", scope=scope)
        words.mem_session_end("alice", f"Work in {scope or 'shared'}.", scope=scope)
    context = words.mem_session_start("alice", scope="support").sessions_context
    assert sorted(s.summary for s in context) == ["Work in shared.", "Work in support."]
    assert {s.scope for s in context} == {"", "support"}
    listed = words.mem_list_sessions("alice", scope="coding")
    assert {s.scope for s in listed} == {"", "coding"}
    assert len(words.mem_list_sessions("alice", scope=ALL)) == 4
    support_session = next(s for s in listed if s.scope == "coding")
    with pytest.raises(SessionNotFound):
        words.mem_get_session("alice", support_session.id, scope="support")
    assert words.mem_get_session("alice", support_session.id, scope="coding").scope == "coding"


# -- observations ---------------------------------------------------------------------------


def test_topics_and_duplicates_are_matched_within_one_scope(words):
    shared = words.mem_save("alice", "Tea", "Green.", topic_key="drinks")
    support = words.mem_save("alice", "Tea", "Green.", topic_key="drinks", scope="support")
    assert support.action == "created" and support.observation.id != shared.observation.id
    assert words.mem_save("alice", "Tea", "Black.", topic_key="drinks", scope="support").action == "revised"
    assert words.mem_save("alice", "Note", "Same words.", scope="coding").action == "created"
    assert words.mem_save("alice", "Note", "Same words.", scope="support").action == "created"
    assert words.mem_save("alice", "Note", "Same words.", scope="support").action == "duplicate"
    assert Observation.objects.get(pk=shared.observation.id).content == "Green."


def test_a_memory_sits_in_a_session_of_its_own_scope(words):
    saved = words.mem_save("alice", "Plan", "Ship on Monday.", scope="coding").observation
    assert saved.scope == "coding"
    assert Session.objects.get(pk=saved.session_id).scope == "coding"


def test_an_agent_changes_only_what_its_scope_holds(words):
    shared = words.mem_save("alice", "Name", "Call her Ali.").observation
    mine = words.mem_save("alice", "Ticket", "Refund sent.", scope="support").observation
    with pytest.raises(ObservationNotFound):
        words.mem_update("alice", shared.id, content="Changed by support.", scope="support")
    with pytest.raises(ObservationNotFound):
        words.mem_delete("alice", mine.id, scope="coding")
    updated = words.mem_update("alice", mine.id, content="Refund sent twice.", scope="support")
    assert (updated.scope, Session.objects.get(pk=updated.session_id).scope) == ("support", "support")
    # "*" (an operator) changes a row of any scope, and it moves to its own scope's session.
    moved = words.mem_update("alice", shared.id, content="Call her Ali, always.", scope=ALL)
    assert Session.objects.get(pk=moved.session_id).scope == SHARED
    assert words.mem_delete("alice", mine.id, scope=ALL).id == mine.id


# -- reads ----------------------------------------------------------------------------------


@pytest.fixture
def two_agents(words):
    """One user: a shared memory, one of the support bot, one of the coding assistant."""
    return {
        "shared": words.mem_save("alice", "Name", "Alice prefers to be called Ali.").observation,
        "support": words.mem_save("alice", "Refund", "Ali's refund for order 881 was sent.",
                                  scope="support").observation,
        "coding": words.mem_save("alice", "Branch", "Ali works on branch refund-fix.", scope="coding").observation,
    }


def test_each_read_of_a_scope_sees_it_and_the_shared_space_only(words, two_agents):
    seen = {
        "search": {r.id for r in words.mem_search("alice", "Ali", scope="support")},
        "context": {m.id for m in words.mem_context("alice", scope="support")},
        "start": {m.id for m in words.mem_session_start("alice", scope="support").memories},
    }
    expected = {two_agents["shared"].id, two_agents["support"].id}
    assert seen == {"search": expected, "context": expected, "start": expected}
    coding = two_agents["coding"].id
    for read in (words.mem_get_observation, words.mem_revisions, words.mem_timeline):
        with pytest.raises(ObservationNotFound):
            read("alice", coding, scope="support")
    assert words.mem_get_observation("alice", coding, scope="coding").scope == "coding"
    assert words.mem_timeline("alice", two_agents["shared"].id, scope="support").anchor.scope == SHARED


def test_every_scope_or_a_list_reads_exactly_those(words, two_agents):
    assert len(words.mem_search("alice", "Ali", scope=ALL)) == 3
    assert {r.scope for r in words.mem_search("alice", "Ali", scope=["coding"])} == {"coding"}
    assert {r.scope for r in words.mem_context("alice", scope=["support", "coding"])} == {"support", "coding"}
    assert {r.scope for r in words.mem_search("alice", "Ali")} == {SHARED}  # no scope: the shared space


def test_another_users_scope_of_the_same_name_is_never_seen(words, two_agents):
    words.mem_save("bob", "Refund", "Bob's refund for order 881.", scope="support")
    assert {r.id for r in words.mem_search("alice", "refund", scope=ALL)} == {
        two_agents["support"].id, two_agents["coding"].id}
    assert not words.mem_search("bob", "Ali", scope=ALL)


def test_on_equal_evidence_the_scopes_own_memory_comes_first(words, clock):
    shared = words.mem_save("alice", "Deploy window", "Deploy on Tuesdays.").observation
    own = words.mem_save("alice", "Deploy window", "Deploy on Tuesdays.", scope="coding").observation
    assert shared.updated_at == own.updated_at  # the clock is stopped: every signal is equal
    for scope, first in (("coding", own.id), ("", shared.id)):
        context = words.mem_context("alice", scope=scope)
        assert context[0].id == first
    results = words.mem_search("alice", "deploy tuesdays", scope="coding")
    assert [r.id for r in results] == [own.id, shared.id]
    assert results[0].score.value == results[1].score.value
    assert [r.score.breakdown["scope"] for r in results] == ["coding", SHARED]
    assert words.mem_context("alice", scope="coding")[0].score.breakdown["scope"] == "coding"


def test_a_search_by_meaning_keeps_to_the_scopes_it_reads(mem):
    mem.mem_save("alice", "Allergic to cats", "Sneezing and red eyes around cats.", scope="coding")
    mem.mem_save("alice", "Standup", "The team meets every weekday at 9:30.", scope="support")
    query = "which pets make her sneeze"
    assert [r.title for r in mem.mem_search("alice", query, scope="coding")][:1] == ["Allergic to cats"]
    assert "Allergic to cats" not in [r.title for r in mem.mem_search("alice", query, scope="support")]
    assert ObservationVector.objects.get(observation__title="Allergic to cats").scope == "coding"


def test_stats_count_what_a_scope_reads_and_name_each_scope(words, two_agents):
    stats = words.mem_stats("alice", scope="support")
    assert (stats.scope, stats.observations, stats.observations_by_scope) == ("support,", 2, {"": 1, "support": 1})
    every = words.mem_stats("alice", scope=ALL)
    assert (every.scope, every.observations, every.sessions) == ("*", 3, 3)
    assert every.observations_by_scope == {"": 1, "coding": 1, "support": 1}


# -- cost -----------------------------------------------------------------------------------


def test_a_scoped_user_costs_the_same_queries_as_an_unscoped_one(words, two_agents):
    for scope in ("", "support"):
        words.mem_session_start("alice", scope=scope)
    counts = {
        scope: [
            queries_of(lambda: words.mem_session_start("alice", scope=scope)),
            queries_of(lambda: words.mem_save("alice", "New", f"In {scope or 'shared'}.", scope=scope)),
            queries_of(lambda: words.mem_context("alice", scope=scope)),
            queries_of(lambda: words.mem_search("alice", "Ali", scope=scope)),
        ]
        for scope in ("", "support")
    }
    assert counts["support"] == counts[""]


@override_settings(ILAB_MEMORY={"SCOPES": ["support"]})
def test_the_allowed_scopes_setting_refuses_the_others(db):
    memory = ILabMemory(embedder=None)
    memory.mem_save("alice", "T", "C", scope="support")
    with pytest.raises(ValidationError) as error:
        memory.mem_save("alice", "T", "C", scope="coding")
    assert error.value.code == "scope_not_allowed"


def test_a_scope_the_settings_no_longer_allow_can_still_be_erased(words):
    words.mem_save("alice", "Kept", "From before the setting changed.", scope="legacy")
    with override_settings(ILAB_MEMORY={"SCOPES": ["support"]}):
        memory = ILabMemory(embedder=None)
        with pytest.raises(ValidationError):
            memory.mem_search("alice", "kept", scope="legacy")
        assert memory.mem_forget_user("alice", scope="legacy")["observations"] == 1
        with pytest.raises(ValidationError):
            memory.mem_forget_user("alice", scope="Not A Slug")
    assert not Observation.objects.exists()


def test_data_of_a_scope_longer_than_a_lowered_limit_can_still_be_exported_and_erased(words):
    scope = "a-scope-of-twenty-ch"
    words.mem_save("alice", "Kept", "From before the limit was lowered.", scope=scope)
    memory = ILabMemory(embedder=None, max_scope_chars=10)
    with pytest.raises(ValidationError):
        memory.mem_save("alice", "New", "Refused.", scope=scope)
    assert [o["scope"] for o in memory.mem_export("alice", scope=scope)["observations"]] == [scope]
    assert memory.mem_forget_user("alice", scope=scope)["observations"] == 1
