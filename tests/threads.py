"""Start callers at the same moment, in threads, each on its own database connection."""

import threading

from django.db import connections


def run_together(target, n: int) -> list:
    """Run ``target(i)`` for i in range(n) in n threads released by one barrier.

    Returns the results in order; fails the test with every error any thread raised (a
    "database is locked" included). Each thread closes its connections when done, so the test
    database can be dropped afterwards.
    """
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def worker(i):
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [], errors
    return results


def running_thread(using: str = "default"):
    """This process's background embedder of ``using``, if one runs (its registry, read under
    its lock)."""
    from ilab_memory.runners import thread

    with thread._lock:
        return thread._threads.get(using)
