"""Deterministic histories written in bulk through the ORM (the search index fills as it would).

Each user gets completed sessions of 50 memories spread over the past year and no active
session. Text comes from a seeded pool of sentences. Two kinds of search term are planted:
``COMMON_TERM`` in 90 % of a user's memories, and ``rare_term(user, k)`` in 4 of them.

With ``vectors=(model_id, dimensions)`` every memory also gets a stored vector: a random unit
vector (seeded), as the embedder would leave it. A lookup's cost does not depend on the values,
and embedding 10,000 memories for real takes a quarter of an hour on two cores.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import timedelta

from .corpus import Corpus

COMMON_TERM = "service"
PER_SESSION = 50
RARE_SPAN = 4
TYPES = ("manual", "decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning")
BATCH = 2_000


def rare_term(user_id: str, k: int) -> str:
    """A word in ``RARE_SPAN`` memories of the user (memories ``k * RARE_SPAN`` onwards)."""
    return "zr" + hashlib.sha256(f"{user_id}:{k}".encode()).hexdigest()[:8]


SEED = 20260115


def queries() -> dict:
    """``{kind: query(user_id, size, i)}``: the kinds of words-only query every search phase times."""
    rng = random.Random(SEED)
    words = Corpus(SEED).words[100:1000]  # each in about 1 % of the memories
    three = [" ".join(rng.sample(words, 3)) for _ in range(50)]
    return {
        "rare term": lambda user_id, size, i: rare_term(user_id, (i * 37) % (size // RARE_SPAN)),
        "three words": lambda user_id, size, i: three[i % len(three)],
        "common term": lambda user_id, size, i: COMMON_TERM,
    }


def write_history(user_id: str, count: int, *, seed: int = SEED, vectors: tuple[str, int] | None = None,
                  scope: str = ""):
    """Add ``count`` memories of ``user_id`` in ``scope``, in sessions, in batches."""
    from django.db import transaction
    from django.utils import timezone

    from ilab_memory.models import Observation, ObservationVector, Session, SessionStatus, VectorStamp

    corpus, rng = Corpus(seed), random.Random(f"{seed}:{user_id}")
    now = timezone.now()
    first, step = now - timedelta(days=365), timedelta(days=365) / max(count, 1)
    with transaction.atomic():
        for start in range(0, count, BATCH):
            sessions, observations = [], []
            for j in range(start, min(start + BATCH, count)):
                at = first + step * j
                if j % PER_SESSION == 0:
                    end = first + step * min(j + PER_SESSION - 1, count - 1)
                    sessions.append(Session(user_id=user_id, scope=scope, status=SessionStatus.COMPLETED, started_at=at,
                                            last_activity_at=end, ended_at=end, summary="bench"))
                content = f"{rng.choice(corpus.sentences)} {rare_term(user_id, j // RARE_SPAN)}"
                if rng.random() < 0.9:
                    content += f" {COMMON_TERM}"
                observations.append(Observation(
                    user_id=user_id, scope=scope, session=sessions[-1], type=TYPES[j % len(TYPES)],
                    title=rng.choice(corpus.titles), content=content,
                    dedupe_hash=hashlib.sha256(f"{user_id}:{scope}:{j}".encode()).hexdigest(),
                    created_at=at, updated_at=at, last_seen_at=at,
                ))
            Session.objects.bulk_create(sessions)
            Observation.objects.bulk_create(observations)
            if vectors is not None:
                rows = random_vectors(observations, *vectors, now=now, rng=rng)
                ObservationVector.objects.bulk_create(rows)
        if vectors is not None:  # what a store of vectors leaves: the user's stamp
            VectorStamp.objects.update_or_create(user_id=user_id, defaults={"stamp": uuid.uuid4()})


def analyze() -> None:
    """PostgreSQL: fresh planner statistics after a load, the state autovacuum soon reaches."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def random_vectors(observations, model_id: str, dimensions: int, *, now, rng: random.Random):
    import numpy as np

    from ilab_memory.models import ObservationVector
    from ilab_memory.vectors import pack

    matrix = np.random.default_rng(rng.getrandbits(32)).standard_normal((len(observations), dimensions))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [ObservationVector(observation=o, user_id=o.user_id, scope=o.scope, model_id=model_id, dimensions=dimensions,
                              vector=pack(row), queued_at=now, embedded_at=now)
            for o, row in zip(observations, matrix)]
