"""The Celery runner (``EMBEDDING_RUNNER = "ilab_memory.runners.celery.runner"``): embedding off
the write path on workers. Thin wrappers.

Needs the ``celery`` extra; the site's Celery app finds the task through ``ilab_memory.tasks``
(``autodiscover_tasks`` imports each app's ``tasks`` module), which imports this one.
Each task drains the queue in claimed batches (services/embedding.py), so any number of
workers on any number of machines share it without embedding a row twice.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import connections

from ..conf import get_config
from ..embeddings import EmbeddingError
from ..services.embedding import embed_waiting, resume_waiting, runner_for, waiting_exists

logger = logging.getLogger(__name__)

BATCHES_PER_TASK = 50  # then the task hands over, so one task never holds a worker for long


@shared_task(name="ilab_memory.embed_waiting", bind=True, acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(EmbeddingError,), retry_backoff=True, retry_backoff_max=300, max_retries=None)
def embed_waiting_task(self, using: str = "default") -> int:
    """Embed queued observations; again later while rows remain (more work, or leases held by
    a worker that may have died)."""
    config = get_config()
    stored = embed_waiting(config=config, using=using, max_batches=BATCHES_PER_TASK)
    if stored and stored >= BATCHES_PER_TASK * config.EMBED_BATCH_SIZE:
        embed_waiting_task.apply_async(kwargs={"using": using})
    elif waiting_exists(config=config, using=using, held=True):
        embed_waiting_task.apply_async(kwargs={"using": using}, countdown=config.EMBED_LEASE_SECONDS)
    return stored


def runner(*, config, using: str) -> None:
    """Ask a worker to embed (called when a write that queued vectors commits). A broker that
    cannot be reached is logged, not raised: the write is done and its rows stay queued for the
    next task or ``manage.py ilab_memory_embed``."""
    try:
        embed_waiting_task.apply_async(kwargs={"using": using})
    except Exception as error:  # noqa: BLE001 -- kombu raises several kinds; the write must not fail for it
        logger.error("ilab_memory: could not enqueue embedding (%s); run manage.py ilab_memory_embed", error)


@worker_ready.connect
def embed_on_worker_start(**kwargs) -> None:
    """A starting worker enqueues a task if rows wait for a vector (database ``default``) and
    this runner is the site's.

    acks_late + reject_on_worker_lost requeue a task only while the worker's main process lives
    (a prefork child died). When the whole worker is gone (kill -9, a lost machine) its task
    stays unacknowledged in the broker until the visibility timeout (Redis: an hour), and no
    other task may come for a batch it held. This task finds such rows under the dead worker's
    lease and comes back for them when it lapses (``countdown=EMBED_LEASE_SECONDS``).
    """
    try:
        config = get_config()
        if runner_for(config) is runner:
            resume_waiting(config=config, using="default")
    except Exception as error:  # noqa: BLE001 -- a worker that cannot see the database still starts
        logger.warning("ilab_memory: could not look for rows waiting for a vector (%s)", error)
    finally:
        connections["default"].close()  # the main process of a prefork worker runs no tasks
