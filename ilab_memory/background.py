"""The background embedder (``EMBEDDING_MODE = "background"``, the default): one daemon thread
per process and database that embeds what writes queued, with no worker to run (the embedded
mode, the demo site, a site without Celery). Thin: the work is ``services.embedding``'s.

A write that queued vectors starts it when it commits (or wakes it if it runs); it claims and
embeds batches, everyone's oldest first, until nothing waits, then stops and closes its database
connection. Rows another process holds are waited for until it stores them or their lease
lapses, so the batch of a process killed mid-way is embedded by the next one: nothing is lost. Several processes on
one database share the queue through those claims: no row is embedded twice. An embedder that
fails is logged and the thread stops; its rows stay queued for the next write, a search's
budget or ``ilab_memory_embed``.

The mode decides, so a test suite that sets ``"inline"`` starts no thread unless a test asks.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time

from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from .conf import Config, get_config
from .services import embedding

logger = logging.getLogger("ilab_memory.background")

# At exit a process stops claiming and waits this long for the batch in hand, so a script that
# saved a few memories leaves them embedded instead of claimed until the lease lapses, and a long
# batch never holds the exit for long (its rows wait for their lease).
EXIT_WAIT_SECONDS = 10
# Rows under another process's lease: it usually stores them within seconds, so look again this
# often (and stop once they are stored); if it died, claim them when the lease lapses.
LEASE_POLL_SECONDS = 2

_lock = threading.Lock()
_threads: dict[str, BackgroundEmbedder] = {}  # the running thread of each database alias
_exiting = threading.Event()


class BackgroundEmbedder(threading.Thread):
    """Embeds what waits on database ``using`` with ``config``'s embedder, then stops.

    ``stored`` counts the vectors it stored; ``error`` is the exception that stopped it, if any.
    """

    def __init__(self, *, config: Config, using: str):
        super().__init__(name=f"ilab_memory-embedder-{using}", daemon=True)
        self.config, self.using = config, using
        self.stored = 0
        self.error: BaseException | None = None
        self._wake = threading.Event()
        self._held: list = []  # the batch in hand, claimed and not yet stored
        self._batch_done = threading.Condition()

    def wake(self) -> None:
        """More was queued: look again before stopping, and stop waiting for a lease."""
        self._wake.set()

    def run(self) -> None:
        try:
            self._drain()
        except Exception as error:  # noqa: BLE001 -- any failure stops the thread, never the process
            self.error = error
            logger.exception(
                "ilab_memory: the background embedder failed after storing %d vectors; the waiting "
                "memories stay queued for the next save, a search's budget or manage.py ilab_memory_embed",
                self.stored,
            )
        else:
            logger.info("ilab_memory: the background embedder stored %d vectors and stopped", self.stored)
        finally:
            self._unregister()
            connections[self.using].close()

    def _drain(self) -> None:
        while not _exiting.is_set():
            # Cleared before each claim: a write that commits after it sets it again, so the
            # thread cannot stop without seeing that write's rows.
            self._wake.clear()
            try:
                stored = embedding.embed_batch(config=self.config, using=self.using, on_claim=self._hold)
            finally:
                self._let_go()
            if stored is not None:
                self.stored += stored
                continue
            lapse = embedding.next_lease_lapse(config=self.config, using=self.using)
            if lapse is None:
                if self._stop_unless_woken():
                    return
                continue
            connections[self.using].close()  # a wait of up to a lease holds no connection
            self._wake.wait(min(max(0.0, (lapse - timezone.now()).total_seconds()), LEASE_POLL_SECONDS))

    def _hold(self, rows) -> None:
        with self._batch_done:
            self._held = rows

    def _let_go(self) -> None:
        with self._batch_done:
            self._held = []
            self._batch_done.notify_all()

    def wait_for_held(self, *, user_id: str, newer_than: tuple | None, timeout: float,
                      at_most: int | None = None) -> bool:
        """Wait until the batch in hand is stored (or dropped) if it holds rows of ``user_id``
        queued after ``newer_than`` ((queued_at, pk); None: any), and no more than ``at_most`` of
        them (more is a backlog, not to be waited for); returns whether it waited."""

        def held() -> int:
            return sum(row.user_id == user_id and (newer_than is None or (row.queued_at, row.pk) > newer_than)
                       for row in self._held)

        with self._batch_done:
            count = held()
            if not count or (at_most is not None and count > at_most):
                return False
            self._batch_done.wait_for(lambda: not held(), timeout)
            return True

    def _stop_unless_woken(self) -> bool:
        with _lock:
            if self._wake.is_set():
                return False
            self._unregister_locked()
            return True

    def _unregister(self) -> None:
        with _lock:
            self._unregister_locked()

    def _unregister_locked(self) -> None:
        if _threads.get(self.using) is self:
            del _threads[self.using]


def start(*, config: Config | None = None, using: str = "default") -> BackgroundEmbedder | None:
    """Start the background embedder of ``using`` in this process, or wake the running one;
    returns it (None while the process exits)."""
    if _exiting.is_set():
        return None
    with _lock:
        thread = _threads.get(using)
        if thread is not None:
            thread.wake()
            return thread
        thread = _threads[using] = BackgroundEmbedder(config=config or get_config(), using=using)
    try:
        thread.start()
    except BaseException:
        thread._unregister()
        raise
    return thread


def start_if_waiting(*, config: Config | None = None, using: str = "default") -> BackgroundEmbedder | None:
    """Start the background embedder if the mode is "background" and rows wait (a process that
    opens a database where another left a backlog); returns it, or None."""
    config = config or get_config()
    if config.EMBEDDING_MODE != embedding.BACKGROUND:
        return None
    try:
        waiting = embedding.waiting_exists(config=config, using=using)
    except DatabaseError as error:  # a site starting before it is migrated still starts
        logger.warning("ilab_memory: could not look for memories waiting for a vector (%s)", error)
        return None
    return start(config=config, using=using) if waiting else None


def wait_for_held(*, user_id: str, newer_than: tuple | None = None, using: str = "default",
                  timeout: float, at_most: int | None = None) -> bool:
    """Wait until this process's background embedder has stored the batch it holds, if that batch
    holds rows of ``user_id`` queued after ``newer_than`` (no more than ``at_most``); returns
    whether it waited."""
    thread = running(using)
    return thread is not None and thread.wait_for_held(user_id=user_id, newer_than=newer_than, timeout=timeout,
                                                       at_most=at_most)


# How long a search waits for its user's rows this process's embedder holds: enough for the few
# rows a save just queued, never the whole of a large batch of long memories (those are found by
# their words meanwhile).
HELD_BATCH_WAIT_SECONDS = 2.0


def share_with_search(*, user_id: str, claimed, more_waiting: bool, deadline: float | None, config: Config,
                      using: str) -> None:
    """After a search embedded its share: its user's rows that this process's embedder holds
    (it starts on the save's commit, so a search right after a save meets the saved row in its
    hands) are waited for as if the search had embedded them, no more than its budget of them:
    all of them while nothing else of the user waits, for up to ``HELD_BATCH_WAIT_SECONDS``;
    only those newer than what the search embedded, within its time, when more wait. Not inside
    a caller's transaction, which may hold the lock the thread needs to store them. A search
    that left rows waiting starts the thread."""
    if not transaction.get_connection(using).in_atomic_block and (claimed or not more_waiting):
        newer_than = min(embedding.queue_key(row) for row in claimed) if more_waiting else None
        timeout = min(HELD_BATCH_WAIT_SECONDS, config.EMBED_LEASE_SECONDS)
        if more_waiting and deadline is not None:
            timeout = min(timeout, max(0.0, deadline - time.monotonic()))
        if timeout > 0:
            wait_for_held(user_id=user_id, newer_than=newer_than, using=using, timeout=timeout,
                          at_most=config.SEARCH_EMBED_BUDGET)
    if more_waiting:
        start(config=config, using=using)


# EMBEDDING_MODE "background": this module runs the embedding (services.embedding.runner_for).
runner = embedding.Runner(after_commit=start, after_search=share_with_search,
                          busy=lambda using: running(using) is not None)


def running(using: str = "default") -> BackgroundEmbedder | None:
    """The background embedder of ``using`` in this process, if one runs."""
    with _lock:
        return _threads.get(using)


def _finish_at_exit() -> None:
    _exiting.set()
    with _lock:
        threads = list(_threads.values())
    for thread in threads:
        thread.wake()
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _forget_after_fork() -> None:
    # A forked child has none of its parent's threads, and a lock another thread held at the
    # fork would stay held forever.
    global _lock
    _lock = threading.Lock()
    _threads.clear()


atexit.register(_finish_at_exit)
os.register_at_fork(after_in_child=_forget_after_fork)
