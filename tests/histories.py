"""Histories the data tests (export, import, erasure) fill and read back."""

import copy
import secrets
from datetime import timedelta

from django.db import connection

from ilab_memory.models import (
    Observation,
    Session,
)


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


def open_session_id(document):
    (session,) = [s for s in document["sessions"] if s["status"] == "active"]
    return session["id"]


def valid_document(mem):
    document = fill(mem)
    mem.mem_forget_user("alice")
    return document


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
