"""parsers.py: JSON bodies, bounded: never larger than the host allows, never deep enough to crash
the decoder; a body that is not JSON, or not an object, or holds what no database stores, is a 4xx."""

import io
import json

import pytest
from rest_framework.exceptions import ParseError

from ilab_memory.api.errors import PayloadTooLarge
from ilab_memory.api.parsers import BoundedJSONParser
from ilab_memory.models import Observation, Session
from tests.api.conftest import API
from tests.api.test_errors import post_raw


def test_oversized_body_is_413_and_nothing_is_written(as_alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"title": "t", "content": "x" * 2_000})
    response = post_raw(as_alice, "observations/", body)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert not Observation.objects.exists() and not Session.objects.exists()


def test_parser_enforces_the_limit_on_bodies_without_content_length(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    with pytest.raises(PayloadTooLarge):
        BoundedJSONParser().parse(io.BytesIO(b'{"a": "0123456789"}'))
    assert BoundedJSONParser().parse(io.BytesIO(b'{"a": 1}')) == {"a": 1}


@pytest.mark.parametrize(
    "body",
    [
        "{",
        "not json",
        '{"title": NaN, "content": "x"}',
        '{"title": Infinity, "content": "x"}',
        b'{"title": "\xff\xfe", "content": "x"}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_malformed_json_is_400_parse_error(as_alice, body):
    response = post_raw(as_alice, "observations/", body)
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


def test_deeply_nested_json_never_reaches_the_decoder_stack_limit():
    with pytest.raises(ParseError):
        BoundedJSONParser().parse(io.BytesIO(b"[" * 200_000))


@pytest.mark.parametrize("body", ["[]", '"a string"', "3", "null"])
def test_a_body_that_is_not_an_object_is_400(as_alice, body):
    response = post_raw(as_alice, "observations/", body)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_lone_surrogates_are_400_not_a_database_error(as_alice):
    response = post_raw(as_alice, "observations/", '{"title": "\\ud800", "content": "x"}')
    assert response.status_code == 400
    assert "title" in response.json()["errors"]


def test_surrogates_in_metadata_are_400(as_alice):
    response = post_raw(as_alice, "observations/", '{"title": "t", "content": "x", "metadata": {"k": "\\udfff"}}')
    assert response.status_code == 400
    assert response.json()["errors"] == {"metadata": ["is not valid Unicode text."]}


def test_metadata_nested_too_deep_is_400(as_alice):
    metadata = {}
    inner = metadata
    for _ in range(30):
        inner["k"] = {}
        inner = inner["k"]
    response = as_alice.post(API + "observations/", {"title": "t", "content": "c", "metadata": metadata}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "too_deep"


def test_form_bodies_are_415(as_alice):
    response = post_raw(as_alice, "observations/", "title=a&content=b", "application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"
