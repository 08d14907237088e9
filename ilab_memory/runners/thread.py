"""The thread runner (``EMBEDDING_RUNNER = "ilab_memory.runners.thread.runner"``) for the embedded
mode and the demo site, which have no worker: one thread per process and database, started or
woken when a write that queued vectors commits, claims and embeds batches (``services.embedding``
does the work) until nothing can be claimed, then stops. Rows under another process's lease are
polled for until stored or the lease lapses, so a killed process loses nothing; the leases keep
several processes from embedding a row twice. An embedder that fails stops the thread, logged;
its rows stay queued.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading

from django.db import connections

from ..conf import Config, get_config
from ..services import embedding

logger = logging.getLogger(__name__)

# At exit a process stops claiming and waits this long for the batch in hand: a script that
# saves and exits leaves its memories embedded, not leased to a dead process for a lease.
EXIT_WAIT_SECONDS = 10
# How often to look again while rows wait under another process's lease.
LEASE_POLL_SECONDS = 2

_lock = threading.Lock()  # a thread that stops and a commit that wakes it never miss each other
_threads: dict[str, BackgroundEmbedder] = {}  # the running thread of each database alias
_exiting = threading.Event()


class BackgroundEmbedder(threading.Thread):
    """Embeds what waits on database ``using``, then stops. ``stored`` counts the vectors it
    stored; ``error`` is the exception that stopped it, if any."""

    def __init__(self, *, config: Config, using: str):
        super().__init__(name=f"ilab_memory-embedder-{using}", daemon=True)
        self.config, self.using = config, using
        self.stored = 0
        self.error: BaseException | None = None
        self.woken = threading.Event()

    def run(self) -> None:
        try:
            while not _exiting.is_set():
                self.woken.clear()  # a commit after this sets it again: its rows are seen
                stored = embedding.embed_batch(config=self.config, using=self.using)
                if stored is not None:
                    self.stored += stored
                elif embedding.waiting_exists(config=self.config, using=self.using, held=True):
                    connections[self.using].close()  # no connection held while it waits
                    self.woken.wait(LEASE_POLL_SECONDS)
                elif self._stop_unless_woken():
                    break
        except Exception as error:
            self.error = error
            logger.exception("ilab_memory: the background embedder failed after storing %d vectors; the "
                             "waiting memories stay queued for the next save, a search or "
                             "manage.py ilab_memory_embed", self.stored)
        else:
            logger.info("ilab_memory: the background embedder stored %d vectors and stopped", self.stored)
        finally:
            self._stop_unless_woken(force=True)
            connections[self.using].close()

    def _stop_unless_woken(self, force: bool = False) -> bool:
        with _lock:
            if self.woken.is_set() and not force:
                return False
            if _threads.get(self.using) is self:
                del _threads[self.using]
            return True


def runner(*, config: Config | None = None, using: str = "default") -> BackgroundEmbedder | None:
    """The ``EMBEDDING_RUNNER``: start the thread of ``using`` in this process, or wake the
    running one, when a write that queued vectors commits; returns it (None while the process
    exits)."""
    if _exiting.is_set():
        return None
    with _lock:
        thread = _threads.get(using)
        if thread is not None:
            thread.woken.set()
        else:
            # Started before it is registered: a thread that cannot start leaves no entry, and
            # the next commit tries again. Its run() waits for this lock to deregister itself.
            thread = BackgroundEmbedder(config=config or get_config(), using=using)
            thread.start()
            _threads[using] = thread
    return thread


def _finish_at_exit() -> None:
    # Daemon threads die mid-call at exit: without this wait, a script that saves and exits
    # leaves the row it was embedding leased, skipped by searches until the lease lapses.
    _exiting.set()
    with _lock:
        threads = list(_threads.values())
    for thread in threads:
        thread.woken.set()
        thread.join(EXIT_WAIT_SECONDS / len(threads))


def _forget_after_fork() -> None:
    # A forked child (gunicorn --preload, multiprocessing) runs none of its parent's threads,
    # and a lock one of them held at the fork would stay held: every save would hang on commit.
    global _lock
    _lock = threading.Lock()
    _threads.clear()


atexit.register(_finish_at_exit)
os.register_at_fork(after_in_child=_forget_after_fork)
