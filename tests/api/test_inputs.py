"""The views' input checks answer as the input serializers would, without one per request."""

import pytest
from django.http import QueryDict
from rest_framework.exceptions import ValidationError

from ilab_memory.api import serializers


def serializer_answer(serializer_class, data):
    serializer = serializer_class(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    return {"errors": serializer.errors}


def query_values_answer(serializer_class, data):
    try:
        return dict(serializers.query_values(serializer_class, data))
    except ValidationError as exc:
        return {"errors": exc.detail}


@pytest.mark.parametrize(
    "serializer_class, query",
    [
        (serializers.SearchQuerySerializer, "q=deploy"),
        (serializers.SearchQuerySerializer, "q=deploy&type=manual&limit=5"),
        (serializers.SearchQuerySerializer, ""),
        (serializers.SearchQuerySerializer, "q=x&limit=abc"),
        (serializers.SearchQuerySerializer, "q=x&limit="),
        (serializers.ContextQuerySerializer, ""),
        (serializers.ContextQuerySerializer, "limit=7"),
        (serializers.TimelineQuerySerializer, "before=2"),
        (serializers.TimelineQuerySerializer, "before=1&after=x"),
        (serializers.DeleteQuerySerializer, ""),
        (serializers.DeleteQuerySerializer, "hard=true"),
        (serializers.DeleteQuerySerializer, "hard=maybe"),
    ],
)
def test_query_values_answer_what_the_serializer_answers(serializer_class, query):
    params = QueryDict(query)
    assert query_values_answer(serializer_class, params) == serializer_answer(serializer_class, params)


def test_query_values_keep_no_state_between_calls():
    with pytest.raises(ValidationError):
        serializers.query_values(serializers.SearchQuerySerializer, QueryDict("q=x&limit=abc"))
    assert dict(serializers.query_values(serializers.SearchQuerySerializer, QueryDict("q=x"))) == {"q": "x"}


@pytest.mark.parametrize(
    "serializer_class, body",
    [
        (serializers.ObservationCreateInputSerializer, {"title": "t", "content": "c", "colour": "red"}),
        (serializers.ObservationCreateInputSerializer, {"content": "c"}),
        (serializers.ObservationCreateInputSerializer, {}),
        (serializers.ObservationCreateInputSerializer, {"title": "t", "content": "c", "<private>k9</private>": 1}),
        # a body that is not an object
        *((serializers.SessionStartInputSerializer, body) for body in ([], "text", 3, None)),
    ],
)
def test_body_fields_refuse_what_the_serializer_refuses_in_its_words(serializer_class, body):
    with pytest.raises(ValidationError) as checked:
        serializers.body_fields(serializer_class, body)
    serializer = serializer_class(data=body)
    assert not serializer.is_valid()
    assert checked.value.detail == serializer.errors


def test_body_fields_pass_values_through_unchecked():
    body = {"title": 5, "content": ["c"], "metadata": None}
    assert serializers.body_fields(serializers.ObservationCreateInputSerializer, body) == body


@pytest.mark.parametrize(
    ("path", "query", "field", "code", "limit"),
    [
        ("observations/search/", "q=x&limit=0", "limit", "min_value", 1),
        ("observations/search/", "q=x&limit=51", "limit", "max_value", 50),
        ("context/", "limit=101", "limit", "max_value", 100),
        ("observations/{id}/timeline/", "before=-1", "before", "min_value", 0),
        ("observations/{id}/timeline/", "after=51", "after", "max_value", 50),
    ],
)
def test_a_count_out_of_bounds_is_a_400_in_the_words_of_every_face(as_alice, path, query, field, code, limit):
    """The bounds of ``validation``, checked by ``Count.clean``: the facade raises, MCP answers and
    the API answers the same field, code, limit and words."""
    from ilab_memory import ILabMemory
    from ilab_memory.encoding import error
    from ilab_memory.exceptions import ValidationError as AppValidationError
    from tests.api.conftest import API

    saved = as_alice.post(API + "observations/", {"title": "t", "content": "c"}, format="json").json()
    response = as_alice.get(API + path.format(id=saved["observation"]["id"]) + "?" + query)
    assert response.status_code == 400
    body = response.json()
    assert (list(body["errors"]), body["code"], body["limit"]) == ([field], code, limit)

    value = int(query.rsplit("=", 1)[1])
    method, arguments = {
        "observations/search/": ("mem_search", {"query": "x"}),
        "context/": ("mem_context", {}),
        "observations/{id}/timeline/": ("mem_timeline", {"observation_id": saved["observation"]["id"]}),
    }[path]
    with pytest.raises(AppValidationError) as raised:
        getattr(ILabMemory(), method)(saved["observation"]["user_id"], **arguments, **{field: value})
    assert error(raised.value) == body
