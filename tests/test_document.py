"""services/document.py: what an import reads of a document, older versions included, and the bad
document or record it refuses, naming the field, before anything is written."""

import copy

import pytest

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import (
    Observation,
    ObservationVector,
    Session,
)
from tests.histories import (
    as_version_1,
    fill_scopes,
    first,
    move_scope,
    nothing_of,
    the_document,
    valid_document,
)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(format="other"), "format"),
        (lambda d: d.update(version=4), "version"),
        (lambda d: d.update(version=True), "version"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d.update(sessions={}), "sessions"),
        (lambda d: d["sessions"][0].update(status="paused"), "sessions[0].status"),
        (lambda d: d["sessions"][0].update(status="completed", ended_at=None), "sessions[0].ended_at"),
        (lambda d: d["sessions"][0].update(started_at="yesterday"), "sessions[0].started_at"),
        (lambda d: d["sessions"][0].update(started_at="2026-01-01T00:00:00"), "sessions[0].started_at"),
        (lambda d: d["sessions"][0].update(id="not-a-uuid"), "sessions[0].id"),
        (lambda d: d["sessions"][0].update(summary="x" * 20_001), "sessions[0].summary"),
        (lambda d: d["sessions"][1].update(status="active", ended_at=None) or d["sessions"][0].update(
            status="active", ended_at=None), "sessions"),
        (lambda d: d["sessions"].append(dict(d["sessions"][0])), "sessions[2].id"),
        (lambda d: d["observations"][0].update(title="t" * 301), "observations[0].title"),
        (lambda d: d["observations"][0].update(content=""), "observations[0].content"),
        (lambda d: d["observations"][0].update(content="a\x00b"), "observations[0].content"),
        (lambda d: d["observations"][0].update(title="\ud800"), "observations[0].title"),
        (lambda d: d["observations"][0].update(type="Not A Slug"), "observations[0].type"),
        (lambda d: d["observations"][0].update(metadata=[1]), "observations[0].metadata"),
        (lambda d: d["observations"][0].update(revision_count=0), "observations[0].revision_count"),
        (lambda d: d["observations"][0].update(duplicate_count="3"), "observations[0].duplicate_count"),
        (lambda d: d["observations"][0].update(colour="red"), "observations[0].colour"),
        (lambda d: d["observations"][0].pop("title"), "observations[0].title"),
        (lambda d: d["observations"][0].update(session_id="00000000-0000-4000-8000-000000000000"),
         "observations[0].session_id"),
        (lambda d: d["revisions"][0].update(observation_id="00000000-0000-4000-8000-000000000000"),
         "revisions[0].observation_id"),
        (lambda d: d["revisions"].append(dict(d["revisions"][0])), "revisions[1].revision"),
        (lambda d: d["observations"].append(d["observations"][-1]), "observations[4].id"),
        (lambda d: d["observations"].append(5), "observations[4]"),
    ],
)
def test_bad_document_names_the_field_and_writes_nothing(mem, clock, mutate, field):
    document = valid_document(mem)
    mutate(document)
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", document)
    assert error.value.field == field
    assert not Session.objects.exists() and not Observation.objects.exists()


def test_bad_row_late_in_a_large_document_writes_nothing(mem, clock):
    for n in range(30):
        mem.mem_save("alice", f"memory {n}", f"content {n}")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    document["observations"][-1]["content"] = "c" * 50_001
    with pytest.raises(ValidationError, match="observations\\[29\\].content"):
        mem.mem_import("alice", document)
    assert not Observation.objects.exists()


def test_import_of_a_non_object_is_a_validation_error(mem):
    for data in (None, [], "text", 3):
        with pytest.raises(ValidationError):
            mem.mem_import("alice", data)


def test_a_version_1_document_goes_to_the_shared_space(mem, clock):
    fill_scopes(mem, clock=clock)
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
    fill_scopes(mem, clock=clock)
    old = as_version_1(mem.mem_export("alice"))
    mem.mem_forget_user("alice")
    with pytest.raises(ValidationError) as error:
        mem.mem_import("alice", old)
    assert (error.value.field, error.value.code) == ("sessions", "several_active_sessions")
    assert nothing_of("alice")


def test_a_version_1_document_holds_no_scope_field(mem, clock):
    fill_scopes(mem, clock=clock)
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
