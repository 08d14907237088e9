"""validation.py: the shape and limit checks every face passes values through, refused with the
field, the rule and the limit, never the value and never an exception of the standard library.
Texts, user ids, counts, slugs, metadata, ids and the fields an update may name; then the time
values: moments, ttls and time zones."""

import uuid
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ilab_memory.conf import get_config
from ilab_memory.exceptions import ObservationNotFound, ValidationError
from ilab_memory.validation import (
    MAX_TTL_SECONDS,
    SEARCH_LIMIT,
    TIMELINE_BEFORE,
    UPDATABLE_FIELDS,
    check_length,
    check_metadata_shape,
    check_metadata_size,
    check_text,
    check_updatable,
    clean_choice,
    clean_moment,
    clean_time_zone,
    clean_ttl,
    clean_type,
    clean_user_id,
    normalize_content,
    normalize_topic_key,
    parse_uuid,
)

pytestmark = pytest.mark.engine_independent

PLUS_ONE = timezone(timedelta(hours=1))
SECRET = "<private>hunter2</private>"


def refused(call, *args, **kwargs) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        call(*args, **kwargs)
    return info.value


# -- texts and user ids ------------------------------------------------------------------------


@pytest.mark.parametrize("value, code", [
    (5, "invalid_type"), ("a\x00b", "null_character"), ("\ud800", "invalid_unicode"), ("   ", "blank"),
])
def test_a_text_the_databases_cannot_store_is_refused_by_its_rule(value, code):
    error = refused(check_text, "title", value)
    assert (error.field, error.code) == ("title", code)


def test_a_blank_text_passes_where_blank_is_allowed():
    assert check_text("summary", "  ", allow_blank=True) == "  "


def test_a_text_too_long_names_the_limit_and_the_size_never_the_value():
    error = refused(check_length, "title", SECRET, 5)
    assert (error.code, error.limit, error.size) == ("max_length", 5, len(SECRET))
    assert "hunter2" not in str(error)


def test_a_user_id_is_stripped_and_refused_with_control_characters_or_too_long():
    assert clean_user_id("  alice ", limit=10) == "alice"
    assert refused(clean_user_id, "ali\tce", limit=10).code == "control_character"
    assert refused(clean_user_id, "x" * 11, limit=10).code == "max_length"
    assert refused(clean_user_id, "", limit=10).field == "user_id"


# -- counts, slugs and choices -----------------------------------------------------------------


def test_a_count_takes_integers_within_its_bounds_and_names_the_bound_it_broke():
    config = get_config()
    assert SEARCH_LIMIT.clean(config.SEARCH_MAX_LIMIT, config) == config.SEARCH_MAX_LIMIT
    assert SEARCH_LIMIT.bounds(config) == (1, config.SEARCH_MAX_LIMIT)
    high = refused(SEARCH_LIMIT.clean, config.SEARCH_MAX_LIMIT + 1, config)
    assert (high.field, high.code, high.limit) == ("limit", "max_value", config.SEARCH_MAX_LIMIT)
    assert refused(TIMELINE_BEFORE.clean, -1, config).code == "min_value"
    assert refused(TIMELINE_BEFORE.clean, True, config).code == "invalid_type"  # a bool is not a count
    assert refused(TIMELINE_BEFORE.clean, "3", config).code == "invalid_type"


def test_a_type_is_a_slug_and_one_of_the_allowed_when_the_site_lists_them():
    assert clean_type("bug-fix_2", allowed=None) == "bug-fix_2"
    assert refused(clean_type, "Bug", allowed=None).code == "invalid_type_slug"
    assert refused(clean_type, "x" * 41, allowed=None).code == "invalid_type_slug"
    assert refused(clean_type, "note", allowed=("decision",)).code == "type_not_allowed"


def test_a_choice_is_one_of_its_exact_strings():
    assert clean_choice("status", "active", allowed=("active", "completed")) == "active"
    error = refused(clean_choice, "status", "Active", allowed=("active", "completed"))
    assert error.code == "invalid_choice" and "'active' or 'completed'" in error.message


def test_topic_keys_and_contents_are_compared_in_their_normal_forms():
    assert normalize_topic_key("  Lisbon   Hotel ") == "lisbon-hotel"
    assert normalize_topic_key("   ") is None
    assert normalize_content("  Two\n  Lines ") == "two lines"


# -- metadata ----------------------------------------------------------------------------------


def test_metadata_is_a_json_object_of_json_values():
    assert check_metadata_shape(None, max_depth=3) == {}
    assert check_metadata_shape({"a": [1, 2.5, None, True, "x"]}, max_depth=3) == {"a": [1, 2.5, None, True, "x"]}
    assert refused(check_metadata_shape, ["a"], max_depth=3).code == "invalid_type"
    assert refused(check_metadata_shape, {"a": float("nan")}, max_depth=3).code == "invalid_number"
    assert refused(check_metadata_shape, {"a": 2**63}, max_depth=3).code == "invalid_number"
    assert refused(check_metadata_shape, {"a": {1, 2}}, max_depth=3).code == "invalid_type"
    assert refused(check_metadata_shape, {1: "a"}, max_depth=3).code == "invalid_key"


def test_metadata_nested_deeper_than_the_limit_is_refused():
    # Each level counts, the values' own included: {"a": {"b": 1}} is three.
    assert check_metadata_shape({"a": {"b": 1}}, max_depth=3)
    error = refused(check_metadata_shape, {"a": {"b": {"c": 1}}}, max_depth=3)
    assert (error.code, error.limit) == ("too_deep", 3)


def test_metadata_size_is_its_compact_utf8_json_in_bytes():
    value = {"é": "ü"}  # {"é":"ü"}: 11 bytes
    assert check_metadata_size(value, limit=11) == value
    error = refused(check_metadata_size, value, limit=10)
    assert (error.code, error.limit, error.size) == ("max_length", 10, 11) and "bytes" in error.message


# -- ids and the fields an update names --------------------------------------------------------


def test_an_id_that_is_no_uuid_is_not_found_never_a_crash():
    known = uuid.uuid4()
    assert parse_uuid(known, ObservationNotFound) == parse_uuid(str(known), ObservationNotFound) == known
    for value in ("not-a-uuid", 5, None, "x" * 10_000):
        with pytest.raises(ObservationNotFound):
            parse_uuid(value, ObservationNotFound)


def test_an_update_may_name_only_the_updatable_fields():
    check_updatable({name: None for name in UPDATABLE_FIELDS})
    error = refused(check_updatable, {"title": "t", "user_id": "bob", "deleted_at": None})
    assert (error.field, error.code) == ("deleted_at", "unknown_field")


# -- time values -------------------------------------------------------------------------------


@pytest.mark.parametrize("value, moment", [
    ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    (date(2026, 3, 1), datetime(2026, 3, 1, tzinfo=UTC)),
    ("2026-03-01T09:30:00Z", datetime(2026, 3, 1, 9, 30, tzinfo=UTC)),
    ("2026-03-01T09:30:00+01:00", datetime(2026, 3, 1, 8, 30, tzinfo=UTC)),
    (datetime(2026, 3, 1, 9, 30, tzinfo=PLUS_ONE), datetime(2026, 3, 1, 8, 30, tzinfo=UTC)),
    (" 2026-03-01T09:30:00.250+00:00 ", datetime(2026, 3, 1, 9, 30, 0, 250000, tzinfo=UTC)),
    (None, None),
])
def test_moments_are_read_in_utc(value, moment):
    read = clean_moment("happened_at", value)
    assert read == moment and (read is None or read.tzinfo is UTC)


@pytest.mark.parametrize("value, code", [
    ("2026-03-01T09:30:00", "naive_datetime"),
    (datetime(2026, 3, 1, 9, 30), "naive_datetime"),
    ("yesterday", "invalid_datetime"),
    ("2026-02-30", "invalid_datetime"),
    ("x" * 100_000, "invalid_datetime"),
    ("2026-03-01\x00", "invalid_datetime"),
    ("0001-01-01T00:00:00+01:00", "out_of_range"),
    (1700000000, "invalid_type"),
    (True, "invalid_type"),
])
def test_bad_moments_name_the_field(value, code):
    with pytest.raises(ValidationError) as error:
        clean_moment("since", value)
    assert (error.value.field, error.value.code) == ("since", code)


@pytest.mark.parametrize("value, seconds", [(1, 1), (90.5, 90.5), (timedelta(days=7), 7 * 86400),
                                            (MAX_TTL_SECONDS, MAX_TTL_SECONDS), (None, None)])
def test_ttls(value, seconds):
    ttl = clean_ttl(value)
    assert (ttl is None and seconds is None) or ttl.total_seconds() == seconds


@pytest.mark.parametrize("value, code", [
    (0, "min_value"), (0.5, "min_value"), (-5, "min_value"), (timedelta(0), "min_value"),
    (MAX_TTL_SECONDS + 1, "max_value"),
    (float("inf"), "invalid_type"), (float("nan"), "invalid_type"), ("60", "invalid_type"), (False, "invalid_type"),
])
def test_bad_ttls_name_the_field(value, code):
    with pytest.raises(ValidationError) as error:
        clean_ttl(value)
    assert (error.value.field, error.value.code) == ("ttl", code)


def test_time_zones():
    assert str(clean_time_zone("Europe/Madrid")) == "Europe/Madrid"
    assert clean_time_zone(UTC) is UTC
    for value, code in (("Mars/Olympus", "invalid_time_zone"), ("../etc/passwd", "invalid_time_zone"),
                        ("", "invalid_time_zone"), ("x" * 65, "max_length"), (1, "invalid_type")):
        with pytest.raises(ValidationError) as error:
            clean_time_zone(value)
        assert (error.value.field, error.value.code) == ("time_zone", code)
