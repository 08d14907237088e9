"""The sweep killed half-way: a process erasing a large batch of expired memories is SIGKILLed
after some batches have committed. Every expired memory must then be either whole (row,
revision, vector, search index entry) or entirely gone, the live ones untouched, and a second
sweep must finish the job.
"""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from .conftest import ROOT, SCALE, normal_id, parse_acks, pg_worker_target, record, worker_env
from .test_crash import sqlite_integrity

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("expiry_worker.py")
EXPIRED, LIVE = 3000 * SCALE, 200


def run_worker(backend: str, target: str, mode: str, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), backend, target, mode, *args], cwd=ROOT,
                            env=worker_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def fill(backend: str, target: str) -> None:
    child = run_worker(backend, target, "fill", "--count", str(EXPIRED), "--live", str(LIVE))
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-2000:]
    assert parse_acks(out) == [{"op": "filled", "count": EXPIRED, "live": LIVE}]


def kill_mid_sweep(backend: str, target: str) -> list[dict]:
    """Start a sweep, SIGKILL it a moment after its first batch committed; its acknowledgements."""
    child = run_worker(backend, target, "sweep")
    assert json.loads(child.stdout.readline()) == {"op": "ready"}, child.stderr.read()
    first = json.loads(child.stdout.readline())
    assert first["op"] == "batch", (first, child.stderr.read())
    time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    stdout, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return [first, *parse_acks(stdout)]


def sweep_to_the_end(backend: str, target: str) -> int:
    child = run_worker(backend, target, "sweep")
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-2000:]
    return parse_acks(out)[-1]["erased"]


def traces(cursor, vendor: str) -> dict[str, dict[str, set[str]]]:
    """The ids of the sweep user's memories in each place a memory leaves a trace, by kind."""
    def ids(sql):
        cursor.execute(sql)
        return {normal_id(row[0]) for row in cursor.fetchall()}

    titles = {}
    cursor.execute("SELECT id, title FROM ilab_memory_observation WHERE user_id = 'sweep-user'")
    for pk, title in cursor.fetchall():
        titles[normal_id(pk)] = title.split()[0]
    if vendor == "sqlite":
        index = ids("SELECT observation_id FROM ilab_memory_search")
    else:
        index = ids("SELECT id FROM ilab_memory_observation WHERE search_vector IS NOT NULL")
    places = {
        "row": set(titles),
        "revision": ids("SELECT observation_id FROM ilab_memory_observationrevision WHERE user_id = 'sweep-user'"),
        "vector": ids("SELECT observation_id FROM ilab_memory_observationvector WHERE user_id = 'sweep-user'"),
        "index": index,
    }
    return {"titles": titles, **places}


def assert_whole_or_gone(found: dict, expired_ids: set[str], live_ids: set[str]) -> int:
    """Each expired memory in all four places or in none; every live one in all four. Returns how
    many expired memories are still whole."""
    places = ("row", "revision", "vector", "index")
    for pk in expired_ids:
        present = {place for place in places if pk in found[place]}
        assert present in (set(), set(places)), f"{pk} is half-erased: only in {sorted(present)}"
    for place in places:
        assert live_ids <= found[place], f"a live memory lost its {place}"
        assert found[place] <= expired_ids | live_ids, f"an orphan {place} of an unknown memory"
    return len(expired_ids & found["row"])


def run_the_scenario(backend: str, target: str, cursor_factory, vendor: str, suite: str) -> None:
    fill(backend, target)
    with cursor_factory() as cursor:
        before = traces(cursor, vendor)
    expired_ids = {pk for pk, kind in before["titles"].items() if kind == "expiring"}
    live_ids = set(before["titles"]) - expired_ids
    assert len(expired_ids) == EXPIRED and len(live_ids) == LIVE
    assert assert_whole_or_gone(before, expired_ids, live_ids) == EXPIRED  # the check sees them all

    acks = kill_mid_sweep(backend, target)
    acknowledged = max(a["erased"] for a in acks if a["op"] == "batch")
    with cursor_factory() as cursor:
        remaining = assert_whole_or_gone(traces(cursor, vendor), expired_ids, live_ids)
    assert 0 < remaining < EXPIRED, "the kill did not land half-way"
    assert EXPIRED - remaining >= acknowledged  # every batch it reported stays erased

    assert sweep_to_the_end(backend, target) == remaining
    with cursor_factory() as cursor:
        after = traces(cursor, vendor)
    assert assert_whole_or_gone(after, expired_ids, live_ids) == 0
    assert set(after["titles"]) == live_ids
    record(suite, expired=EXPIRED, erased_before_the_kill=EXPIRED - remaining, half_erased=0)


@pytest.mark.engine_independent
def test_a_sweep_killed_half_way_on_an_embedded_sqlite_file_leaves_nothing_half_erased(tmp_path):
    path = str(tmp_path / "sweep.db")

    def cursor_factory():
        class Cursor:
            def __enter__(self):
                self.db = sqlite3.connect(path)
                return self.db.cursor()

            def __exit__(self, *exc):
                sqlite_integrity(self.db)  # the file and its search index pass their own checks
                self.db.close()
        return Cursor()

    run_the_scenario("sqlite", path, cursor_factory, "sqlite", "sweep killed, embedded SQLite file")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL variant needs the server")
def test_a_sweep_killed_half_way_on_postgresql_leaves_nothing_half_erased(transactional_db):
    run_the_scenario("pg", pg_worker_target(connection.settings_dict), connection.cursor, "postgresql",
                     "sweep killed, PostgreSQL")
