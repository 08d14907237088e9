"""Embedding throughput on real Celery workers: does a second worker process scale it?

    DATABASE_URL=postgres://USER@HOST:5432/DB .venv/bin/python -m benchmarks.embedding_workers --memories 1000

Three configurations in turn, each a ``celery -A project.celery worker`` (the demo site,
``EMBEDDING_RUNNER = "ilab_memory.runners.celery.runner"``) on a new PostgreSQL database
(``perf_env``: the database in the URL only creates and drops it) and a Redis queue of this run's
own (``--broker``, Redis on 127.0.0.1 by default):

* ``--concurrency 1``: one embedding process, the engine's OpenMP threads on every core;
* ``--concurrency 2``: one worker and its prefork pool of two, docs/search.md's "one process per
  core" (``celery -A proj worker --concurrency 2``): two engines sharing the cores;
* the same with ``OMP_NUM_THREADS=1``: one engine thread per process.

Each worker is warmed up first (a few memories, not timed: Django, the imports, the model), then
``--memories`` memories are saved for four users through the facade, each save enqueueing a task
as on a site, and timed from the first save until every one has a vector. Reported: memories/s,
seconds per 1,000, the saves' share of that time, the cpu count and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from .perf_hybrid import memories
from .perf_timing import step

ROOT = Path(__file__).resolve().parent.parent
RUNNER = "ilab_memory.runners.celery.runner"
CONFIGURATIONS = (  # (name, --concurrency, OMP_NUM_THREADS or None: unset)
    ("--concurrency 1", 1, None),
    ("--concurrency 2", 2, None),
    ("--concurrency 2, OMP_NUM_THREADS=1", 2, "1"),
)
USERS = 4
WARMUP, WARMUP_ROUNDS = 8, 5  # memories per pool process in a round, saved one by one (a task each)
READY_TIMEOUT = 60  # seconds for a worker to start (Django, the broker)
# A pool process's line for a task: "[…/ForkPoolWorker-2] Task ilab_memory.embed_waiting[…] succeeded in 1.2s: 32"
SUCCEEDED = re.compile(rb"/(ForkPoolWorker-\d+)\] Task ilab_memory\.embed_waiting\[[^]]+\] succeeded in [^:]+: (\d+)")


@contextmanager
def worker(*, concurrency: int, omp: str | None, queue: str, log_path: Path):
    """A ``celery worker`` process started with this process's environment (the scratch
    database, the broker, the queue), ready; stopped by a warm shutdown on the way out."""
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    env.update(ILAB_MEMORY_EMBEDDING_RUNNER=RUNNER, PYTHONUNBUFFERED="1", **({"OMP_NUM_THREADS": omp} if omp else {}))
    argv = [sys.executable, "-m", "celery", "-A", "project.celery", "worker", "--concurrency", str(concurrency),
            "-Q", queue, "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-l", "info"]
    with open(log_path, "wb") as log:
        # A session of its own: a worker that ignores SIGTERM is killed with its pool (killpg).
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        started = time.perf_counter()
        wait(lambda: b" ready." in log_path.read_bytes(), process, log_path, timeout=READY_TIMEOUT)
        step(f"worker ready in {time.perf_counter() - started:.1f}s")
        yield process
    finally:
        started = time.perf_counter()
        process.terminate()  # warm shutdown: the pool finishes its task; held countdown tasks go back to Redis
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        step(f"worker stopped in {time.perf_counter() - started:.1f}s")


def wait(done, process, log_path: Path, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if process.poll() is not None:
            raise SystemExit(f"the worker exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s; the worker's log:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.1)


def pool(pid: int) -> list[str]:
    """Each pool process's threads and OMP_NUM_THREADS, as Linux's /proc shows them (else [])."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        described = []
        for child in children:
            environ = dict(item.split(b"=", 1) for item in Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
                           if b"=" in item)
            omp = environ.get(b"OMP_NUM_THREADS", b"unset").decode()
            described.append(f"{len(os.listdir(f'/proc/{child}/task'))} threads (OMP_NUM_THREADS {omp})")
        return described
    except OSError:
        return []


def save_and_wait(mem, texts, users: list[str], process, log_path: Path) -> tuple[float, float]:
    """Save ``texts`` in turns for ``users``; (seconds of the saves, seconds until every memory
    has a vector), both from the first save."""
    from ilab_memory.conf import get_config
    from ilab_memory.models import ObservationVector
    from ilab_memory.services.embedding import embedder_for

    model_id = embedder_for(get_config()).model_id
    started = time.perf_counter()
    for i, (title, content) in enumerate(texts):
        mem.mem_save(users[i % len(users)], title, content)
    saved = time.perf_counter() - started
    wait(lambda: not ObservationVector.objects.waiting(model_id).exists(), process, log_path,
         timeout=120 + 2 * len(texts))
    return saved, time.perf_counter() - started


def warm_up(mem, *, number: int, concurrency: int, process, log_path: Path) -> None:
    """Save a few memories, round after round, until every pool process has embedded some: the
    timed run then pays no process's first queries, imports or model load."""
    started, rounds = time.perf_counter(), 0
    while rounds < WARMUP_ROUNDS and len(embedded_by(log_path)) < concurrency:
        rounds += 1
        save_and_wait(mem, memories(WARMUP * concurrency, seed=100 * number + rounds), [f"warmup-{number}"],
                      process, log_path)
        time.sleep(0.5)  # a task logs its result after it stored its last vector
    step(f"warm-up: {rounds} round(s) of {WARMUP * concurrency} memories in {time.perf_counter() - started:.1f}s, "
         f"{len(embedded_by(log_path))} of {concurrency} pool processes embedded; "
         f"pool: {', '.join(pool(process.pid)) or '?'}")


def embedded_by(log_path: Path) -> set[bytes]:
    """The pool processes that stored a vector, from the worker's log."""
    return {name for name, stored in SUCCEEDED.findall(log_path.read_bytes()) if int(stored)}


def run_one(mem, *, number: int, name: str, concurrency: int, omp: str | None, n: int, queue: str,
            logs: Path) -> dict:
    log_path = logs / f"worker-{number}.log"
    load = os.getloadavg()[0]
    step(name)
    with worker(concurrency=concurrency, omp=omp, queue=queue, log_path=log_path) as process:
        warm_up(mem, number=number, concurrency=concurrency, process=process, log_path=log_path)
        users = [f"config-{number}-user-{u}" for u in range(USERS)]
        saved, seconds = save_and_wait(mem, memories(n, seed=1), users, process, log_path)
        step(f"{n} memories embedded in {seconds:.1f}s (saves {saved:.1f}s)")
    purge(os.environ["CELERY_BROKER_URL"], queue)  # the countdown tasks the worker gave back
    return {"name": name, "memories": n, "seconds": seconds, "saves": saved, "per_second": n / seconds,
            "per_1000": seconds * 1000 / n, "load": load}


def purge(broker: str, queue: str) -> None:
    """Remove this run's queue from Redis: its lists (kombu keeps one per priority) and bindings."""
    import redis

    client = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
    try:
        client.delete(queue, *client.scan_iter(match=f"{queue}\x06\x16*"),
                      f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    finally:
        client.close()


def ping(broker: str) -> None:
    import redis

    client = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.RedisError as error:
        raise SystemExit(f"no Redis broker at {broker}: {error}") from None
    finally:
        client.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000,
                        help="timed in each configuration (a few hundred at least: two processes share batches of 32)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("DATABASE_URL=postgres://USER@HOST:5432/DB is required (a scratch database is made there)")
    ping(args.broker)
    queue = f"ilab_memory_bench_{uuid.uuid4().hex[:12]}"  # this run's: a test's workers never take its tasks
    # Read by project/settings.py, here and in the workers (which inherit this environment).
    os.environ.update(CELERY_BROKER_URL=args.broker, CELERY_TASK_DEFAULT_QUEUE=queue)
    from . import perf_env

    perf_env.site()  # the demo site on a new database; its runner is set per facade below
    from ilab_memory import ILabMemory

    mem = ILabMemory(embedding_runner=RUNNER)
    logs = Path(tempfile.mkdtemp(prefix="ilab_bench_workers_"))
    step(f"workers' logs in {logs}")
    rows = []
    try:
        for number, (name, concurrency, omp) in enumerate(CONFIGURATIONS, 1):
            rows.append(run_one(mem, number=number, name=name, concurrency=concurrency, omp=omp, n=args.memories,
                                queue=queue, logs=logs))
    finally:
        purge(args.broker, queue)
    versions = perf_env.versions()
    print(f"Embedding on Celery workers: {args.memories} memories for {USERS} users per configuration; "
          f"{versions['cpus']} cpus, load {versions['load']} at the end; {versions['engine']}, {versions['embedder']}")
    print(f"{'configuration':36} {'memories/s':>10} {'s per 1,000':>12} {'saves s':>8} {'load before':>12}")
    for row in rows:
        print(f"{row['name']:36} {row['per_second']:10.1f} {row['per_1000']:12.1f} {row['saves']:8.1f} "
              f"{row['load']:12.2f}")


if __name__ == "__main__":
    main()
