"""Prometheus metrics: saves and searches timed by face, vectors stored, the sweep's counts, the
backlog read at scrape; nothing recorded with METRICS off; no user's data in what is served."""

from datetime import timedelta

import pytest
from django.test import override_settings
from prometheus_client import REGISTRY
from rest_framework.test import APIClient

from ilab_memory.services.embedding import embed_waiting
from tests.api.conftest import API, client_for


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def timed_count(operation: str, face: str) -> float:
    return sample("ilab_memory_operation_seconds_count", operation=operation, face=face)


def scrape() -> str:
    response = APIClient().get(API + "metrics/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def test_facade_saves_and_searches_are_timed_under_the_facade(mem):
    saves, searches = timed_count("save", "facade"), timed_count("search", "facade")
    mem.mem_save("alice", "Likes tea", "Green, no sugar.")
    mem.mem_search("alice", "tea")
    assert timed_count("save", "facade") == saves + 1
    assert timed_count("search", "facade") == searches + 1


def test_api_saves_and_searches_are_timed_under_the_api(db, django_user_model):
    client = client_for(django_user_model.objects.create_user("alice"))
    saves, searches = timed_count("save", "api"), timed_count("search", "api")
    assert client.post(API + "observations/", {"title": "Likes tea", "content": "Green."},
                       format="json").status_code == 201
    assert client.get(API + "observations/search/", {"q": "tea"}).status_code == 200
    assert timed_count("save", "api") == saves + 1
    assert timed_count("search", "api") == searches + 1


def test_a_refused_save_is_timed_too(mem):
    saves = timed_count("save", "facade")
    with pytest.raises(Exception, match="title"):
        mem.mem_save("alice", "", "No title.")
    assert timed_count("save", "facade") == saves + 1


def test_stored_vectors_are_counted(mem):
    mem.mem_save("alice", "Likes tea", "Green, no sugar.")
    mem.mem_save("alice", "Likes cats", "Two of them.")
    before = sample("ilab_memory_vectors_stored_total")
    embed_waiting()
    assert sample("ilab_memory_vectors_stored_total") == before + 2


def test_the_sweep_counts_what_it_closed_and_erased(mem, clock):
    mem.mem_save("alice", "Short-lived", "Gone tomorrow.", ttl=60)
    mem.mem_session_start("bob")
    clock.shift(timedelta(hours=25))
    closed = sample("ilab_memory_sweep_sessions_closed_total")
    erased = sample("ilab_memory_sweep_memories_erased_total")
    assert len(mem.mem_close_idle()) == 2
    assert mem.mem_erase_expired() == 1
    assert sample("ilab_memory_sweep_sessions_closed_total") == closed + 2
    assert sample("ilab_memory_sweep_memories_erased_total") == erased + 1


def test_the_scrape_reads_the_backlog_and_the_expired_sessions(mem, clock):
    mem.mem_save("alice", "Likes tea", "Green, no sugar.")
    clock.shift(timedelta(hours=25))
    text = scrape()
    assert "ilab_memory_embedding_backlog 1.0" in text
    assert f"ilab_memory_embedding_backlog_oldest_seconds {25 * 3600:.1f}" in text
    assert "ilab_memory_sessions_expired_open 1.0" in text


def test_what_is_served_names_no_user(mem):
    mem.mem_save("user-with-a-secret-name", "Secret title", "Secret content.")
    mem.mem_search("user-with-a-secret-name", "secret")
    text = scrape()
    assert "secret" not in text.lower()


@override_settings(ILAB_MEMORY={"METRICS": False})
def test_metrics_off_records_nothing_and_serves_a_404(mem):
    saves = timed_count("save", "facade")
    mem.mem_save("alice", "Likes tea", "Green, no sugar.")
    assert timed_count("save", "facade") == saves
    response = APIClient().get(API + "metrics/")
    assert response.status_code == 404 and "METRICS" in response.json()["detail"]


def test_registering_the_backlog_collector_reads_no_database(mem):
    """The first counted call of a process registers the collector: it must not cost a save or a
    search three reads of the backlog."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from prometheus_client import CollectorRegistry

    from ilab_memory.metrics import BacklogCollector

    with CaptureQueriesContext(connection) as ctx:
        CollectorRegistry(auto_describe=True).register(BacklogCollector())  # as the global REGISTRY
    assert ctx.captured_queries == []
