"""Inputs a review found could reach a 500 or echo a value; each is now a clean 4xx."""

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


def test_a_real_cursor_still_pages(as_alice):
    for n in range(3):
        as_alice.post(API + "observations/", {"title": f"t{n}", "content": "c"}, format="json")
    first = as_alice.get(API + "observations/", {"page_size": 2}).json()
    second = as_alice.get(first["next"]).json()
    assert len(first["results"]) == 2 and len(second["results"]) == 1


def test_a_bad_status_filter_does_not_echo_the_value(as_alice):
    response = as_alice.get(API + "sessions/", {"status": "<private>SECRET1</private>"})
    assert response.status_code == 400
    assert "SECRET1" not in response.content.decode()
    assert "status" in response.json()["errors"]


@pytest.mark.parametrize(
    "started_at",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "1969-12-31T23:59:59+00:00"],
)
def test_out_of_range_import_timestamps_are_400(as_alice, started_at):
    document = {
        "format": "ilab_memory.export",
        "version": 1,
        "sessions": [
            {
                "id": "11111111-1111-4111-8111-111111111111",
                "status": "completed",
                "started_at": started_at,
                "last_activity_at": "2024-01-01T00:00:00+00:00",
                "ended_at": "2024-01-01T00:00:00+00:00",
            }
        ],
    }
    response = as_alice.post(API + "import/", {"data": document}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_timestamp"
