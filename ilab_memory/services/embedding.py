"""Keeping vectors in step with the stored text: queue on write, embed off the write path.

A write that changes what an observation says (create, revise, update, import, restore) queues
its ``ObservationVector`` row (``model_id`` None, ``generation`` + 1) in the writer's
transaction. The embedding itself runs later, outside any write: on Celery workers in a site
(``EMBEDDING_MODE = "celery"``: a task is enqueued when the write commits), or by the next
search of that user (``"inline"``, the embedded default: read-your-writes with no worker), and
always by ``manage.py ilab_memory_embed``. What is embedded is what is stored: text that went
through redaction, so private text never reaches an embedder.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .. import sql, vectors
from ..conf import Config, get_config
from ..embeddings import configured_embedder
from ..models import Observation, ObservationVector, VectorStamp

logger = logging.getLogger("ilab_memory.embedding")

INLINE, CELERY = "inline", "celery"


def passage_text(type: str, title: str, content: str) -> str:
    """What is embedded for an observation: its type, title and content. The type is part of
    what a memory means: with it, "allergies" finds a preference "Allergic to cats" (measured
    on the development sets: docs/search.md)."""
    return f"{type}: {title}\n{content}"


def embedder_for(config: Config):
    """The configured embedder, or None: lexical search only."""
    return configured_embedder(config.EMBEDDER)


# -- the write side: queue ------------------------------------------------------------------


def queue(observations, *, now: datetime, config: Config, using: str) -> None:
    """Queue new observations for a vector (inside the writer's transaction)."""
    if embedder_for(config) is None:
        return
    sql.queue_vectors(observations, now=now, using=using)
    _after_commit(config=config, using=using)


def requeue(observation, *, now: datetime, config: Config, using: str) -> None:
    """Queue an observation (a model instance or a row with ``id`` and ``user_id``) whose text
    changed: its old vector no longer says what it says."""
    if embedder_for(config) is None:
        sql.drop_vector(observation.id, using=using)
    elif sql.requeue_vector(observation.id, now=now, using=using):
        _after_commit(config=config, using=using)
    else:
        queue([observation], now=now, config=config, using=using)


def drop(*, user_id: str, observation_ids, using: str) -> int:
    """Remove the vectors of observations that were soft-deleted (a restore queues them again)."""
    return ObservationVector.objects.using(using).filter(user_id=user_id, observation_id__in=observation_ids).delete()[0]


def _after_commit(*, config: Config, using: str) -> None:
    if config.EMBEDDING_MODE == CELERY:
        from ..tasks import enqueue_embedding

        transaction.on_commit(lambda: enqueue_embedding(using=using), using=using)


# -- the embedding side -----------------------------------------------------------------------


def _waiting(model_id: str, using: str):
    return ObservationVector.objects.using(using).waiting(model_id)


def embed_waiting(*, user_id: str | None = None, config: Config | None = None, using: str = "default",
                  batch_size: int | None = None, max_batches: int | None = None, progress=None) -> int:
    """Embed rows waiting for a vector (one user's, or everyone's oldest first); returns how many
    were stored. Each batch is claimed (skipped by other workers until stored or the lease
    lapses), embedded outside any transaction, and stored only where the row is still the
    generation that was read. Raises EmbeddingError when the backend fails (nothing is lost:
    the rows stay queued)."""
    config = config or get_config()
    embedder = embedder_for(config)
    if embedder is None:
        return 0
    batch_size = batch_size or config.EMBED_BATCH_SIZE
    stored = batches = 0
    while max_batches is None or batches < max_batches:
        claimed = _claim(embedder.model_id, user_id=user_id, size=batch_size, using=using)
        if not claimed:
            break
        batches += 1
        texts = [passage_text(row.observation.type, row.observation.title, row.observation.content) for row in claimed]
        try:
            matrix = embedder.embed_passages(texts)
        except Exception:
            _release(claimed, using=using)
            raise
        stored += _store(claimed, matrix, embedder=embedder, using=using)
        if progress is not None:
            progress(stored)
    return stored


def pending_claimed_elsewhere(*, config: Config, using: str) -> bool:
    """Whether rows still wait under another worker's lease (it may have died holding them)."""
    embedder = embedder_for(config)
    return embedder is not None and _waiting(embedder.model_id, using).filter(claimed_until__isnull=False).exists()


def _claim(model_id: str, *, user_id: str | None, size: int, using: str) -> list[ObservationVector]:
    """A batch to embed: everyone's waiting rows, oldest first; or one user's queued rows only
    (a search's check, read through that user's partial index: rows of an older model wait
    for a worker or ``ilab_memory_embed``, and are found by their words meanwhile)."""
    now = timezone.now()
    with transaction.atomic(using=using):
        if user_id is None:
            rows = _waiting(model_id, using)
        else:
            rows = ObservationVector.objects.using(using).filter(user_id=user_id, model_id__isnull=True)
        rows = rows.filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        rows = list(
            rows.select_for_update(skip_locked=True, of=("self",)).select_related("observation")
            .only("id", "generation", "user_id", "observation__type", "observation__title", "observation__content")
            .order_by("queued_at", "id")[:size]
        )
        if rows:
            lease = timedelta(seconds=get_config().EMBED_LEASE_SECONDS)
            ObservationVector.objects.using(using).filter(pk__in=[r.pk for r in rows]).update(claimed_until=now + lease)
    return rows


def _release(rows, *, using: str) -> None:
    ObservationVector.objects.using(using).filter(pk__in=[r.pk for r in rows]).update(claimed_until=None)


def _store(rows, matrix, *, embedder, using: str) -> int:
    now = timezone.now()
    pgvector = vectors.pgvector_ready(using)
    stored = 0
    users: set[str] = set()
    with transaction.atomic(using=using):
        for row, vector in zip(rows, matrix):
            done = ObservationVector.objects.using(using).filter(pk=row.pk, generation=row.generation).update(
                model_id=embedder.model_id, dimensions=embedder.dimensions, vector=vectors.pack(vector),
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
            batch = list(missing.only("id", "user_id")[:batch_size])
            if not batch:
                return queued
            ObservationVector.objects.using(using).bulk_create(
                [ObservationVector(observation_id=o.pk, user_id=o.user_id, queued_at=timezone.now()) for o in batch]
            )
        queued += len(batch)
