"""services/imports.py: a document written back, with the same ids, each record in its scope or in a given
one; the per-scope rules hold after it (one active session, one live topic)."""

import json
from datetime import timedelta

import pytest

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import (
    Observation,
    ObservationRevision,
    ObservationVector,
    Session,
    SessionStatus,
)
from ilab_memory.services.embedding import embed_waiting
from tests.histories import fill, fill_scopes, nothing_of, open_session_id, the_document


def test_import_into_empty_user_recreates_everything_with_the_same_ids(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    counts = mem.mem_import("alice", document)
    assert counts["sessions_created"] == 2 and counts["observations_created"] == 4
    assert counts["revisions_created"] == 1
    again = mem.mem_export("alice")
    assert again["sessions"] == document["sessions"]
    assert again["observations"] == document["observations"]
    assert again["revisions"] == document["revisions"]


def test_importing_the_same_export_twice_adds_nothing(mem, clock):
    document = fill(mem)
    before = (Session.objects.count(), Observation.objects.count(), ObservationRevision.objects.count())
    counts = mem.mem_import("alice", document)
    assert counts["sessions_created"] == counts["observations_created"] == counts["revisions_created"] == 0
    assert counts["observations_skipped"] == 4
    assert (Session.objects.count(), Observation.objects.count(), ObservationRevision.objects.count()) == before


def test_imported_memories_are_found_by_the_normal_reads(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    mem.mem_import("alice", document)
    titles = {m.title for m in mem.mem_session_start("alice").memories}
    assert {"Uses Postgres", "Editor", "Second"} <= titles
    assert "Obsolete" not in titles


def test_import_redacts_private_blocks_smuggled_into_a_document(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    observation = document["observations"][0]
    observation["content"] = "safe <private>hunter2</private> text"
    observation["metadata"] = {"note": "<PRIVATE>pin 1234</PRIVATE>"}
    document["sessions"][0]["summary"] = "summary <private>secret</private>"
    document["revisions"][0]["title"] = "<private>old secret"
    mem.mem_import("alice", document)
    dumped = json.dumps(mem.mem_export("alice"))
    for secret in ("hunter2", "1234", "secret"):
        assert secret not in dumped
    stored = Observation.objects.get(pk=observation["id"])
    assert stored.content == "safe [REDACTED] text" and stored.redacted_blocks >= 2


def test_import_refuses_rows_that_belong_to_another_user_and_writes_nothing(mem, clock):
    document = fill(mem, "alice")
    before = Observation.objects.count()
    with pytest.raises(ValidationError) as error:
        mem.mem_import("mallory", document)
    assert error.value.field == "sessions[0].id" and error.value.code == "id_taken"
    assert Observation.objects.count() == before
    assert not Session.objects.filter(user_id="mallory").exists()
    assert Observation.objects.filter(user_id="alice").count() == before


def test_import_into_another_user_id_keeps_ids_when_they_are_free(mem, clock):
    document = fill(mem, "alice")
    mem.mem_forget_user("alice")
    mem.mem_import("alice-renamed", document)
    assert Observation.objects.filter(user_id="alice-renamed").count() == 4


def test_imported_active_session_is_closed_when_the_user_already_has_one(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    here = mem.mem_session_start("alice").session_id
    counts = mem.mem_import("alice", document)
    assert counts["sessions_closed"] == 1
    assert list(Session.objects.filter(user_id="alice").active().values_list("id", flat=True)) == [
        Session.objects.get(pk=here).pk
    ]
    imported = Session.objects.get(pk=open_session_id(document))
    assert imported.status == SessionStatus.COMPLETED
    assert imported.is_auto_generated and imported.summary == "Memories: [manual] Second"


def test_imported_expired_active_session_is_closed_when_it_expired(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    clock.shift(timedelta(hours=30))
    mem.mem_import("alice", document)
    imported = Session.objects.get(pk=open_session_id(document))
    assert imported.status == SessionStatus.COMPLETED
    assert imported.ended_at == imported.last_activity_at + timedelta(hours=24)


def test_imported_active_session_stays_active_when_the_user_has_none(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    mem.mem_import("alice", document)
    assert mem.mem_session_start("alice").session_id == open_session_id(document)


def test_imported_live_topic_already_in_use_is_imported_soft_deleted(mem, clock):
    document = fill(mem)
    mem.mem_forget_user("alice")
    mine = mem.mem_save("alice", "Editor", "emacs", topic_key="editor").observation
    counts = mem.mem_import("alice", document)
    assert counts["observations_hidden"] == 1
    assert mem.mem_get_observation("alice", mine.id).content == "emacs"
    topic_rows = Observation.objects.filter(user_id="alice", topic_key="editor")
    assert topic_rows.live().count() == 1 and topic_rows.deleted().count() == 1


def test_import_keeps_each_records_scope(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    counts = mem.mem_import("alice", document)
    assert counts["sessions_created"] == 6 and counts["observations_created"] == 12
    assert counts["sessions_closed"] == counts["observations_hidden"] == 0
    again = mem.mem_export("alice")
    for name in ("sessions", "observations", "revisions"):
        assert again[name] == document[name]
    assert Session.objects.filter(user_id="alice").active().count() == 3  # one in each scope


def test_import_into_a_given_scope_puts_every_row_and_vector_there(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    counts = mem.mem_import("alice", document, scope="archive")
    assert counts["observations_created"] == 12
    # Three scopes met in one: the latest open session and the latest live "editor" stay.
    assert counts["sessions_closed"] == 2 and counts["observations_hidden"] == 2
    (active,) = Session.objects.filter(user_id="alice").active()
    assert str(active.pk) == max((s for s in document["sessions"] if s["status"] == "active"),
                            key=lambda s: s["last_activity_at"])["id"]
    (editor,) = Observation.objects.filter(user_id="alice", topic_key="editor").live()
    assert editor.content == "helix for writer"
    assert set(Session.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"archive"}
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"archive"}
    vectors = ObservationVector.objects.filter(user_id="alice")
    assert vectors.count() == Observation.objects.filter(user_id="alice").live().count() > 0
    assert set(vectors.values_list("scope", flat=True)) == {"archive"}
    embed_waiting()
    assert [m.title for m in mem.mem_search("alice", "needle coder", scope="archive")][:1] == ["Fact of coder"]
    assert mem.mem_search("alice", "needle coder", scope="") == []


def test_vectors_queued_by_an_import_carry_each_records_scope(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mem.mem_import("alice", document)
    pairs = set(ObservationVector.objects.filter(user_id="alice").values_list("observation_id", "scope"))
    assert pairs == set(Observation.objects.filter(user_id="alice").live().values_list("id", "scope"))
    assert {scope for _, scope in pairs} == {"", "coder", "writer"}


def test_import_into_a_given_scope_does_not_read_the_records_scopes(mem, clock, settings):
    """A document moves between sites whose SCOPES differ: only the target must be allowed."""
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "SCOPES": ["archive"]}
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert (error.value.field, error.value.code) == ("sessions[2].scope", "scope_not_allowed")
    assert mem.mem_import("alice", document, scope="archive")["observations_created"] == 12


def test_importing_a_scope_twice_adds_nothing(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice", scope="coder")
    mem.mem_forget_user("alice", scope="coder")
    first = mem.mem_import("alice", document)
    again = mem.mem_import("alice", document)
    assert first["observations_created"] == 4 and again["observations_created"] == 0
    assert again["observations_skipped"] == 4
    assert mem.mem_export("alice", scope="coder")["observations"] == document["observations"]


def test_imported_active_session_is_closed_only_where_its_scope_has_one(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    here = mem.mem_session_start("alice", scope="coder").session_id
    counts = mem.mem_import("alice", document)
    assert counts["sessions_closed"] == 1
    active = dict(Session.objects.filter(user_id="alice").active().values_list("scope", "id"))
    opened = {s["scope"]: s["id"] for s in document["sessions"] if s["status"] == "active"}
    assert {scope: str(pk) for scope, pk in active.items()} == {
        "": opened[""], "coder": str(here), "writer": opened["writer"]}
    closed = Session.objects.get(pk=opened["coder"])
    assert closed.status == SessionStatus.COMPLETED and closed.is_auto_generated
    assert closed.summary == "Memories: [manual] Open coder"
    assert str(mem.mem_session_start("alice", scope="writer").session_id) == opened["writer"]


def test_imported_live_topic_is_hidden_only_where_its_scope_holds_it(mem, clock):
    fill_scopes(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mine = mem.mem_save("alice", "Editor", "emacs", topic_key="editor", scope="writer").observation
    counts = mem.mem_import("alice", document)
    assert counts["observations_hidden"] == 1
    live = dict(Observation.objects.filter(user_id="alice", topic_key="editor").live().values_list("scope", "content"))
    assert live == {"": "helix for shared", "coder": "helix for coder", "writer": "emacs"}
    assert mem.mem_get_observation("alice", mine.id, scope="writer").content == "emacs"


@pytest.mark.parametrize("scope", ["*", ["coder"], "Coder", "x" * 65, 3])
def test_import_refuses_a_bad_target_scope(mem, clock, scope):
    mem.mem_save("alice", "First", "one")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document, scope=scope)
    assert error.value.field == "scope"
    assert nothing_of("alice")


def test_an_expired_active_session_of_a_scope_is_closed_when_it_expired(mem, clock):
    document = the_document(mem, clock)
    clock.shift(timedelta(hours=30))
    counts = mem.mem_import("alice", document, scope="coder")
    assert counts["sessions_closed"] == 3  # one scope now: all three were open, all expired
    assert not Session.objects.filter(user_id="alice").active().exists()
