"""Prometheus metrics, when ``prometheus-client`` is installed (the ``metrics`` extra) and the
``METRICS`` setting is on; otherwise every call here does nothing.

The instruments live in ``prometheus_client``'s default registry, so a site that already
exposes it (``django-prometheus``, its own view) shows them too; ``exposition()`` is what the
API's ``metrics/`` serves. None of them carries a user id, a scope or any text: labels are the
operation and the face only.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .conf import get_config

# Whether the extra is installed; the module itself is imported where it is used.
_INSTALLED = importlib.util.find_spec("prometheus_client") is not None

# The face a call came through when the face does not say it itself: the MCP server sets "mcp"
# around its tools, which call the facade.
_face: ContextVar[str] = ContextVar("ilab_memory_metrics_face", default="facade")
_instruments = None
# The first calls may come from several threads at once: one creates the instruments.
_creating = threading.Lock()


def enabled() -> bool:
    """Whether metrics are recorded: the extra installed and ``METRICS`` on."""
    return _INSTALLED and get_config().METRICS


def _get():
    global _instruments
    if _instruments is not None:
        return _instruments
    with _creating:
        if _instruments is not None:
            return _instruments
        from prometheus_client import REGISTRY, Counter, Histogram

        _instruments = {
            "seconds": Histogram("ilab_memory_operation_seconds", "Time of a save or a search, by face.",
                                 ["operation", "face"]),
            "stored": Counter("ilab_memory_vectors_stored", "Memories embedded (vectors stored) by this process."),
            "closed": Counter("ilab_memory_sweep_sessions_closed", "Idle sessions the sweep closed."),
            "erased": Counter("ilab_memory_sweep_memories_erased", "Expired memories the sweep erased."),
        }
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            REGISTRY.register(BacklogCollector())
    return _instruments


@contextmanager
def face(name: str) -> Iterator[None]:
    """Calls inside are counted under face ``name`` (unless they name their own)."""
    token = _face.set(name)
    try:
        yield
    finally:
        _face.reset(token)


@contextmanager
def timed(operation: str, *, face: str | None = None) -> Iterator[None]:
    """Observe the time of ``operation`` ("save", "search") under ``face`` (default: the current
    face). A call that raises is observed too: a slow failure is still slow."""
    if not enabled():
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _get()["seconds"].labels(operation, face or _face.get()).observe(time.perf_counter() - start)


def count(name: str, n: int) -> None:
    """Add ``n`` to counter ``name``: "stored", "closed" or "erased"."""
    if n and enabled():
        _get()[name].inc(n)


class BacklogCollector:
    """The embedding backlog and the sweep's leftovers, read from the database at each scrape."""

    def describe(self):
        """The gauges without their values: registering the collector reads no database (without
        ``describe``, prometheus_client would call ``collect`` to learn the names)."""
        return list(self._gauges(None, None, None))

    def collect(self):
        from django.utils import timezone

        from . import health

        now = timezone.now()
        waiting = health.backlog(now=now)
        yield from self._gauges(waiting.size, waiting.oldest_seconds or 0.0,
                                health.expired_open(now=now, config=get_config()))

    @staticmethod
    def _gauges(waiting, oldest_seconds, expired_open):
        from prometheus_client.core import GaugeMetricFamily

        from .health import BACKLOG_CAP

        yield GaugeMetricFamily("ilab_memory_embedding_backlog",
                                f"Memories waiting for a vector (counted up to {BACKLOG_CAP}).", waiting)
        yield GaugeMetricFamily("ilab_memory_embedding_backlog_oldest_seconds",
                                "How long the oldest memory waiting for a vector has waited (0: none).",
                                oldest_seconds)
        yield GaugeMetricFamily("ilab_memory_sessions_expired_open",
                                f"Sessions idle past the timeout that no sweep has closed (counted up to "
                                f"{BACKLOG_CAP}).", expired_open)


def exposition() -> tuple[bytes, str]:
    """The text a Prometheus scrape reads, and its content type (after ``enabled()``)."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

    _get()
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Several worker processes (gunicorn): their files summed, the backlog read once here.
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(BacklogCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST
