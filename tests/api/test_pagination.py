"""pagination.py: a crafted cursor is a 404, never a server error."""

import base64

import pytest

from tests.api.conftest import API


@pytest.mark.parametrize("path", ["observations/", "sessions/"])
@pytest.mark.parametrize("position", [b"p=notadate", b"p=2026-13-45T99:00:00", b"o=1&p=%00"])
def test_a_crafted_cursor_is_404_not_a_server_error(as_alice, path, position):
    cursor = base64.b64encode(position).decode()
    response = as_alice.get(API + path, {"cursor": cursor})
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
