"""Export, import and erasure of one user's data (the services, the facade and the commands)."""

import copy
import json
import os
import secrets
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

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
from ilab_memory.services.document import FORMAT, VERSION
from ilab_memory.services.embedding import embed_waiting
from ilab_memory.services.export import user_export_json


def fill(mem, user_id="alice"):
    """A small history: a completed session, a revised topic, a soft-deleted memory, an open session."""
    mem.mem_save(user_id, "Uses Postgres", "The team runs PostgreSQL 15.", type="decision")
    mem.mem_save(user_id, "Editor", "vim", topic_key="editor", metadata={"k": [1, "two"]})
    mem.mem_save(user_id, "Editor", "helix now", topic_key="editor")
    gone = mem.mem_save(user_id, "Obsolete", "to be deleted").observation.id
    mem.mem_delete(user_id, gone)
    mem.mem_session_end(user_id, "First session.")
    mem.mem_save(user_id, "Second", "in the open session")
    return mem.mem_export(user_id)


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


def open_session_id(document):
    (session,) = [s for s in document["sessions"] if s["status"] == "active"]
    return session["id"]


def valid_document(mem):
    document = fill(mem)
    mem.mem_forget_user("alice")
    return document


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


def test_forget_erases_every_row_of_the_user_and_returns_counts(mem, clock):
    fill(mem, "alice")
    fill(mem, "bob")
    embed_waiting()
    assert VectorStamp.objects.filter(user_id="alice").exists()
    counts = mem.mem_forget_user("alice")
    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    assert not VectorStamp.objects.filter(user_id="alice").exists()
    assert VectorStamp.objects.filter(user_id="bob").exists()
    assert not Session.objects.filter(user_id="alice").exists()
    assert not Observation.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()
    assert Observation.objects.filter(user_id="bob").count() == 4


def test_forget_of_an_unknown_user_erases_nothing(mem):
    assert mem.mem_forget_user("nobody") == {"sessions": 0, "observations": 0, "revisions": 0, "vectors": 0}


def test_forget_rejects_a_bad_user_id(mem):
    with pytest.raises(ValidationError, match="user_id"):
        mem.mem_forget_user("  ")


def test_export_uses_a_bounded_number_of_queries(mem, clock, django_assert_max_num_queries):
    for n in range(40):
        mem.mem_save("alice", f"m{n}", f"c{n}", topic_key=f"t{n % 5}")
    with django_assert_max_num_queries(3):
        document = mem.mem_export("alice")
    assert len(document["revisions"]) == 35


def test_export_command_writes_the_document(mem, clock, tmp_path):
    document = fill(mem)
    target = tmp_path / "alice.json"
    call_command("ilab_memory_export", "alice", output=str(target))
    written = json.loads(target.read_text())
    assert written["observations"] == document["observations"]


def test_import_command_reads_a_file_and_is_idempotent(mem, clock, tmp_path):
    document = fill(mem)
    mem.mem_forget_user("alice")
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(document))
    out = StringIO()
    call_command("ilab_memory_import", "alice", str(path), stdout=out)
    assert "observations_created: 4" in out.getvalue()
    call_command("ilab_memory_import", "alice", str(path), stdout=out)
    assert Observation.objects.count() == 4


def test_import_command_reports_a_bad_document(mem, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("ilab_memory_import", "alice", str(path))
    path.write_text(json.dumps({"format": FORMAT, "version": 99}))
    with pytest.raises(CommandError, match="Nothing imported"):
        call_command("ilab_memory_import", "alice", str(path))


def test_forget_command_requires_confirmation(mem, clock):
    fill(mem)
    with pytest.raises(CommandError, match="--yes"):
        call_command("ilab_memory_forget", "alice", interactive=False)
    assert Observation.objects.filter(user_id="alice").exists()
    out = StringIO()
    call_command("ilab_memory_forget", "alice", yes=True, stdout=out)
    assert "Erased 2 session(s), 4 observation(s), 1 revision(s)." in out.getvalue()
    assert not Observation.objects.filter(user_id="alice").exists()


# -- erasure leaves no trace -----------------------------------------------------------------
# After mem_forget_user the user's text is in no byte of the SQLite file and its write-ahead log,
# and in no row of any table on PostgreSQL, while another user's data is intact.


def write_history(mem, user_id: str, marker: str) -> None:
    """Sessions, revisions, soft deletes and metadata, every one carrying ``marker``."""
    mem.mem_save(user_id, f"title {marker}", f"content {marker} " + "y" * 5000, metadata={"m": marker})
    mem.mem_save(user_id, f"topic {marker}", f"first {marker}", topic_key=f"topic {marker}")
    mem.mem_save(user_id, f"topic {marker}", f"second {marker}", topic_key=f"topic {marker}")
    gone = mem.mem_save(user_id, f"deleted {marker}", f"soon deleted {marker}").observation.id
    mem.mem_delete(user_id, gone)
    mem.mem_session_summary(user_id, f"summary {marker}")
    mem.mem_session_end(user_id)
    mem.mem_save(user_id, f"open {marker}", f"in the open session {marker}")


def two_histories(mem) -> tuple[str, str, str, str]:
    """Alice and Bob, each with a full history carrying a marker of their own."""
    alice, bob = f"alice-{secrets.token_hex(6)}", f"bob-{secrets.token_hex(6)}"
    alice_marker, bob_marker = f"Zq{secrets.token_hex(8)}", f"Bq{secrets.token_hex(8)}"
    write_history(mem, alice, alice_marker)
    write_history(mem, bob, bob_marker)
    return alice, alice_marker, bob, bob_marker


def traces(user_id: str, marker: str) -> list[bytes]:
    """The forms the user's data could take in storage: text, its index token, the hex owner."""
    return [marker.encode(), marker.lower().encode(), user_id.encode(), user_id.encode().hex().upper().encode()]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads the SQLite file itself")
def test_forgotten_user_is_in_no_byte_of_the_sqlite_file_or_its_wal(tmem):
    alice, alice_marker, bob, bob_marker = two_histories(tmem)
    path = connection.settings_dict["NAME"]
    with open(path, "rb") as handle, open(path + "-wal", "rb") as wal:
        assert alice_marker.encode() in handle.read() + wal.read()  # the check can see it

    counts = tmem.mem_forget_user(alice)

    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    stored = b""
    for suffix in ("", "-wal"):
        if os.path.exists(path + suffix):
            with open(path + suffix, "rb") as handle:
                stored += handle.read()
    for trace in traces(alice, alice_marker):
        assert trace not in stored, f"{trace!r} survived the erasure"
    assert Observation.objects.filter(user_id=bob).count() == 4
    assert tmem.mem_search(bob, bob_marker)
    assert not tmem.mem_search(alice, alice_marker)


def postgresql_dump() -> str:
    """Every row of every table of the PostgreSQL test database, as text."""
    rows = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        )
        for (table,) in cursor.fetchall():
            cursor.execute(f"SELECT CAST(t AS text) FROM {table} AS t")
            rows.extend(row[0] for row in cursor.fetchall())
    return "\n".join(rows)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="dumps PostgreSQL tables")
def test_forgotten_user_is_in_no_row_of_any_postgresql_table(tmem):
    alice, alice_marker, bob, bob_marker = two_histories(tmem)

    assert alice_marker in postgresql_dump()  # the check can see it
    counts = tmem.mem_forget_user(alice)
    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    after = postgresql_dump()
    for trace in (alice_marker, alice_marker.lower(), alice):
        assert trace not in after
    assert bob_marker in after
    assert Observation.objects.filter(user_id=bob).count() == 4
    assert ObservationRevision.objects.filter(user_id=bob).count() == 1
    assert Session.objects.filter(user_id=bob).count() == 2
    assert tmem.mem_search(bob, bob_marker)


def test_forget_leaves_no_search_index_entry(mem):
    mem.mem_save("alice", "needle in alice", "haystack")
    mem.mem_save("bob", "needle in bob", "haystack")
    mem.mem_forget_user("alice")
    assert [m.title for m in mem.mem_search("bob", "needle")] == ["needle in bob"]
    assert mem.mem_search("alice", "needle") == []
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT COUNT(*) FROM ilab_memory_search WHERE ilab_memory_search MATCH 'alice'")
            assert cursor.fetchone() == (0,)


def test_forget_leaves_no_title_in_the_admin_log(mem):
    """Whichever face erases, the host's admin log keeps the erased rows' entries by id only."""
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    operator = get_user_model().objects.create_user("operator-for-log")
    mine = mem.mem_save("alice", "Alice's secret garden", "roses").observation
    other = mem.mem_save("bob", "Bob's shed", "tools").observation
    for observation in (mine, other):
        LogEntry.objects.create(
            user=operator, content_type=ContentType.objects.get_for_model(Observation), object_id=observation.id,
            object_repr=observation.title, action_flag=CHANGE, change_message="edited",
        )
    mem.mem_forget_user("alice")
    assert LogEntry.objects.get(object_id=mine.id).object_repr == mine.id
    assert LogEntry.objects.get(object_id=other.id).object_repr == "Bob's shed"


# == With scopes: a document per scope or of every scope, older documents into the shared space,
# == the per-scope rules after an import, one scope erased.

def fill_scopes(mem, user_id="alice", *, clock):
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


# -- import ------------------------------------------------------------------------------------


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
    fill_scopes(mem, clock=clock)
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
    fill_scopes(mem, clock=clock)
    fill_scopes(mem, "bob", clock=clock)
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
    fill_scopes(mem, clock=clock)
    counts = mem.mem_forget_user("alice", scope="")
    assert counts["sessions"] == 2 and counts["observations"] == 4
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"coder", "writer"}


def test_an_erased_scope_starts_afresh(mem, clock):
    fill_scopes(mem, clock=clock)
    mem.mem_forget_user("alice", scope="writer")
    started = mem.mem_session_start("alice", scope="writer")
    assert Session.objects.get(pk=started.session_id).scope == "writer"
    assert all(m.scope == "" for m in started.memories)  # it reads the shared space only now


def test_forget_every_scope_erases_the_whole_user(mem, clock):
    fill_scopes(mem, clock=clock)
    embed_waiting()
    counts = mem.mem_forget_user("alice", scope="*")
    assert counts == {"sessions": 6, "observations": 12, "revisions": 3, "vectors": 9}
    assert nothing_of("alice") and not VectorStamp.objects.filter(user_id="alice").exists()
    assert not ObservationRevision.objects.filter(user_id="alice").exists()


@pytest.mark.parametrize("scope", [["coder"], "Coder", "x" * 65, 4])
def test_forget_refuses_a_bad_scope_and_erases_nothing(mem, clock, scope):
    fill_scopes(mem, clock=clock)
    with pytest.raises(ValidationError) as error:
        mem.mem_forget_user("alice", scope=scope)
    assert error.value.field == "scope"
    assert Observation.objects.filter(user_id="alice").count() == 12


def test_user_forgotten_is_sent_for_the_whole_user_only(tmem, clock):
    fill_scopes(tmem, clock=clock)
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
    fill_scopes(mem, clock=clock)
    target = tmp_path / "coder.json"
    call_command("ilab_memory_export", "alice", "--scope", "coder", output=str(target))
    written = json.loads(target.read_text())
    assert written["observations"] == mem.mem_export("alice", scope="coder")["observations"]
    call_command("ilab_memory_export", "alice", "--scope", "", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == [""]
    call_command("ilab_memory_export", "alice", output=str(target))
    assert scopes_of(json.loads(target.read_text())["observations"]) == ["", "coder", "writer"]


def test_import_command_puts_a_document_into_a_scope(mem, clock, tmp_path):
    fill_scopes(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice")))
    mem.mem_forget_user("alice")
    out = StringIO()
    call_command("ilab_memory_import", "alice", str(path), "--scope", "archive", stdout=out)
    assert "observations_created: 12" in out.getvalue()
    assert set(Observation.objects.filter(user_id="alice").values_list("scope", flat=True)) == {"archive"}


def test_forget_command_erases_one_scope(mem, clock):
    fill_scopes(mem, clock=clock)
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
    fill_scopes(mem, clock=clock)
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(mem.mem_export("alice", scope="coder")))
    mem.mem_forget_user("alice", scope="coder")
    before = Observation.objects.count()
    with pytest.raises(CommandError, match="scope: "):
        call_command(command, *[a.replace("{path}", str(path)) for a in args], stdout=StringIO())
    assert Observation.objects.count() == before
