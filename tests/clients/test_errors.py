"""client/errors.py: the API's errors raised as the facade's exceptions, with field, limit and size."""

from __future__ import annotations

from pathlib import Path

import pytest

from ilab_memory.client import ApiError, MemoryClient, NotAuthenticated
from ilab_memory.exceptions import NoActiveSession, ObservationNotFound, SessionNotFound, ValidationError

ROOT = Path(__file__).resolve().parents[2]


def test_bad_input_is_the_facades_validation_error_with_field_limit_and_size(remote):
    with pytest.raises(ValidationError) as raised:
        remote.mem_save("alice", "t" * 301, "c")
    error = raised.value
    assert (error.field, error.code, error.limit, error.size) == ("title", "max_length", 300, 301)
    assert str(error) == "title: is 301 characters long; the limit is 300 characters."
    assert error.errors == {"title": ["is 301 characters long; the limit is 300 characters."]}


def test_every_validation_error_has_errors_whoever_raises_it(mem, remote):
    """The API's, the client's own checks' and the facade's alike: ``errors`` maps the field to
    its messages."""
    for call in (lambda: mem.mem_save("alice", "t" * 301, "c"), lambda: mem.mem_search("alice", "x", limit="ten"),
                 lambda: remote.mem_update("alice", "00000000-0000-4000-8000-000000000000", colour="red")):
        with pytest.raises(ValidationError) as raised:
            call()
        error = raised.value
        assert error.errors == {error.field: [error.message]}


def test_a_query_too_long_for_a_url_is_refused_naming_it_and_never_sent(remote):
    """Servers refuse a long URL with a page that names no field; the client refuses it first,
    naming the query. A query the API's own limit refuses is sent, and the API names it too."""
    from gunicorn.config import LimitRequestLine

    from ilab_memory.client import transport

    # The limit fits the smallest common server limit: gunicorn's request line, with method and protocol.
    assert len("GET ") + transport.MAX_URL_BYTES + len(" HTTP/1.1") <= LimitRequestLine.default
    with pytest.raises(ValidationError) as raised:
        remote.mem_search("alice", "ask " * (transport.MAX_URL_BYTES // 4))
    error = raised.value
    assert (error.field, error.code, error.limit) == ("query", "max_length", transport.MAX_URL_BYTES)
    assert error.size > transport.MAX_URL_BYTES
    with pytest.raises(ValidationError) as raised:
        remote.mem_search("alice", "ask " * 200)
    assert (raised.value.field, raised.value.code, raised.value.limit) == ("query", "max_length", 500)
    # 400 characters of a 3-byte script fit (3,600 bytes encoded): the API answers, not the client.
    assert remote.mem_search("alice", "中" * 400) == []


def test_missing_rows_are_the_facades_lookup_errors(remote):
    with pytest.raises(NoActiveSession) as raised:
        remote.mem_session_end("alice")
    assert isinstance(raised.value, LookupError)
    with pytest.raises(SessionNotFound):
        remote.mem_get_session("alice", "00000000-0000-4000-8000-000000000000")
    with pytest.raises(ObservationNotFound):
        remote.mem_get_observation("alice", "not-a-uuid/../../stats")  # never reaches another path


def test_a_bad_token_is_not_authenticated(client_for, api_url, live_db):
    client = MemoryClient(api_url, "0" * 40)
    with pytest.raises(NotAuthenticated) as raised:
        client.mem_stats("alice")
    assert isinstance(raised.value, PermissionError) and raised.value.status == 401


def test_a_path_that_is_not_the_api_is_an_api_error(site, accounts, live_db):
    client = MemoryClient(site + "/api/elsewhere/", accounts["agent"].token)
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    assert raised.value.status == 404
    client = MemoryClient(site + "/admin/login/", accounts["agent"].token)  # a page, not the API's JSON
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    assert (raised.value.status, raised.value.code) == (200, "not_json")


def test_a_base_url_at_the_sites_root_says_it_must_be_the_apis_mount_and_names_the_url(site, accounts, live_db):
    client = MemoryClient(site, accounts["agent"].token)  # the site, not where it mounts the API
    with pytest.raises(ApiError) as raised:
        client.mem_stats("alice")
    message = str(raised.value)
    assert raised.value.status == 404
    assert f"No memory API at {site}/stats/?user_id=alice." in message
    assert "base_url must be the API's mount" in message and "/api/memory/" in message
    assert f"it is {site}/." in message
