"""Export, import and erasure of one user's data (the services, the facade and the commands)."""

import json
import os
import secrets
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from ilab_memory.exceptions import ValidationError
from ilab_memory.models import Observation, ObservationRevision, Session, SessionStatus, VectorStamp
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
