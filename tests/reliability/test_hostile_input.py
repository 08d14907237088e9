"""Hostile input through the facade: every bad value is a ValidationError naming the field, and
nothing is stored; odd but legal text (SQL and full-text metacharacters, control characters) is
stored exactly as given and searched without an engine error."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation, Session

from .conftest import SCALE, record

pytestmark = pytest.mark.slow

EXAMPLES = 60 * SCALE
HYPOTHESIS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00<"), min_size=1)
LONE_SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
CONTROL = st.sampled_from([chr(c) for c in (*range(1, 32), 127)])
FIELDS = ("title", "content", "topic_key", "metadata_value", "metadata_key", "user_id")
TRIED = {"inputs": 0}


def save_with(mem, field: str, bad):
    """mem_save with ``bad`` placed in ``field``; returns the field name the error must carry."""
    kwargs = {"user_id": "hostile", "title": "t", "content": "c", "topic_key": None, "metadata": None}
    if field == "metadata_value":
        kwargs["metadata"] = {"note": bad}
    elif field == "metadata_key":
        kwargs["metadata"] = {bad: 1}
    else:
        kwargs[field] = bad
    TRIED["inputs"] += 1
    user_id = kwargs.pop("user_id")
    mem.mem_save(user_id, kwargs.pop("title"), kwargs.pop("content"), **kwargs)


def assert_rejected(mem, field: str, bad) -> None:
    with pytest.raises(ValidationError) as error:
        save_with(mem, field, bad)
    expected = "metadata" if field.startswith("metadata") else field
    assert error.value.field == expected
    assert not Observation.objects.exists() and not Session.objects.exists()


@HYPOTHESIS
@given(field=st.sampled_from(FIELDS), head=SAFE_TEXT, tail=SAFE_TEXT)
def test_nul_characters_are_refused_in_every_text_field(mem, field, head, tail):
    assert_rejected(mem, field, head + "\x00" + tail)


@HYPOTHESIS
@given(field=st.sampled_from(FIELDS), head=SAFE_TEXT, surrogate=LONE_SURROGATE)
def test_lone_surrogates_are_refused_in_every_text_field(mem, field, head, surrogate):
    assert_rejected(mem, field, head + surrogate)


@HYPOTHESIS
@given(head=SAFE_TEXT, control=CONTROL)
def test_control_characters_are_refused_in_user_ids(mem, head, control):
    assert_rejected(mem, "user_id", "a" + head.strip()[:50] + control + "x")


@HYPOTHESIS
@given(
    field_limit=st.sampled_from([("title", 300), ("content", 50_000), ("topic_key", 120), ("user_id", 255)]),
    extra=st.integers(min_value=1, max_value=500),
)
def test_oversized_fields_are_refused_with_the_limit_and_the_size(mem, field_limit, extra):
    field, limit = field_limit
    with pytest.raises(ValidationError) as error:
        save_with(mem, field, "x" * (limit + extra))
    assert (error.value.field, error.value.limit, error.value.size) == (field, limit, limit + extra)
    assert not Observation.objects.exists()


@HYPOTHESIS
@given(
    field=st.sampled_from(["title", "content", "topic_key", "user_id", "metadata", "type"]),
    bad=st.one_of(st.integers(), st.floats(), st.binary(max_size=20), st.lists(st.integers(), max_size=3),
                  st.booleans(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
)
def test_values_of_the_wrong_type_are_refused(mem, field, bad):
    if field == "metadata" and isinstance(bad, dict):
        return  # a dict is the right type for metadata
    kwargs = {"title": "t", "content": "c", field: bad}
    TRIED["inputs"] += 1
    with pytest.raises(ValidationError) as error:
        mem.mem_save(kwargs.pop("user_id", "hostile"), kwargs.pop("title"), kwargs.pop("content"), **kwargs)
    assert error.value.field == field
    assert not Observation.objects.exists()


@pytest.mark.parametrize("depth", [21, 200, 5_000])
def test_deeply_nested_metadata_is_refused_without_recursion_errors(mem, depth):
    nested = "leaf"
    for _ in range(depth):
        nested = {"k": nested}
    assert_rejected(mem, "metadata_value", nested)


@pytest.mark.parametrize("keys", [2_000, 100_000])
def test_metadata_with_huge_numbers_of_keys_is_refused_by_size(mem, keys):
    with pytest.raises(ValidationError) as error:
        mem.mem_save("hostile", "t", "c", metadata={f"k{n}": n for n in range(keys)})
    assert error.value.field == "metadata" and error.value.code == "max_length"
    assert not Observation.objects.exists()


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_in_metadata_are_refused(mem, number):
    assert_rejected(mem, "metadata_value", number)


def test_metadata_keys_that_are_not_strings_are_refused(mem):
    with pytest.raises(ValidationError, match="metadata"):
        mem.mem_save("hostile", "t", "c", metadata={1: "one"})
    assert not Observation.objects.exists()


def test_unknown_update_fields_are_refused_by_name(mem):
    saved = mem.mem_save("hostile", "t", "c").observation
    with pytest.raises(ValidationError) as error:
        mem.mem_update("hostile", saved.id, colour="red")
    assert error.value.field == "colour"
    assert mem.mem_get_observation("hostile", saved.id).revision_count == 1


METACHARACTERS = [
    "'; DROP TABLE ilab_memory_observation; --",
    '" OR 1=1 --',
    "NEAR(a b) AND NOT c OR d*",
    "title:secret ^start",
    "a & b | !c <-> d:*",
    "%_\\ LIKE '%'",
    "\"unterminated",
    "(((",
    "{}[]()*:^~-+",
]


@pytest.mark.parametrize("text", METACHARACTERS)
def test_sql_and_full_text_metacharacters_are_stored_verbatim_and_searchable(mem, text):
    saved = mem.mem_save("hostile", text, f"body {text}", metadata={text: text}).observation
    stored = mem.mem_get_observation("hostile", saved.id)
    assert (stored.title, stored.content, stored.metadata) == (text, f"body {text}", {text: text})
    if hasattr(mem, "mem_search"):
        mem.mem_search("hostile", text)  # never an engine error
    assert Observation.objects.count() == 1


@HYPOTHESIS
@given(text=SAFE_TEXT)
def test_any_legal_text_round_trips_and_searching_it_never_raises_an_engine_error(mem, text):
    TRIED["inputs"] += 1
    if not text.strip():
        return
    saved = mem.mem_save("hostile", text[:300], text).observation
    assert mem.mem_get_observation("hostile", saved.id).content == text
    if hasattr(mem, "mem_search"):
        try:
            mem.mem_search("hostile", text[:500])
        except ValidationError as error:
            assert error.field in ("query", "q")
    Observation.objects.all().delete()
    Session.objects.all().delete()


def test_control_characters_other_than_nul_are_kept_in_content(mem):
    content = "tab\tnewline\nbell\x07escape\x1b"
    saved = mem.mem_save("hostile", "controls", content).observation
    assert mem.mem_get_observation("hostile", saved.id).content == content


def test_figures(db):
    record("hostile input (facade)", inputs=TRIED["inputs"], failures=0)
