"""Export, import and erasure with scopes: a document per scope or of every scope,
older documents into the shared space, the per-scope rules after an import, one scope erased."""

import copy
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ilab_memory import signals
from ilab_memory.exceptions import ValidationError
from ilab_memory.models import (
    Observation,
    ObservationRevision,
    ObservationVector,
    Session,
    SessionStatus,
    VectorStamp,
)
from ilab_memory.services.document import VERSION
from ilab_memory.services.embedding import embed_waiting
from ilab_memory.services.export import user_export_json


def fill(mem, user_id="alice", *, clock):
    """Three scopes of one user: the shared space, "coder" and "writer", each with a completed
    session, a revised topic, a soft-deleted memory and an open session; a minute apart."""
    for scope in ("", "coder", "writer"):
        clock.shift(timedelta(minutes=1))
        label = scope or "shared"
        mem.mem_save(user_id, f"Fact of {label}", f"needle {label} fact", scope=scope)
        mem.mem_save(user_id, "Editor", f"vim for {label}", topic_key="editor", scope=scope)
        mem.mem_save(user_id, "Editor", f"helix for {label}", topic_key="editor", scope=scope)
        gone = mem.mem_save(user_id, f"Obsolete {label}", "to be deleted", scope=scope).observation.id
        mem.mem_delete(user_id, gone, scope=scope)
        mem.mem_session_end(user_id, f"First session of {label}.", scope=scope)
        mem.mem_save(user_id, f"Open {label}", f"in the open session of {label}", scope=scope)


def scopes_of(rows):
    return sorted({row["scope"] for row in rows})


def as_version_1(document):
    """The same document as ilab_memory wrote it before scopes."""
    old = copy.deepcopy(document)
    old["version"] = 1
    for row in old["sessions"] + old["observations"]:
        del row["scope"]
    return old


def nothing_of(user_id):
    return not Session.objects.filter(user_id=user_id).exists() and not Observation.objects.filter(
        user_id=user_id).exists()


# -- export ------------------------------------------------------------------------------------


def test_export_of_every_scope_names_each_records_scope(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    assert document["version"] == VERSION == 3
    assert scopes_of(document["sessions"]) == scopes_of(document["observations"]) == ["", "coder", "writer"]
    assert len(document["sessions"]) == 6 and len(document["observations"]) == 12
    assert len(document["revisions"]) == 3
    by_id = {s["id"]: s["scope"] for s in document["sessions"]}
    assert all(by_id[o["session_id"]] == o["scope"] for o in document["observations"])
    assert document == mem.mem_export("alice", scope="*")


def test_export_of_a_scope_holds_that_scope_only_not_the_shared_space(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice", scope="coder")
    assert scopes_of(document["sessions"]) == scopes_of(document["observations"]) == ["coder"]
    assert len(document["observations"]) == 4
    assert [r["content"] for r in document["revisions"]] == ["vim for coder"]
    shared = mem.mem_export("alice", scope="")
    assert scopes_of(shared["observations"]) == [""] and len(shared["sessions"]) == 2


def test_export_of_a_list_holds_exactly_those_scopes(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice", scope=["writer", "coder"])
    assert scopes_of(document["observations"]) == ["coder", "writer"]


def test_export_json_of_a_scope_is_the_same_document(mem, clock):
    fill(mem, clock=clock)
    streamed = json.loads("".join(user_export_json(user_id="alice", scope="writer")))
    assert streamed == mem.mem_export("alice", scope="writer")


@pytest.mark.parametrize("scope", ["Coder", "a b", "x" * 65, 7, []])
def test_export_refuses_a_bad_scope(mem, scope):
    with pytest.raises(ValidationError) as error:
        mem.mem_export("alice", scope=scope)
    assert error.value.field == "scope"


# -- import ------------------------------------------------------------------------------------


def test_import_keeps_each_records_scope(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    counts = mem.mem_import("alice", document)
    assert counts["sessions_created"] == 6 and counts["observations_created"] == 12
    assert counts["sessions_closed"] == counts["observations_hidden"] == 0
    again = mem.mem_export("alice")
    for name in ("sessions", "observations", "revisions"):
        assert again[name] == document[name]
    assert Session.objects.filter(user_id="alice").active().count() == 3  # one in each scope


def test_a_version_1_document_goes_to_the_shared_space(mem, clock):
    fill(mem, clock=clock)
    old = as_version_1(mem.mem_export("alice", scope="coder"))
    mem.mem_forget_user("alice")
    counts = mem.mem_import("alice", old)
    assert counts["observations_created"] == 4 and counts["revisions_created"] == 1
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {""}
    assert set(Session.objects.filter(user_id="alice").values_list("scope", flat=True)) == {""}
    assert set(ObservationVector.objects.filter(user_id="alice").values_list("scope", flat=True)) == {""}
    assert [m.title for m in mem.mem_search("alice", "needle")] == ["Fact of coder"]


def test_a_version_1_document_keeps_the_rules_of_one_space(mem, clock):
    """Before scopes a user had one active session: a document with three is not one it wrote."""
    fill(mem, clock=clock)
    old = as_version_1(mem.mem_export("alice"))
    mem.mem_forget_user("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", old)
    assert (error.value.field, error.value.code) == ("sessions", "several_active_sessions")
    assert nothing_of("alice")


def test_a_version_1_document_holds_no_scope_field(mem, clock):
    fill(mem, clock=clock)
    old = as_version_1(mem.mem_export("alice"))
    mem.mem_forget_user("alice")
    old["observations"][2]["scope"] = "coder"
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", old)
    assert (error.value.field, error.value.code) == ("observations[2].scope", "unknown_field")
    assert nothing_of("alice")


def test_a_version_2_record_without_a_scope_goes_to_the_shared_space(mem, clock):
    mem.mem_save("alice", "Kept", "x", scope="coder")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    for row in document["sessions"] + document["observations"]:
        del row["scope"]
    mem.mem_import("alice", document)
    assert Observation.objects.get(user_id="alice").scope == ""


def test_import_into_a_given_scope_puts_every_row_and_vector_there(mem, clock):
    fill(mem, clock=clock)
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
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mem.mem_import("alice", document)
    pairs = set(ObservationVector.objects.filter(user_id="alice").values_list("observation_id", "scope"))
    assert pairs == set(Observation.objects.filter(user_id="alice").live().values_list("id", "scope"))
    assert {scope for _, scope in pairs} == {"", "coder", "writer"}


def test_import_into_a_given_scope_does_not_read_the_records_scopes(mem, clock, settings):
    """A document moves between sites whose SCOPES differ: only the target must be allowed."""
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "SCOPES": ["archive"]}
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert (error.value.field, error.value.code) == ("sessions[2].scope", "scope_not_allowed")
    assert mem.mem_import("alice", document, scope="archive")["observations_created"] == 12


def test_importing_a_scope_twice_adds_nothing(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice", scope="coder")
    mem.mem_forget_user("alice", scope="coder")
    first = mem.mem_import("alice", document)
    again = mem.mem_import("alice", document)
    assert first["observations_created"] == 4 and again["observations_created"] == 0
    assert again["observations_skipped"] == 4
    assert mem.mem_export("alice", scope="coder")["observations"] == document["observations"]


def test_imported_active_session_is_closed_only_where_its_scope_has_one(mem, clock):
    fill(mem, clock=clock)
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
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mine = mem.mem_save("alice", "Editor", "emacs", topic_key="editor", scope="writer").observation
    counts = mem.mem_import("alice", document)
    assert counts["observations_hidden"] == 1
    live = dict(Observation.objects.filter(user_id="alice", topic_key="editor").live().values_list("scope", "content"))
    assert live == {"": "helix for shared", "coder": "helix for coder", "writer": "emacs"}
    assert mem.mem_get_observation("alice", mine.id, scope="writer").content == "emacs"


def test_a_new_observation_of_a_session_the_user_has_in_another_scope_is_refused(mem, clock):
    mem.mem_save("alice", "First", "one")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mem.mem_import("alice", document, scope="coder")
    later = dict(document["observations"][0], id="00000000-0000-4000-8000-000000000001", title="Second")
    document["observations"].append(later)
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document, scope="writer")
    assert (error.value.field, error.value.code) == ("observations[1].session_id", "scope_mismatch")
    assert Observation.objects.filter(user_id="alice").count() == 1
    assert mem.mem_import("alice", document, scope="coder")["observations_created"] == 1


@pytest.mark.parametrize("scope", ["*", ["coder"], "Coder", "x" * 65, 3])
def test_import_refuses_a_bad_target_scope(mem, clock, scope):
    mem.mem_save("alice", "First", "one")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document, scope=scope)
    assert error.value.field == "scope"
    assert nothing_of("alice")


def the_document(mem, clock):
    fill(mem, clock=clock)
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    return document


def move_scope(document, old, new):
    for row in document["sessions"] + document["observations"]:
        if row["scope"] == old:
            row["scope"] = new


def first(rows, scope, **match):
    return next(i for i, row in enumerate(rows) if row["scope"] == scope and all(row[k] == v for k, v in match.items()))


@pytest.mark.parametrize(
    ("mutate", "field", "code"),
    [
        (lambda d: d["observations"][3].update(scope="*"), "observations[3].scope", "one_scope_required"),
        (lambda d: d["observations"][3].update(scope="Coder"), "observations[3].scope", "invalid_scope"),
        (lambda d: d["observations"][3].update(scope="x" * 65), "observations[3].scope", "max_length"),
        (lambda d: d["observations"][3].update(scope=5), "observations[3].scope", "invalid_type"),
        (lambda d: d["observations"][3].update(scope=None), "observations[3].scope", "invalid_type"),
        (lambda d: d["observations"][3].update(scope=["coder"]), "observations[3].scope", "one_scope_required"),
        (lambda d: d["sessions"][2].update(scope="a/b"), "sessions[2].scope", "invalid_scope"),
        # An observation stays in the scope of its session.
        (lambda d: d["observations"][first(d["observations"], "coder")].update(scope="writer"),
         "observations[4].scope", "scope_mismatch"),
        # One active session and one live topic per scope in the document too.
        (lambda d: move_scope(d, "writer", "coder"), "sessions", "several_active_sessions"),
    ],
)
def test_a_bad_scope_in_a_document_names_the_records_field_and_writes_nothing(mem, clock, mutate, field, code):
    document = the_document(mem, clock)
    mutate(document)
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert (error.value.field, error.value.code) == (field, code)
    assert not Session.objects.exists() and not Observation.objects.exists()


def test_one_live_topic_per_scope_in_a_document(mem, clock):
    document = the_document(mem, clock)
    # Two live "editor" topics in two scopes are fine; moved into one scope they clash.
    assert mem.mem_import("alice", copy.deepcopy(document))["observations_hidden"] == 0
    mem.mem_forget_user("alice")
    coder_session = next(s for s in document["sessions"] if s["scope"] == "coder")
    for row in document["observations"]:
        if row["scope"] == "writer":
            row.update(scope="coder", session_id=coder_session["id"])
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert error.value.code == "topic_key_taken" and error.value.field.endswith(".topic_key")
    assert nothing_of("alice")


def test_a_scope_not_in_the_scopes_setting_is_refused(mem, clock, settings):
    document = the_document(mem, clock)
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "SCOPES": ["coder"]}
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert (error.value.field, error.value.code) == ("sessions[4].scope", "scope_not_allowed")
    assert nothing_of("alice")


def test_an_expired_active_session_of_a_scope_is_closed_when_it_expired(mem, clock):
    document = the_document(mem, clock)
    clock.shift(timedelta(hours=30))
    counts = mem.mem_import("alice", document, scope="coder")
    assert counts["sessions_closed"] == 3  # one scope now: all three were open, all expired
    assert not Session.objects.filter(user_id="alice").active().exists()


# -- erasure -----------------------------------------------------------------------------------


def test_forget_one_scope_leaves_the_others_and_their_search(mem, clock):
    fill(mem, clock=clock)
    fill(mem, "bob", clock=clock)
    embed_waiting()
    assert [m.title for m in mem.mem_search("alice", "needle", scope="*")]  # the matrix is cached now
    stamp = VectorStamp.objects.get(user_id="alice").stamp
    kept_revisions = ObservationRevision.objects.filter(user_id="alice").exclude(observation__scope="coder").count()

    counts = mem.mem_forget_user("alice", scope="coder")

    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}
    assert set(Session.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}
    assert ObservationRevision.objects.filter(user_id="alice").count() == kept_revisions == 2
    assert not ObservationVector.objects.filter(user_id="alice", scope="coder").exists()
    assert ObservationVector.objects.filter(user_id="alice", scope="writer").count() == 3
    assert VectorStamp.objects.get(user_id="alice").stamp != stamp  # processes reload the rest
    found = [m.title for m in mem.mem_search("alice", "needle", scope="*")]
    assert "Fact of coder" not in found and {"Fact of shared", "Fact of writer"} <= set(found)
    # Read as the agent "coder": its own memories are gone, the shared space is still there.
    as_coder = mem.mem_search("alice", "needle", scope="coder")
    assert "Fact of shared" in [m.title for m in as_coder] and {m.scope for m in as_coder} == {""}
    assert Observation.objects.filter(user_id="bob").count() == 12
    assert Observation.objects.filter(user_id="bob", scope="coder").count() == 4


def test_forget_the_shared_space_leaves_the_named_scopes(mem, clock):
    fill(mem, clock=clock)
    counts = mem.mem_forget_user("alice", scope="")
    assert counts["sessions"] == 2 and counts["observations"] == 4
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"coder", "writer"}


def test_an_erased_scope_starts_afresh(mem, clock):
    fill(mem, clock=clock)
    mem.mem_forget_user("alice", scope="writer")
    started = mem.mem_session_start("alice", scope="writer")
    assert Session.objects.get(pk=started.session_id).scope == "writer"
    assert all(m.scope == "" for m in started.memories)  # it reads the shared space only now


def test_forget_every_scope_erases_the_whole_user(mem, clock):
    fill(mem, clock=clock)
    embed_waiting()
    counts = mem.mem_forget_user("alice", scope="*")
    assert counts == {"sessions": 6, "observations": 12, "revisions": 3, "vectors": 9}
    assert nothing_of("alice") and not VectorStamp.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()


@pytest.mark.parametrize("scope", [["coder"], "Coder", "x" * 65, 4])
def test_forget_refuses_a_bad_scope_and_erases_nothing(mem, clock, scope):
    fill(mem, clock=clock)
    with pytest.raises(ValidationError) as error:
        mem.mem_forget_user("alice", scope=scope)
    assert error.value.field == "scope"
    assert Observation.objects.filter(user_id="alice").count() == 12


def test_user_forgotten_is_sent_for_the_whole_user_only(tmem, clock):
    fill(tmem, clock=clock)
    got = []

    def receiver(sender, **kwargs):
        got.append(kwargs)

    signals.user_forgotten.connect(receiver)
    try:
        tmem.mem_forget_user("alice", scope="coder")
        assert got == []
        tmem.mem_forget_user("alice")
    finally:
        signals.user_forgotten.disconnect(receiver)
    assert [sorted(k) for k in got] == [["counts", "signal", "user_id", "using"]]
    assert got[0]["counts"]["observations"] == 8


def test_forget_of_a_scope_leaves_no_title_in_the_admin_log(mem):
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    operator = get_user_model().objects.create_user("operator-for-log")
    erased = mem.mem_save("alice", "Coder's secret", "x", scope="coder").observation
    kept = mem.mem_save("alice", "Writer's draft", "y", scope="writer").observation
    for observation in (erased, kept):
        LogEntry.objects.create(
            user=operator, content_type=ContentType.objects.get_for_model(Observation), object_id=observation.id,
            object_repr=observation.title, action_flag=CHANGE, change_message="edited",
        )
    mem.mem_forget_user("alice", scope="coder")
    assert LogEntry.objects.get(object_id=erased.id).object_repr == erased.id
    assert LogEntry.objects.get(object_id=kept.id).object_repr == "Writer's draft"


# -- the commands ------------------------------------------------------------------------------


def test_export_command_writes_one_scope(mem, clock, tmp_path):
    fill(mem, clock=clock)
    target = tmp_path / "coder.json"
    call_command("ilab_memory_export", "alice", "--scope", "coder", output=str(target))
    written = json.loads(target.read_text())
    assert written["observations"] == mem.mem_export("alice", scope="coder")["observations"]
    call_command("ilab_memory_export", "alice", "--scope", "", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == [""]
    call_command("ilab_memory_export", "alice", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == ["", "coder", "writer"]


def test_import_command_puts_a_document_into_a_scope(mem, clock, tmp_path):
    fill(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice")))
    mem.mem_forget_user("alice")
    out = StringIO()
    call_command("ilab_memory_import", "alice", str(path), "--scope", "archive", stdout=out)
    assert "observations_created: 12" in out.getvalue()
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"archive"}


def test_forget_command_erases_one_scope(mem, clock):
    fill(mem, clock=clock)
    out = StringIO()
    call_command("ilab_memory_forget", "alice", "--scope", "coder", yes=True, stdout=out)
    assert "Erased 2 session(s), 4 observation(s), 1 revision(s) of scope 'coder'." in out.getvalue()
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"", "writer"}


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("ilab_memory_export", ["alice", "--scope", "Bad Scope"]),
        ("ilab_memory_import", ["alice", "{path}", "--scope", "*"]),
        ("ilab_memory_forget", ["alice", "--scope", "Bad Scope", "--yes"]),
    ],
)
def test_a_command_given_a_bad_scope_names_it_and_changes_nothing(mem, clock, tmp_path, command, args):
    fill(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice", scope="coder")))
    mem.mem_forget_user("alice", scope="coder")
    before = Observation.objects.count()
    with pytest.raises(CommandError, match="scope: "):
        call_command(command, *[a.replace("{path}", str(path)) for a in args], stdout=StringIO())
    assert Observation.objects.count() == before
