"""metadata.py: OPTIONS says what a client may send: the writable fields, which are required, and
the server's fields as read-only."""


import pytest

from tests.api.test_views import send


def test_options_on_observations_describes_the_input_and_marks_server_fields_read_only(as_alice):
    response = send(as_alice, "OPTIONS", "observations/")
    assert response.status_code == 200
    post = response.json()["actions"]["POST"]
    assert {name for name, info in post.items() if info["required"]} == {"title", "content"}
    writable = {name for name, info in post.items() if not info["read_only"]}
    assert writable == {"user_id", "scope", "title", "content", "type", "topic_key", "metadata", "happened_at",
                        "expires_at", "ttl"}
    for name in ("id", "session_id", "revision_count", "created_at", "deleted_at"):
        assert post[name]["read_only"] is True and post[name]["required"] is False


def test_options_on_an_observation_describes_patch_with_no_required_field(as_alice):
    saved = send(as_alice, "POST", "observations/", {"title": "t", "content": "c"}).json()["observation"]
    actions = send(as_alice, "OPTIONS", f"observations/{saved['id']}/").json()["actions"]
    assert set(actions) == {"PATCH"}
    assert not any(info["required"] for info in actions["PATCH"].values())
    assert actions["PATCH"]["id"]["read_only"] is True and actions["PATCH"]["title"]["read_only"] is False


@pytest.mark.parametrize(
    ("path", "writable"),
    [("sessions/start/", {"user_id", "scope"}), ("sessions/end/", {"user_id", "scope", "summary"}),
     ("import/", {"user_id", "data", "scope"}), ("forget/", {"user_id", "confirm", "scope"})],
)
def test_options_on_the_other_writes_lists_what_they_accept(as_alice, path, writable):
    post = send(as_alice, "OPTIONS", path).json()["actions"]["POST"]
    assert {name for name, info in post.items() if not info["read_only"]} == writable
