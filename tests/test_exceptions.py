"""exceptions.py: the app's own errors name the field, the rule and the sizes, never the value."""

import pytest

from ilab_memory.exceptions import (
    IlabMemoryError,
    NoActiveSession,
    ObservationNotFound,
    SessionNotFound,
    ValidationError,
)


def test_a_validation_error_is_a_value_error_naming_its_field():
    error = ValidationError("title", "must not be blank.", code="blank")
    assert isinstance(error, ValueError) and isinstance(error, IlabMemoryError)
    assert (str(error), error.code, error.errors) == ("title: must not be blank.", "blank",
                                                      {"title": ["must not be blank."]})


def test_too_long_says_the_size_and_the_limit_in_their_unit():
    error = ValidationError.too_long("metadata", limit=10, size=12, unit="bytes")
    assert (error.field, error.code, error.limit, error.size) == ("metadata", "max_length", 10, 12)
    assert error.message == "is 12 bytes long; the limit is 10 bytes."


def test_spelled_renames_the_field_as_a_face_calls_it_and_keeps_the_rest():
    error = ValidationError("query", "is blank.", code="blank", limit=1)
    renamed = error.spelled({"query": "q"})
    assert (renamed.field, renamed.errors, renamed.code, renamed.limit) == ("q", {"q": ["is blank."]}, "blank", 1)
    assert error.spelled({"other": "o"}) is error


@pytest.mark.parametrize("error", [NoActiveSession, ObservationNotFound, SessionNotFound])
def test_a_missing_row_is_a_lookup_error_with_its_own_code(error):
    assert issubclass(error, LookupError) and issubclass(error, IlabMemoryError)
    assert error.code != IlabMemoryError.__dict__.get("code")


def test_the_error_of_a_real_write_holds_no_byte_of_the_value(mem):
    secret = "s3cret-" * 100
    with pytest.raises(ValidationError) as caught:
        mem.mem_save("ana", secret, "content")
    error = caught.value
    assert error.field == "title" and error.code == "max_length" and error.size == len(secret)
    assert "s3cret" not in str(error) and all("s3cret" not in m for ms in error.errors.values() for m in ms)
