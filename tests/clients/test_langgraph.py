"""``MemoryStore`` with the real ``langgraph``: its documented store behaviour (put, get, search
with and without a query, namespaces, delete) and compiled graphs whose nodes write and read
memories through the store injected into them. Each test runs over the facade in-process and
over ``MemoryClient`` against the live site (the ``mem`` fixture)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item, PutOp, SearchItem, TTLConfig

from ilab_memory import ILabMemory, types
from ilab_memory.exceptions import ValidationError
from ilab_memory.integrations.langgraph import MemoryStore
from tests.mcp.conftest import everything_stored


@pytest.fixture
def store(mem) -> MemoryStore:
    return MemoryStore(mem)


@pytest.fixture
def facade(live_db):
    return ILabMemory()


@pytest.fixture(autouse=True)
def close_the_async_bridges_connection():
    """``abatch`` in-process runs on the one thread of Django's ``sync_to_async``, which keeps its
    database connection as any thread does; closed here, or the test database cannot be dropped."""
    yield
    from asgiref.sync import sync_to_async
    from django.db import connections

    asyncio.run(sync_to_async(connections.close_all)())


def test_put_then_get_gives_the_value_back(store):
    store.put(("alice",), "drink", {"drink": "green tea", "sugar": False, "cups": [1, 2]})
    item = store.get(("alice",), "drink")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (("alice",), "drink")
    assert item.value == {"drink": "green tea", "sugar": False, "cups": [1, 2]}
    assert isinstance(item.created_at, datetime) and item.created_at.utcoffset().total_seconds() == 0
    assert store.get(("alice",), "food") is None


def test_the_value_maps_onto_the_observations_fields(store, facade):
    store.put(("alice",), "Deploy Day", {"title": "Deploys", "content": "We deploy on Fridays.", "type": "decision",
                                         "team": "ops"})
    (hit,) = facade.mem_list_observations("alice")
    record = facade.mem_get_observation("alice", hit.id)
    assert (record.title, record.content, record.type, record.topic_key) == (
        "Deploys", "We deploy on Fridays.", "decision", "deploy-day")
    assert record.metadata["team"] == "ops"
    assert store.get(("alice",), "deploy day").value == {"title": "Deploys", "content": "We deploy on Fridays.",
                                                         "type": "decision", "team": "ops"}


def test_a_put_of_the_same_key_revises_with_history(store, facade):
    store.put(("alice",), "drink", {"content": "Green tea."})
    first = store.get(("alice",), "drink")
    store.put(("alice",), "drink", {"content": "Black coffee."})
    second = store.get(("alice",), "drink")
    assert second.value == {"content": "Black coffee."}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    (hit,) = facade.mem_list_observations("alice")
    assert [revision.content for revision in facade.mem_revisions("alice", hit.id)] == ["Green tea."]


def test_a_namespace_is_a_user_and_a_scope(store, facade):
    store.put(("alice", "support"), "refund", {"content": "Refund for order 881 sent."})
    store.put(("alice",), "name", {"content": "Ana prefers Ani."})
    assert store.get(("alice",), "refund") is None  # the shared space is not the scope
    assert store.get(("alice", "support"), "refund").namespace == ("alice", "support")
    assert store.get(("alice", "support"), "name") is None  # and a scope is not the shared space
    assert {o.title: o.scope for o in facade.mem_list_observations("alice", scope="*")} == {
        "refund": "support", "name": ""}
    with pytest.raises(InvalidNamespaceError):
        store.put(("alice", "support", "extra"), "k", {"content": "c"})
    with pytest.raises(ValidationError) as raised:
        store.put(("alice", "Not A Slug"), "k", {"content": "c"})
    assert raised.value.field == "scope"


def test_search_without_a_query_lists_newest_first_under_the_prefix(store):
    store.put(("alice",), "one", {"content": "first"})
    store.put(("alice", "support"), "two", {"content": "second"})
    store.put(("alice", "coding"), "three", {"content": "third"})
    every = store.search(("alice",))
    assert [item.key for item in every] == ["three", "two", "one"]
    assert all(isinstance(item, SearchItem) and item.score is None for item in every)
    assert [item.key for item in store.search(("alice", "support"))] == ["two"]
    assert [item.key for item in store.search(("alice",), limit=1, offset=1)] == ["two"]


def test_search_with_a_query_is_the_hybrid_search_with_its_scores(store, mem):
    store.put(("alice",), "deploy", {"content": "We deploy the site on Fridays after lunch."})
    store.put(("alice",), "tea", {"content": "Alice drinks green tea."})
    items = store.search(("alice",), query="deploy on friday")
    expected = mem.mem_search("alice", "deploy on friday", scope="*")
    assert [item.key for item in items] == [store.get(("alice",), "deploy").key, "tea"][: len(expected)]
    assert [round(item.score, 2) for item in items] == [round(hit.score.value, 2) for hit in expected]
    assert 0 < items[0].score <= 1


def test_a_stores_min_score_leaves_out_what_scores_below_it(mem):
    full = MemoryStore(mem)
    full.put(("alice",), "deploy", {"content": "We deploy the site on Fridays after lunch."})
    full.put(("alice",), "checklist", {"content": "The deploy checklist lives in the wiki."})
    scores = sorted(item.score for item in full.search(("alice",), query="deploy on friday"))
    assert len(scores) == 2 and scores[0] < scores[1]
    cut = (scores[0] + scores[1]) / 2
    assert [item.key for item in MemoryStore(mem, min_score=cut).search(("alice",), query="deploy on friday")] == [
        full.get(("alice",), "deploy").key]
    assert MemoryStore(mem, min_score=scores[1] + 0.01).search(("alice",), query="deploy on friday") == []
    with pytest.raises(ValidationError) as raised:
        MemoryStore(mem, min_score=-1)
    assert (raised.value.field, raised.value.code) == ("min_score", "min_value")


def test_a_search_beyond_its_bound_names_the_limit(store):
    """offset + limit: at most a list's largest page (100) without a query, SEARCH_MAX_LIMIT (50) with one."""
    store.put(("alice",), "one", {"content": "Green tea in the morning."})
    assert [item.key for item in store.search(("alice",), limit=90, offset=10)] == []
    for query, limit in ((None, 100), ("tea", 50)):
        with pytest.raises(ValidationError) as raised:
            store.search(("alice",), query=query, limit=limit, offset=1)
        assert (raised.value.field, raised.value.code, raised.value.limit) == ("limit", "max_value", limit)


def test_filter_selects_the_type(store):
    store.put(("alice",), "tea", {"content": "Green tea, no sugar.", "type": "preference"})
    store.put(("alice",), "deploy", {"content": "Deploys on Fridays, no tea.", "type": "decision"})
    assert [item.key for item in store.search(("alice",), filter={"type": "preference"})] == ["tea"]
    assert [item.key for item in store.search(("alice",), query="tea", filter={"type": {"$eq": "decision"}})] == [
        "deploy"]
    with pytest.raises(ValidationError) as raised:
        store.search(("alice",), filter={"colour": "red"})
    assert raised.value.field == "filter"


def test_delete_is_the_soft_delete(store, facade):
    store.put(("alice",), "tea", {"content": "Green tea."})
    store.delete(("alice",), "tea")
    assert store.get(("alice",), "tea") is None
    assert store.search(("alice",)) == []
    stats = facade.mem_stats("alice")
    assert (stats.observations, stats.deleted_observations) == (0, 1)
    store.delete(("alice",), "tea")  # deleting what is not there is done


def test_list_namespaces_names_the_users_scopes_with_memories(store):
    store.put(("alice",), "name", {"content": "Ani."})
    store.put(("alice", "support"), "refund", {"content": "Refund sent."})
    store.put(("alice", "coding"), "branch", {"content": "refund-fix"})
    store.put(("bob", "support"), "other", {"content": "Bob's."})
    assert store.list_namespaces(prefix=("alice",)) == [("alice",), ("alice", "coding"), ("alice", "support")]
    assert store.list_namespaces(prefix=("alice",), suffix=("support",)) == [("alice", "support")]
    assert store.list_namespaces(prefix=("alice",), max_depth=1) == [("alice",)]
    assert store.list_namespaces(prefix=("alice",), limit=1, offset=1) == [("alice", "coding")]
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces()  # no namespace reaches more than one user


def expires_at(facade, user_id: str = "alice") -> datetime | None:
    (hit,) = facade.mem_list_observations(user_id)
    record = facade.mem_get_observation(user_id, hit.id)
    return None if record.expires_at is None else datetime.fromisoformat(record.expires_at)


def test_a_puts_ttl_in_minutes_is_the_observations_expiry(store, facade):
    assert store.supports_ttl
    before = datetime.now(UTC)
    store.put(("alice",), "trip", {"content": "In Lisbon this week."}, ttl=90)
    assert before + timedelta(minutes=90) <= expires_at(facade) <= datetime.now(UTC) + timedelta(minutes=90)
    store.batch([PutOp(("alice",), "trip", {"content": "In Porto this week."}, ttl=0.5)])
    assert expires_at(facade) <= datetime.now(UTC) + timedelta(seconds=30)
    store.put(("alice",), "trip", {"content": "Back home."})  # a put without a ttl: never
    assert expires_at(facade) is None


def test_an_item_past_its_ttl_is_gone_from_every_read(store):
    # Three real seconds (the facade and the server read the real clock): time enough for two puts
    # and a read over HTTP on a loaded machine, where one second was not.
    store.put(("alice",), "note", {"content": "Remind me at the airport."}, ttl=3 / 60)
    store.put(("alice",), "kept", {"content": "Remind me of nothing."})
    assert store.get(("alice",), "note") is not None
    time.sleep(3.1)
    assert store.get(("alice",), "note") is None
    assert [item.key for item in store.search(("alice",))] == ["kept"]
    assert [item.key for item in store.search(("alice",), query="remind")] == ["kept"]
    store.put(("alice",), "note", {"content": "A new note under the old key."})
    assert store.get(("alice",), "note").value == {"content": "A new note under the old key."}


def test_a_read_never_extends_the_ttl(store, facade):
    store.put(("alice",), "trip", {"content": "In Lisbon."}, ttl=60)
    expiry = expires_at(facade)
    assert store.get(("alice",), "trip", refresh_ttl=True) is not None
    assert store.search(("alice",), query="lisbon", refresh_ttl=True)
    assert expires_at(facade) == expiry


@pytest.mark.parametrize(
    ("ttl", "code"), [(0, "min_value"), (-5, "min_value"), (float("nan"), "min_value"), (10**12, "max_value"),
                      ("5", "invalid_type"), (True, "invalid_type")],
)
def test_a_bad_ttl_is_refused_in_minutes(store, ttl, code):
    with pytest.raises(ValidationError) as raised:
        store.put(("alice",), "tea", {"content": "Green tea."}, ttl=ttl)
    assert (raised.value.field, raised.value.code) == ("ttl", code)
    assert "minutes" in raised.value.message
    assert store.search(("alice",)) == []


def test_a_ttl_config_gives_puts_its_default_ttl(mem, facade):
    store = MemoryStore(mem, ttl=TTLConfig(default_ttl=30, refresh_on_read=False))
    before = datetime.now(UTC)
    store.put(("alice",), "trip", {"content": "In Lisbon."})
    assert before + timedelta(minutes=30) <= expires_at(facade) <= datetime.now(UTC) + timedelta(minutes=30)
    store.put(("alice",), "trip", {"content": "In Lisbon."}, ttl=None)  # explicitly none: never
    assert expires_at(facade) is None


@pytest.mark.parametrize(
    "config",
    [{"refresh_on_read": True}, {"sweep_interval_minutes": 10}, {"omit_expired": False}, {"default_ttl": 0},
     {"default_ttl": 60, "strategy": "delete"}],
)
def test_a_ttl_config_this_store_cannot_honour_is_refused(mem, config):
    with pytest.raises(ValidationError) as raised:
        MemoryStore(mem, ttl=config)
    assert raised.value.field == "ttl"


def test_private_blocks_are_redacted_before_anything_is_stored(store):
    store.put(("alice",), "login", {"content": "password <private>hunter2</private>",
                                    "note": "pin <private>zebra-quartz</private>"})
    stored = everything_stored()
    assert "hunter2" not in stored and "zebra-quartz" not in stored  # words no timestamp or id holds
    assert store.get(("alice",), "login").value == {"content": "password [REDACTED]", "note": "pin [REDACTED]"}
    assert "hunter2" not in str(store.search(("alice",), query="hunter2"))


def test_other_users_are_invisible(store):
    store.put(("bob",), "secret", {"content": "Bob's green tea recipe."})
    assert store.get(("alice",), "secret") is None
    assert store.search(("alice",), query="green tea") == []
    assert store.search(("alice",)) == []
    with pytest.raises(InvalidNamespaceError):
        store.search(())


def test_abatch_runs_the_work_off_the_event_loop(store, mem):
    store.put(("alice",), "tea", {"content": "Green tea."})
    loop_thread, ticks = [], [0]

    async def run():
        loop_thread.append(threading.get_ident())
        work = asyncio.ensure_future(store.aget(("alice",), "tea"))
        while not work.done():  # the loop keeps turning while the store works
            ticks[0] += 1
            await asyncio.sleep(0)
        return await work

    item = asyncio.run(run())
    assert item.value == {"content": "Green tea."}
    assert ticks[0] > 1


class Turn(TypedDict):
    user_id: str
    message: str
    recalled: list[str]


def remember(state: Turn, *, store: BaseStore) -> dict:
    store.put((state["user_id"],), "drink", {"content": state["message"]})
    return {}


def recall(state: Turn, *, store: BaseStore) -> dict:
    return {"recalled": [item.value["content"] for item in store.search((state["user_id"],), query="drink")]}


def graph_of(*nodes):
    builder = StateGraph(Turn)
    for node in nodes:
        builder.add_node(node)
    builder.add_edge(START, nodes[0].__name__)
    for before, after in itertools.pairwise(nodes):
        builder.add_edge(before.__name__, after.__name__)
    builder.add_edge(nodes[-1].__name__, END)
    return builder


def test_a_graph_reads_back_what_it_wrote(store):
    graph = graph_of(remember, recall).compile(store=store)
    out = graph.invoke({"user_id": "alice", "message": "Alice's favourite drink is green tea.", "recalled": []})
    assert out["recalled"] == ["Alice's favourite drink is green tea."]
    # A later run of the graph, for another user, does not see it.
    later = graph_of(recall).compile(store=store).invoke({"user_id": "bob", "message": "", "recalled": []})
    assert later["recalled"] == []


async def aremember(state: Turn, *, store: BaseStore) -> dict:
    await store.aput((state["user_id"], "coding"), "editor", {"content": state["message"], "type": "preference"})
    return {}


async def arecall(state: Turn, *, store: BaseStore) -> dict:
    items = await store.asearch((state["user_id"],), query="editor", filter={"type": "preference"})
    return {"recalled": [f"{item.namespace[-1]}: {item.value['content']}" for item in items]}


def test_an_async_graph_reads_back_what_it_wrote(store, facade):
    graph = graph_of(aremember, arecall).compile(store=store)
    out = asyncio.run(graph.ainvoke({"user_id": "alice", "message": "Alice edits code in Vim.", "recalled": []}))
    assert out["recalled"] == ["coding: Alice edits code in Vim."]
    (hit,) = facade.mem_list_observations("alice", scope="coding")
    assert isinstance(hit, types.ObservationCompact) and hit.type == "preference"


def test_a_key_is_checked_as_the_topic_key_it_becomes(store):
    with pytest.raises(ValidationError) as raised:
        store.put(("alice",), "k" * 121, {"content": "c"})
    assert (raised.value.field, raised.value.limit, raised.value.size) == ("key", 120, 121)
    with pytest.raises(ValidationError) as raised:
        store.put(("alice",), "   ", {"content": "c"})
    assert raised.value.field == "key"
    with pytest.raises(ValidationError) as raised:
        store.put(("alice",), "k", {"content": "c", "langgraph": 1})
    assert raised.value.field == "value"
    assert store.search(("alice",)) == []


def test_what_each_operation_reads_in_process(facade):
    store = MemoryStore(facade)
    for n in range(3):
        store.put(("alice",), f"note-{n}", {"content": f"note {n}"})
    # get: the key's observation, then it in full; a search: the hits, then each in full;
    # the namespaces: the user's counts per scope.
    assert queries(lambda: store.get(("alice",), "note-1")) == 2
    assert queries(lambda: store.search(("alice",), limit=3)) == 1 + 3
    assert queries(lambda: store.list_namespaces(prefix=("alice",))) == queries(
        lambda: facade.mem_stats("alice", scope="*"))


def queries(call) -> int:
    """How many queries ``call`` sends to the database."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def test_a_memory_saved_by_another_face_is_an_item_keyed_by_its_id(store, facade):
    saved = facade.mem_save("alice", "Tea", "Alice drinks green tea.", type="preference",
                            metadata={"source": "chat"}).observation
    (item,) = store.search(("alice",))
    assert (item.key, item.namespace) == (saved.id, ("alice",))
    assert item.value == {"source": "chat", "title": "Tea", "content": "Alice drinks green tea.", "type": "preference"}
    assert store.get(("alice",), saved.id) == item
    store.delete(("alice",), saved.id)
    assert facade.mem_stats("alice").deleted_observations == 1
