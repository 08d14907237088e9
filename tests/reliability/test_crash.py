"""Crash safety: an agent killed with SIGKILL at random moments loses no acknowledged write.

The child prints each acknowledged save (flushed) before it makes the next one; after every
kill the parent checks that each printed id is stored, that the database passes its integrity
checks (and the full-text index its own, when there is one), and at the end that a new process
can start a session as usual.
"""

import json
import random
import signal
import sqlite3
import time

import pytest
from django.db import connection

from .conftest import SCALE, normal_id, parse_acks, pg_worker_target, record, spawn

pytestmark = pytest.mark.slow


def kill_at_random(backend: str, target: str, *, rng: random.Random, tag: str) -> list[dict]:
    """Start a saving child, let it run a random while, SIGKILL it; returns its acknowledgements."""
    child = spawn(backend, target, "saves", "--users", "crash-user", "--tag", tag)
    ready = child.stdout.readline()
    assert json.loads(ready) == {"op": "ready"}, child.stderr.read()
    time.sleep(rng.uniform(0.01, 0.35))
    child.send_signal(signal.SIGKILL)
    stdout, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return parse_acks(stdout)


def sqlite_integrity(db: sqlite3.Connection) -> None:
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    fts_tables = [
        name for (name, sql) in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        if sql and "using fts5" in sql.lower()
    ]
    for name in fts_tables:
        # Raises sqlite3.DatabaseError ("database disk image is malformed") when the index is bad.
        db.execute(f"INSERT INTO \"{name}\"(\"{name}\") VALUES ('integrity-check')")


def stored_ids(cursor) -> set[str]:
    cursor.execute("SELECT id FROM ilab_memory_observation WHERE user_id = 'crash-user'")
    return {normal_id(row[0]) for row in cursor.fetchall()}


@pytest.mark.engine_independent
def test_sigkilled_agents_on_an_embedded_sqlite_file_lose_no_acknowledged_write(tmp_path):
    path = str(tmp_path / "crash.db")
    first = spawn("sqlite", path, "start", "--users", "crash-user")
    assert first.wait(timeout=120) == 0, first.stderr.read()
    rng = random.Random(8)
    kills, acknowledged = 20 * SCALE, set()
    for n in range(kills):
        acks = kill_at_random("sqlite", path, rng=rng, tag=f"k{n}")
        acknowledged |= {normal_id(a["id"]) for a in acks if a["op"] == "save"}
        with sqlite3.connect(path) as db:
            missing = acknowledged - stored_ids(db.cursor())
            assert not missing, f"kill {n}: {len(missing)} acknowledged saves lost"
            sqlite_integrity(db)
    after = spawn("sqlite", path, "start", "--users", "crash-user")
    out, err = after.communicate(timeout=120)
    assert after.returncode == 0, err[-2000:]
    assert parse_acks(out)[0]["session"]
    with sqlite3.connect(path) as db:
        active = db.execute(
            "SELECT COUNT(*) FROM ilab_memory_session WHERE user_id = 'crash-user' AND status = 'active'"
        ).fetchone()
    assert active == (1,)
    record("crash, embedded SQLite file", kills=kills, acknowledged_saves=len(acknowledged), lost=0)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL variant needs the server")
def test_sigkilled_agents_on_postgresql_lose_no_acknowledged_write(transactional_db):
    target = pg_worker_target(connection.settings_dict)
    rng = random.Random(9)
    kills, acknowledged = 10 * SCALE, set()
    for n in range(kills):
        acks = kill_at_random("pg", target, rng=rng, tag=f"k{n}")
        acknowledged |= {normal_id(a["id"]) for a in acks if a["op"] == "save"}
        with connection.cursor() as cursor:
            missing = acknowledged - stored_ids(cursor)
        assert not missing, f"kill {n}: {len(missing)} acknowledged saves lost"
    after = spawn("pg", target, "start", "--users", "crash-user")
    _out, err = after.communicate(timeout=120)
    assert after.returncode == 0, err[-2000:]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM ilab_memory_session WHERE user_id = 'crash-user' AND status = 'active'"
        )
        assert cursor.fetchone() == (1,)
    record("crash, PostgreSQL", kills=kills, acknowledged_saves=len(acknowledged), lost=0)
