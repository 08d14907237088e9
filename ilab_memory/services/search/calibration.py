"""What "unrelated" looks like to an embedding model, measured from the model itself.

Raw cosines mean different things for different models (multilingual-e5 puts unrelated texts
near 0.8, an OpenAI-style model near 0.2), so no cosine is written in here. A fixed bank of
background queries is embedded once per model instead: everyday questions on subjects a memory
store is not about (``background.txt``) and generated non-words. Their vectors are stored
(``EmbedderCalibration``), so a restart does not embed them again, and give:

* **the unrelated level** (``unrelated_cosine``, ``unrelated_deviation``): each background
  question, as a query, against the other questions embedded as passages (memories it has
  nothing to do with); the mean and spread of its ``fusion.POOL_SIZE`` nearest. It is the
  imagined memory of fusion's cosine pool: what a query's nearest memories look like when none
  is related (for e5-small 0.80 ± 0.01, where all unrelated pairs average 0.76).
* **a user's null** (``null_of``): the bank scored against the user's own vectors. Each
  background question's nearest memory shows how near the best memory of a question about
  nothing the user said comes. A result whose words are not enough stands on its meaning only
  when it comes nearer than all but NULL_SHARE of the questions' nearest: a p-value per user,
  not a cosine per model. Below it the result is weak, never dropped (``fusion``).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from pathlib import Path
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction

from ... import vectors
from ...models import EmbedderCalibration, first_or_none
from .fusion import POOL_SIZE

BANK_FILE = Path(__file__).with_name("background.txt")
# A result stands on its meaning when it is nearer than the nearest memory of all but this share
# of the background questions.
NULL_SHARE = 0.08


@functools.cache
def bank() -> list[str]:
    """The background questions, read once per process: every search asks."""
    lines = BANK_FILE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@functools.cache
def bank_digest() -> str:
    return hashlib.sha256("\n".join(bank()).encode("utf-8")).hexdigest()


class Calibration(NamedTuple):
    """One model's background: its query vectors (questions first) and what they measure."""

    model_id: str
    queries: Any  # numpy (n, dimensions) float32
    questions: int
    unrelated_cosine: float
    unrelated_deviation: float


def _measure_now(embedder) -> Calibration:
    """The bank embedded by ``embedder`` (as queries and as passages) and what it measures."""
    import numpy as np

    questions = bank()
    queries = np.stack([embedder.embed_query(text) for text in questions]).astype(np.float32)
    passages = np.asarray(embedder.embed_passages(questions), dtype=np.float32)
    return _measure(embedder.model_id, queries, passages, len(questions))


def _measure(model_id: str, queries, passages, questions: int) -> Calibration:
    import numpy as np

    # Each question, as a query, against every other question as a passage: unrelated pairs.
    cross = queries[:questions] @ passages.T
    np.fill_diagonal(cross, -np.inf)
    nearest = -np.sort(-cross, axis=1)[:, :POOL_SIZE]
    return Calibration(model_id, queries, questions, float(nearest.mean()), float(nearest.std(axis=1).mean()))


_cache: dict[tuple, Calibration] = {}
_lock = threading.Lock()


def calibration_for(embedder, *, using: str = "default", measure: bool = True) -> Calibration | None:
    """The calibration of ``embedder``'s model: from this process, else the database, else
    (``measure``) measured now and stored: the bank embedded once, about 370 short texts, a few
    seconds of the model. Whoever embeds off the request path measures it before its first
    batch (``services.embedding.embed_waiting``); a search does only where nothing else embeds
    (``measure`` False otherwise: None until it is stored)."""
    digest = bank_digest()
    key = (using, embedder.model_id, digest)
    found = _cache.get(key)
    if found is not None:
        return found
    with _lock:
        found = _cache.get(key)
        if found is not None:
            return found
        found = _shipped(embedder.model_id, digest)
        if found is None:
            stored = first_or_none(EmbedderCalibration.objects.using(using).filter(
                model_id=embedder.model_id, bank_digest=digest))
            if stored is not None and stored.dimensions == embedder.dimensions:
                queries = vectors.unpack(stored.queries, stored.dimensions)
                found = Calibration(embedder.model_id, queries, stored.questions, stored.unrelated_cosine,
                                    stored.unrelated_deviation)
            elif not measure:
                return None
            else:
                found = _measure_now(embedder)
                _store(found, digest, embedder.dimensions, using=using)
        _cache[key] = found
        return found


# The default model's calibration ships with the package (``write_shipped``, run again whenever
# background.txt changes; a test checks the digest): its first search pays nothing.
SHIPPED_DIR = Path(__file__).with_name("calibrations")


def _shipped_path(model_id: str) -> Path:
    return SHIPPED_DIR / (hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:16] + ".npz")


def _shipped(model_id: str, digest: str) -> Calibration | None:
    import numpy as np

    path = _shipped_path(model_id)
    if not path.exists():
        return None
    with np.load(path) as data:
        if str(data["model_id"]) != model_id or str(data["bank_digest"]) != digest:
            return None  # another bank: measured again
        return Calibration(model_id, data["queries"].astype(np.float32), int(data["questions"]),
                           float(data["unrelated_cosine"]), float(data["unrelated_deviation"]))


def write_shipped(embedder) -> Path:
    """Measure ``embedder``'s calibration and write it where the package ships it."""
    import numpy as np

    found = _measure_now(embedder)
    path = _shipped_path(embedder.model_id)
    path.parent.mkdir(exist_ok=True)
    np.savez(path, model_id=found.model_id, bank_digest=bank_digest(), queries=found.queries,
             questions=found.questions, unrelated_cosine=found.unrelated_cosine,
             unrelated_deviation=found.unrelated_deviation)
    return path


def _store(found: Calibration, digest: str, dimensions: int, *, using: str) -> None:
    try:
        with transaction.atomic(using=using):
            EmbedderCalibration.objects.using(using).create(
                model_id=found.model_id, bank_digest=digest, dimensions=dimensions,
                queries=vectors.pack(found.queries), questions=found.questions,
                unrelated_cosine=found.unrelated_cosine, unrelated_deviation=found.unrelated_deviation,
            )
    except IntegrityError:
        pass  # another process stored the same model's calibration first: the same numbers


def forget_cache() -> None:
    _cache.clear()


def null_of(calibration: Calibration, rows) -> float:
    """The cosine a result must pass to stand on its meaning, for a user whose vectors in the
    reader's reach are ``rows`` (a numpy matrix); infinite for a user with none."""
    import numpy as np

    if len(rows) == 0:
        return float("inf")
    nearest = (calibration.queries[: calibration.questions] @ rows.T).max(axis=1)
    return float(np.quantile(nearest, 1 - NULL_SHARE))

