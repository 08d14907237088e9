"""The time values every face passes to the services: moments, ttls and time zones, refused with
the field and the rule, never an exception of the standard library."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ilab_memory.exceptions import ValidationError
from ilab_memory.validation import MAX_TTL_SECONDS, clean_moment, clean_time_zone, clean_ttl

pytestmark = pytest.mark.engine_independent

PLUS_ONE = timezone(timedelta(hours=1))


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
    (0, "min_value"), (0.5, "min_value"), (-5, "min_value"), (timedelta(0), "min_value"), (MAX_TTL_SECONDS + 1, "max_value"),
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
