"""services/export.py: one user's data as a document, of every scope, of one or of a list of them."""

import json

import pytest

from ilab_memory.exceptions import ValidationError
from ilab_memory.services.document import FORMAT, VERSION
from ilab_memory.services.export import user_export_json
from tests.histories import fill, fill_scopes, scopes_of


def test_export_holds_every_session_observation_and_revision(mem, clock):
    document = fill(mem)
    assert document["format"] == FORMAT and document["version"] == VERSION
    assert document["user_id"] == "alice"
    assert sorted(s["status"] for s in document["sessions"]) == ["active", "completed"]
    assert len(document["observations"]) == 4
    assert any(o["deleted_at"] for o in document["observations"])
    assert [(r["revision"], r["content"]) for r in document["revisions"]] == [(1, "vim")]
    json.dumps(document)  # JSON-ready as it is


def test_export_contains_nothing_of_another_user(mem, clock):
    fill(mem, "alice")
    mem.mem_save("bob", "Bob's secret plan", "bob only")
    assert "bob" not in json.dumps(mem.mem_export("alice"))


def test_export_json_stream_is_the_same_document(mem, clock):
    document = fill(mem)
    streamed = json.loads("".join(user_export_json(user_id="alice")))
    assert streamed == document


def test_export_uses_a_bounded_number_of_queries(mem, clock, django_assert_max_num_queries):
    for n in range(40):
        mem.mem_save("alice", f"m{n}", f"c{n}", topic_key=f"t{n % 5}")
    with django_assert_max_num_queries(3):
        document = mem.mem_export("alice")
    assert len(document["revisions"]) == 35


def test_export_of_every_scope_names_each_records_scope(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    assert document["version"] == VERSION == 3
    assert scopes_of(document["sessions"]) == scopes_of(document["observations"]) == ["", "coder", "writer"]
    assert len(document["sessions"]) == 6 and len(document["observations"]) == 12
    assert len(document["revisions"]) == 3
    by_id = {s["id"]: s["scope"] for s in document["sessions"]}
    assert all(by_id[o["session_id"]] == o["scope"] for o in document["observations"])
    assert document == mem.mem_export("alice", scope="*")


def test_export_of_a_scope_holds_that_scope_only_not_the_shared_space(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice", scope="coder")
    assert scopes_of(document["sessions"]) == scopes_of(document["observations"]) == ["coder"]
    assert len(document["observations"]) == 4
    assert [r["content"] for r in document["revisions"]] == ["vim for coder"]
    shared = mem.mem_export("alice", scope="")
    assert scopes_of(shared["observations"]) == [""] and len(shared["sessions"]) == 2


def test_export_of_a_list_holds_exactly_those_scopes(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice", scope=["writer", "coder"])
    assert scopes_of(document["observations"]) == ["coder", "writer"]


def test_export_json_of_a_scope_is_the_same_document(mem, clock):
    fill_scopes(mem, clock=clock)
    streamed = json.loads("".join(user_export_json(user_id="alice", scope="writer")))
    assert streamed == mem.mem_export("alice", scope="writer")


@pytest.mark.parametrize("scope", ["Coder", "a b", "x" * 65, 7, []])
def test_export_refuses_a_bad_scope(mem, scope):
    with pytest.raises(ValidationError) as error:
        mem.mem_export("alice", scope=scope)
    assert error.value.field == "scope"
