"""Helpers of the reliability suites: worker processes, the invariants, and the figures of a run.

``ILAB_MEMORY_RELIABILITY_SCALE`` (default 1) multiplies agents, operations and kills; CI runs
scale 1, which is bounded to well under two minutes per database. ``ILAB_MEMORY_RELIABILITY_REPORT``
names a JSON file the figures of the run are written to (docs/reliability.md quotes them).
"""

import json
import os
import subprocess
import sys
import uuid
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")
SCALE = max(1, int(os.environ.get("ILAB_MEMORY_RELIABILITY_SCALE", "1")))

FIGURES: dict[str, dict] = defaultdict(Counter)


def record(suite: str, **numbers) -> None:
    """Add to the figures of ``suite`` (operations, agents, kills, inputs, failures...)."""
    FIGURES[suite].update(numbers)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("ILAB_MEMORY_RELIABILITY_REPORT")
    if path and FIGURES:
        Path(path).write_text(json.dumps({k: dict(v) for k, v in sorted(FIGURES.items())}, indent=2))


def worker_command(backend: str, target: str, mode: str, *args: str) -> list[str]:
    return [sys.executable, str(WORKER), backend, target, mode, *args]


def worker_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the worker configures Django itself
    return env


def spawn(backend: str, target: str, mode: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        worker_command(backend, target, mode, *args),
        cwd=ROOT, env=worker_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def collect(children: list[subprocess.Popen], *, timeout: int = 180) -> list[dict]:
    """Every acknowledgement of ``children``, once each has exited cleanly and never met "locked"."""
    acks = []
    for child in children:
        stdout, stderr = child.communicate(timeout=timeout)
        assert child.returncode == 0, stderr[-2000:]
        assert "locked" not in stderr
        acks.extend(parse_acks(stdout))
    return acks


def parse_acks(stdout: str) -> list[dict]:
    """Complete JSON lines only: a line cut by a kill was never acknowledged."""
    acks = []
    for line in stdout.splitlines(keepends=True):
        if line.endswith("\n"):
            acks.append(json.loads(line))
    return acks


def pg_worker_target(settings_dict) -> str:
    """The JSON a PostgreSQL worker connects with: the test database the parent is using."""
    keys = ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT")
    return json.dumps({key: settings_dict.get(key) or "" for key in keys})


def normal_id(value) -> str:
    return uuid.UUID(str(value)).hex


def check_invariants(cursor, acks: list[dict]) -> dict:
    """The promises a concurrent run must keep, read back with raw SQL from any connection.

    At most one active session per user; every acknowledged save present exactly once, in a
    session of its own user; a user's observations and duplicate counts add up to the saves.
    """
    cursor.execute("SELECT id, user_id, status FROM ilab_memory_session")
    sessions = {normal_id(row[0]): (row[1], row[2]) for row in cursor.fetchall()}
    active = Counter(user for user, status in sessions.values() if status == "active")
    assert all(n <= 1 for n in active.values()), f"several active sessions: {active}"

    cursor.execute("SELECT id, user_id, title, duplicate_count, session_id FROM ilab_memory_observation")
    observations = {normal_id(row[0]): row[1:] for row in cursor.fetchall()}
    for (user, _, _, session_id) in observations.values():
        assert sessions[normal_id(session_id)][0] == user, "an observation sits in another user's session"

    saves = [a for a in acks if a["op"] == "save"]
    for ack in saves:
        stored = observations.get(normal_id(ack["id"]))
        assert stored is not None, f"acknowledged save {ack['id']} is missing"
        assert stored[0] == ack["user"] and stored[1] == ack["title"]
    titles = Counter((user, title) for user, title, _, _ in observations.values())
    assert max(titles.values(), default=1) == 1, "one memory stored twice"
    created = Counter(a["user"] for a in saves if a["action"] == "created")
    per_user = Counter(user for user, _, _, _ in observations.values())
    dup_total = defaultdict(int)
    for user, _, duplicates, _ in observations.values():
        dup_total[user] += duplicates
    for user in {a["user"] for a in saves}:
        assert per_user[user] == created[user], f"{user}: {per_user[user]} stored, {created[user]} created"
        assert dup_total[user] == sum(1 for a in saves if a["user"] == user), f"{user}: duplicate counts"
    return {"saves": len(saves), "operations": len(acks), "sessions": len(sessions)}
