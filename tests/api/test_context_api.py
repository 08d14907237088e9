"""context/ over HTTP: the ranked memories, the limit, and no session touched."""

from datetime import timedelta

from ilab_memory.models import Session
from tests.api.conftest import API


def save(client, **body):
    body.setdefault("content", "Content")
    return client.post(API + "observations/", body, format="json")


def test_context_ranks_memories_and_touches_no_session(as_alice, clock):
    save(as_alice, title="manual note")
    save(as_alice, title="a decision", type="decision")
    before = Session.objects.get().last_activity_at
    clock.shift(timedelta(hours=1))
    response = as_alice.get(API + "context/")
    assert response.status_code == 200
    titles = [m["title"] for m in response.json()]
    assert titles == ["a decision", "manual note"]
    score = response.json()[0]["score"]
    assert score["kind"] == "context" and 0 < score["value"] and "type_weight" in score["breakdown"]
    assert Session.objects.get().last_activity_at == before


def test_context_limit_is_honoured_and_bounded(as_alice):
    for n in range(3):
        save(as_alice, title=f"n{n}")
    assert len(as_alice.get(API + "context/?limit=2").json()) == 2
    assert as_alice.get(API + "context/?limit=0").status_code == 400
    assert as_alice.get(API + "context/?limit=abc").status_code == 400
