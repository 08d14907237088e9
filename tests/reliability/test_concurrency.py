"""Many agents at once, in threads and in processes, on the configured database and on SQLite files.

Afterwards: at most one active session per user, every acknowledged save present exactly once
(or counted as a duplicate), counts that add up, and no "database is locked" anywhere.
"""

import sqlite3

import pytest
from django.db import connection

from ilab_memory.models import Session
from tests.threads import run_together

from . import worker
from .conftest import SCALE, check_invariants, collect, parse_acks, pg_worker_target, record, spawn

pytestmark = pytest.mark.slow


def run_agents(mem, *, agents: int, users: list[str], ops: int, seed: int) -> list[dict]:
    """``agents`` threads doing random start/save/summary/end; returns every acknowledgement."""
    acks = []

    def agent(index: int):
        worker.mixed(
            mem, users=users, ops=ops, seed=seed * 1000 + index, tag=f"t{index}",
            emit=lambda **fields: acks.append(fields),
        )

    run_together(agent, agents)  # any error at all fails the run, "database is locked" first
    return acks


def test_many_agents_of_one_user_in_threads_keep_every_invariant(tmem):
    agents, ops = 8 * SCALE, 40
    acks = run_agents(tmem, agents=agents, users=["alice"], ops=ops, seed=1)
    starts = [a for a in acks if a["op"] == "start"]
    with connection.cursor() as cursor:
        figures = check_invariants(cursor, acks)
    assert Session.objects.filter(user_id="alice").active().count() <= 1
    assert starts and all(a["session"] for a in starts)
    record(f"threads, one user ({connection.vendor})", agents=agents, **figures)


def test_many_users_at_once_in_threads_keep_every_invariant(tmem):
    agents, ops = 8 * SCALE, 40
    users = [f"user-{n}" for n in range(4)]
    acks = run_agents(tmem, agents=agents, users=users, ops=ops, seed=2)
    with connection.cursor() as cursor:
        figures = check_invariants(cursor, acks)
    record(f"threads, {len(users)} users ({connection.vendor})", agents=agents, **figures)


def test_concurrent_starts_of_one_user_all_get_the_one_active_session(tmem):
    agents = 8
    ids = run_together(lambda i: tmem.mem_session_start("bob").session_id, agents)
    assert len(set(ids)) == 1 and Session.objects.filter(user_id="bob").count() == 1


def run_processes(backend: str, target: str, *, processes: int, users: list[str], ops: int, seed: int):
    children = [
        spawn(backend, target, "mixed", "--users", ",".join(users), "--ops", str(ops),
              "--seed", str(seed * 100 + n), "--tag", f"p{n}")
        for n in range(processes)
    ]
    return collect(children, timeout=120)


@pytest.mark.engine_independent
def test_agents_in_processes_on_one_embedded_sqlite_file_keep_every_invariant(tmp_path):
    path = str(tmp_path / "memory.db")
    first = spawn("sqlite", path, "start", "--users", "user-0")  # create and migrate the file once
    assert first.wait(timeout=120) == 0, first.stderr.read()
    processes, ops = 4 * SCALE, 60
    users = ["user-0", "user-1", "user-2"]
    acks = run_processes("sqlite", path, processes=processes, users=users, ops=ops, seed=3)
    with sqlite3.connect(path) as db:
        figures = check_invariants(db.cursor(), acks)
    record("processes, embedded SQLite file", processes=processes, **figures)


@pytest.mark.engine_independent
def test_processes_opening_a_new_embedded_file_at_once_all_succeed(tmp_path):
    path = str(tmp_path / "fresh.db")
    children = [spawn("sqlite", path, "start", "--users", "carol") for _ in range(3)]
    results = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0, 0], [err[-1500:] for _, err in results]
    sessions = {parse_acks(out)[0]["session"] for out, _ in results}
    assert len(sessions) == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL processes need the server")
def test_agents_in_processes_on_postgresql_keep_every_invariant(transactional_db):
    target = pg_worker_target(connection.settings_dict)
    processes, ops = 4 * SCALE, 60
    users = ["user-0", "user-1", "user-2"]
    acks = run_processes("pg", target, processes=processes, users=users, ops=ops, seed=4)
    with connection.cursor() as cursor:
        figures = check_invariants(cursor, acks)
    record("processes, PostgreSQL", processes=processes, **figures)


def test_the_same_document_imported_by_several_agents_at_once_is_stored_once(tmem):
    for n in range(20):
        tmem.mem_save("dora", f"memory {n}", f"content {n}", topic_key=f"topic {n % 4}")
    document = tmem.mem_export("dora")
    tmem.mem_forget_user("dora")
    agents = 4
    results = run_together(lambda i: tmem.mem_import("dora", document), agents)
    assert sum(r["observations_created"] for r in results) == len(document["observations"])
    assert tmem.mem_export("dora")["observations"] == document["observations"]
    record(f"concurrent imports ({connection.vendor})", agents=agents, operations=agents)


def test_forget_while_agents_of_that_user_write_leaves_no_orphan_and_no_error(tmem):
    agents = 4

    def writer_or_forgetter(index: int):
        if index == agents:  # the last thread erases the user again and again
            for _ in range(5):
                tmem.mem_forget_user("erin")
        else:
            for n in range(15):
                tmem.mem_save("erin", f"w{index}-{n}", "body")

    run_together(writer_or_forgetter, agents + 1)
    with connection.cursor() as cursor:
        check_invariants(cursor, [])
    assert Session.objects.filter(user_id="erin").active().count() <= 1
    record(f"forget during writes ({connection.vendor})", agents=agents + 1, operations=agents * 15 + 5)
