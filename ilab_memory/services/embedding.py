"""Keeping vectors in step with the stored text: queue on write, embed off the write path.

A write that changes what an observation says (create, revise, update, import, restore) queues
its ``ObservationVector`` row (``model_id`` None, ``generation`` + 1) in the writer's
transaction. The embedding itself runs later, outside any write: by the runner the
``EMBEDDING_RUNNER`` setting names, called when the write commits (``ilab_memory.runners``: a
thread in the process that wrote, or Celery workers), by ``manage.py
ilab_memory_embed``, and by searches: before it reads, a search embeds at most a small budget
of its user's newest rows that no one holds (``embed_for_search``) and finds the rest by their
words, so no search waits on a backlog. Claims with a lease keep two embedders off one row.
What is embedded is what is stored: text that went through redaction, so private text never
reaches an embedder.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from .. import metrics, vectors
from ..conf import Config, get_config
from ..embeddings import EmbeddingError, configured_embedder
from ..embeddings.base import passage_vectors
from ..models import Observation, ObservationVector, VectorStamp

logger = logging.getLogger("ilab_memory.embedding")


def passage_text(type: str, title: str, content: str) -> str:
    """What is embedded for an observation: its type, title and content. The type is part of
    what a memory means: with it, "allergies" finds a preference "Allergic to cats" (see the
    development sets in docs/search.md)."""
    return f"{type}: {title}\n{content}"


def embedder_for(config: Config):
    """The configured embedder, or None: lexical search only."""
    return configured_embedder(config.EMBEDDER)


# -- the write side: queue ------------------------------------------------------------------


def queue(observations, *, now: datetime, config: Config, using: str) -> None:
    """Queue new observations for a vector (inside the writer's transaction)."""
    if embedder_for(config) is None:
        return
    ObservationVector.objects.using(using).bulk_create(
        ObservationVector(observation_id=o.id, user_id=o.user_id, scope=o.scope, queued_at=now) for o in observations
    )
    _after_commit(config=config, using=using)


def requeue(observation, *, now: datetime, config: Config, using: str) -> None:
    """Queue an observation whose text changed: its old vector no longer says what it says.
    Its vector row, if any, becomes a new generation waiting for a vector."""
    row = ObservationVector.objects.using(using).filter(observation_id=observation.id)
    if embedder_for(config) is None:
        row.delete()
    elif row.update(model_id=None, dimensions=None, vector=None, pieces=None, generation=F("generation") + 1,
                    queued_at=now, claimed_until=None, embedded_at=None):
        _after_commit(config=config, using=using)
    else:
        queue([observation], now=now, config=config, using=using)


def drop(*, user_id: str, observation_ids, using: str) -> int:
    """Remove the vectors of observations that were soft-deleted (a restore queues them again)."""
    rows = ObservationVector.objects.using(using).filter(user_id=user_id, observation_id__in=observation_ids)
    return rows.delete()[0]


def runner_for(config: Config) -> Callable[..., None] | None:
    """The ``EMBEDDING_RUNNER`` setting's runner (``runners.base.Runner``), called when a
    write that queued vectors commits; None: searches and ``ilab_memory_embed`` only. A dotted
    path read with ``import_string``, so no service imports a face."""
    return import_string(config.EMBEDDING_RUNNER) if config.EMBEDDING_RUNNER else None


def _after_commit(*, config: Config, using: str) -> None:
    runner = runner_for(config)
    if runner is not None:
        # robust: the write has committed; a runner that fails only leaves its rows queued.
        transaction.on_commit(lambda: runner(config=config, using=using), using=using, robust=True)


def resume_waiting(*, config: Config, using: str = "default") -> None:
    """At a process's start: call the runner if rows wait (a process that exited or was
    killed left them), as a write's commit would."""
    runner = runner_for(config)
    try:
        if runner is not None and waiting_exists(config=config, using=using):
            runner(config=config, using=using)
    except DatabaseError as error:  # a site starting before it is migrated still starts
        logger.warning("ilab_memory: could not resume the memories waiting for a vector (%s)", error)


# -- the embedding side -----------------------------------------------------------------------


def _waiting(model_id: str, using: str):
    return ObservationVector.objects.using(using).waiting(model_id)


def embed_waiting(*, user_id: str | None = None, config: Config | None = None, using: str = "default",
                  batch_size: int | None = None, max_batches: int | None = None, progress=None) -> int:
    """Embed rows waiting for a vector (one user's, or everyone's oldest first) batch after batch
    until none can be claimed; returns how many were stored. Raises EmbeddingError when the
    backend fails (nothing is lost: the rows stay queued)."""
    config = config or get_config()
    stored = batches = 0
    while max_batches is None or batches < max_batches:
        done = embed_batch(user_id=user_id, size=batch_size, config=config, using=using)
        if done is None:
            break
        batches += 1
        stored += done
        if progress is not None:
            progress(stored)
    _measure_calibration(config=config, using=using)  # once the queue is drained: never before a vector
    return stored


def _measure_calibration(*, config: Config, using: str) -> None:
    """What unrelated looks like to the model (``search.calibration``), measured here, off the
    request path, when the queue is drained (a stored one is read back; nothing to do after)."""
    from .search import calibration  # the search package imports this module

    embedder = embedder_for(config)
    if embedder is not None:
        calibration.calibration_for(embedder, using=using)


def embed_batch(*, config: Config, using: str, user_id: str | None = None, size: int | None = None,
                newest_first: bool = False) -> int | None:
    """Claim one batch of waiting rows (skipped by other workers until stored or the lease
    lapses), embed it outside any transaction, and store each vector only where the row is still
    the generation that was read; returns how many were stored, or None when nothing could be
    claimed (nothing waits, or only under others' leases). Raises EmbeddingError when the
    backend fails (the batch is released: its rows stay queued)."""
    embedder = embedder_for(config)
    if embedder is None:
        return None
    claimed = _claim(embedder.model_id, user_id=user_id, size=size or config.EMBED_BATCH_SIZE,
                     newest_first=newest_first, lease_seconds=config.EMBED_LEASE_SECONDS, using=using)
    if not claimed:
        return None
    texts = [passage_text(row.observation.type, row.observation.title, row.observation.content) for row in claimed]
    try:
        matrix, pieces = passage_vectors(embedder, texts)
    except Exception:
        _release(claimed, using=using)
        raise
    return _store(claimed, matrix, pieces, embedder=embedder, using=using)


def embed_for_search(*, user_id: str, config: Config, using: str) -> int:
    """Before a search reads: embed up to ``SEARCH_EMBED_BUDGET`` of the user's newest waiting
    memories no one holds, within ``SEARCH_EMBED_MILLISECONDS``; returns how many were stored.
    With an ``EMBEDDING_RUNNER``, more waiting than the budget is its backlog, left to it, and the
    few rows it holds (a save just made) are awaited up to ``HELD_WAIT_SECONDS``, so what was just
    saved is found by meaning. The rest is found by its words; a failing embedder is logged."""
    budget, limit = config.SEARCH_EMBED_BUDGET, config.SEARCH_EMBED_MILLISECONDS
    waiting = _waiting_for(user_id, using)
    # One count of at most budget + 1 rows decides: none waiting, the common case, costs it alone.
    count = waiting[: budget + 1].count() if budget and embedder_for(config) is not None else 0
    if not count or (config.EMBEDDING_RUNNER and count > budget):
        return 0  # nothing waits, or a backlog: the runner's
    deadline = time.monotonic() + (math.inf if limit is None else limit / 1000)
    stored = 0
    try:
        for _ in range(budget):
            if time.monotonic() >= deadline:
                break
            done = embed_batch(user_id=user_id, size=1, newest_first=True, config=config, using=using)
            if done is None:
                break
            stored += done
    except EmbeddingError as error:
        logger.warning("ilab_memory: a search could not embed its user's new memories: %s", error)
    # Read again: the runner may have claimed a row since. Not in a transaction, whose snapshot
    # would never see the held rows stored.
    if config.EMBEDDING_RUNNER and not transaction.get_connection(using).in_atomic_block:
        held, until = waiting.filter(claimed_until__gte=timezone.now()), time.monotonic() + HELD_WAIT_SECONDS
        while time.monotonic() < until and held.exists():
            time.sleep(HELD_POLL_SECONDS)
    return stored


# A search polls the few rows a runner holds this often, this long at most (a first model load).
HELD_POLL_SECONDS, HELD_WAIT_SECONDS = 0.01, 2.0


def waiting_exists(*, config: Config, using: str, held: bool = False) -> bool:
    """Whether rows wait for a vector of the configured model (False without an embedder); with
    ``held``, rows under a lease (another worker's, which may have died holding them)."""
    embedder = embedder_for(config)
    if embedder is None:
        return False
    rows = _waiting(embedder.model_id, using)
    return (rows.filter(claimed_until__isnull=False) if held else rows).exists()


def _waiting_for(user_id: str, using: str):
    return ObservationVector.objects.using(using).filter(user_id=user_id, model_id__isnull=True)


def _claim(model_id: str, *, user_id: str | None, size: int, newest_first: bool, lease_seconds: int,
           using: str) -> list[ObservationVector]:
    """A batch to embed: everyone's waiting rows, oldest first; or one user's queued rows only
    (a search's budget, read through that user's partial index: rows of an older model wait
    for a worker or ``ilab_memory_embed``, and are found by their words meanwhile).

    Exclusive across processes: on PostgreSQL the rows are locked (SKIP LOCKED), on SQLite the
    transaction takes the database's write lock when it begins (``transaction_mode =
    "IMMEDIATE"``, as embedded mode and the demo set it; system check W001), so a second
    claimer reads the rows only after the first one's lease is on them."""
    now = timezone.now()
    rows = _waiting(model_id, using) if user_id is None else _waiting_for(user_id, using)
    rows = rows.filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
    if user_id is not None and not rows.exists():
        return []  # a search with nothing to embed takes no write lock
    order = ("-queued_at", "-id") if newest_first else ("queued_at", "id")
    with transaction.atomic(using=using):
        rows = list(
            rows.select_for_update(skip_locked=True, of=("self",)).select_related("observation")
            .only("id", "generation", "user_id",
                  "observation__type", "observation__title", "observation__content")
            .order_by(*order)[:size]
        )
        if rows:
            lease = timedelta(seconds=lease_seconds)
            ObservationVector.objects.using(using).filter(pk__in=[r.pk for r in rows]).update(claimed_until=now + lease)
    return rows


def _release(rows, *, using: str) -> None:
    ObservationVector.objects.using(using).filter(pk__in=[r.pk for r in rows]).update(claimed_until=None)


def _store(rows, matrix, pieces, *, embedder, using: str) -> int:
    now = timezone.now()
    pgvector = vectors.pgvector_ready(using)
    stored = 0
    users: set[str] = set()
    with transaction.atomic(using=using):
        for row, vector, its_pieces in zip(rows, matrix, pieces):
            done = ObservationVector.objects.using(using).filter(pk=row.pk, generation=row.generation).update(
                model_id=embedder.model_id, dimensions=embedder.dimensions, vector=vectors.pack(vector),
                pieces=None if its_pieces is None else vectors.pack(its_pieces),
                embedded_at=now, claimed_until=None,
            )
            if done and pgvector:
                vectors.store_pgvector(row.pk, vector, using=using)
            if done:
                users.add(row.user_id)
            stored += done
        # A new stamp for every user with new vectors: processes holding their vectors reload.
        VectorStamp.objects.using(using).bulk_create(
            [VectorStamp(user_id=user_id, stamp=uuid.uuid4()) for user_id in sorted(users)],
            update_conflicts=True, unique_fields=["user_id"], update_fields=["stamp"],
        )
    metrics.count("stored", stored)
    return stored


def queue_missing(*, config: Config | None = None, using: str = "default", batch_size: int = 1000) -> int:
    """Queue every live observation that has no vector row (a site that turned EMBEDDER on
    later, or rows written by other means); returns how many were queued."""
    config = config or get_config()
    queued = 0
    missing = Observation.objects.using(using).live().filter(
        ~Exists(ObservationVector.objects.using(using).filter(observation_id=OuterRef("pk")))
    )
    while True:
        with transaction.atomic(using=using):
            batch = list(missing.only("id", "user_id", "scope")[:batch_size])
            if not batch:
                return queued
            ObservationVector.objects.using(using).bulk_create(
                [ObservationVector(observation_id=o.pk, user_id=o.user_id, scope=o.scope, queued_at=timezone.now())
                 for o in batch]
            )
        queued += len(batch)
