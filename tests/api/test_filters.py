"""filters.py: a list's query-string filters refuse a bad value, naming it as the facade does."""


import pytest

from tests.api.conftest import API
from tests.api.test_views import assert_json_error


@pytest.mark.parametrize("status", ["bogus", "a%00b", "%ED%A0%80", "ACTIVE"])
def test_a_bad_status_filter_is_a_400_naming_it_as_the_facade_does(as_alice, status):
    response = as_alice.get(API + f"sessions/?status={status}")
    assert "status" in assert_json_error(response, 400, "invalid")["errors"]
