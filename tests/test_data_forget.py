"""Erasure leaves no trace: after mem_forget_user the user's text is in no byte of the SQLite
file and its write-ahead log, and in no row of any table on PostgreSQL, while another user's
data is intact."""

import os
import secrets

import pytest
from django.db import connection

from ilab_memory.models import Observation, ObservationRevision, Session


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


@pytest.mark.skipif(connection.vendor != "postgresql", reason="dumps PostgreSQL tables")
def test_forgotten_user_is_in_no_row_of_any_postgresql_table(tmem):
    alice, alice_marker, bob, bob_marker = two_histories(tmem)

    def dump() -> str:
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

    assert alice_marker in dump()  # the check can see it
    counts = tmem.mem_forget_user(alice)
    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    after = dump()
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
