"""Eight processes start sessions and save for one user in three scopes at once.

Afterwards: exactly one active session per (user, scope), every acknowledged save stored once in
a session of its own scope, and every start of a scope answered with that scope's one session.
"""

import sqlite3
import time
import uuid
from collections import defaultdict

import pytest
from django.db import connection

from .conftest import collect, pg_worker_target, spawn

pytestmark = pytest.mark.slow

PROCESSES, ROUNDS = 8, 6
SCOPES = ["support", "coding", ""]  # "" is the shared space: it races like any scope


def race(backend: str, target: str) -> list[dict]:
    at = time.time() + 4  # every process has imported Django and opened the database by then
    children = [
        spawn(backend, target, "scopes", "--users", "ana", "--scopes", ",".join(SCOPES), "--ops", str(ROUNDS),
              "--seed", str(n), "--tag", f"p{n}", "--at", str(at))
        for n in range(PROCESSES)
    ]
    return collect(children)


def check(cursor, acks: list[dict]) -> None:
    def key(value) -> str:
        return uuid.UUID(str(value)).hex

    cursor.execute("SELECT id, user_id, scope, status FROM ilab_memory_session WHERE user_id = 'ana'")
    sessions = {key(pk): (user, scope, status) for pk, user, scope, status in cursor.fetchall()}
    active = defaultdict(list)
    for pk, (user, scope, status) in sessions.items():
        if status == "active":
            active[(user, scope)].append(pk)
    assert sorted(active) == sorted(("ana", scope) for scope in SCOPES)
    assert all(len(ids) == 1 for ids in active.values()), active

    cursor.execute("SELECT id, scope, title, session_id FROM ilab_memory_observation WHERE user_id = 'ana'")
    observations = {key(pk): (scope, title, key(session)) for pk, scope, title, session in cursor.fetchall()}
    for scope, _, session in observations.values():
        assert sessions[session][1] == scope, "an observation sits in a session of another scope"
    saves = [a for a in acks if a["op"] == "save"]
    assert len(saves) == PROCESSES * ROUNDS * len(SCOPES)
    for ack in saves:
        assert observations[key(ack["id"])][:2] == (ack["scope"], ack["title"])
    assert len(observations) == len(saves)  # every title differs: none may be stored twice

    # Nothing expired in the run: every start of a scope got the same one session.
    started = defaultdict(set)
    for ack in acks:
        if ack["op"] == "start":
            started[ack["scope"]].add(key(ack["session"]))
    assert {scope: len(ids) for scope, ids in started.items()} == {scope: 1 for scope in SCOPES}
    assert all(started[scope] == set(active[("ana", scope)]) for scope in SCOPES)


@pytest.mark.engine_independent
def test_processes_in_three_scopes_on_one_embedded_sqlite_file(tmp_path):
    path = str(tmp_path / "memory.db")
    first = spawn("sqlite", path, "start", "--users", "someone-else")  # create and migrate the file once
    assert first.wait(timeout=120) == 0, first.stderr.read()
    acks = race("sqlite", path)
    with sqlite3.connect(path) as db:
        check(db.cursor(), acks)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL processes need the server")
def test_processes_in_three_scopes_on_postgresql(transactional_db):
    acks = race("pg", pg_worker_target(connection.settings_dict))
    with connection.cursor() as cursor:
        check(cursor, acks)
