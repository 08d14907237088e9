"""Search by meaning: the query's cosine to the user's stored vectors, when an embedder is set,
and what a result found by meaning alone must pass (``calibration``)."""

from __future__ import annotations

import logging
from typing import NamedTuple

from ... import vectors
from ...conf import Config
from ...embeddings import EmbeddingError
from ...scopes import Reach
from .. import embedding
from ..privacy import redact
from . import calibration

logger = logging.getLogger("ilab_memory.search")


class Meaning(NamedTuple):
    """A query's meaning side: {observation id: cosine}, the model id (None: words only), the
    model's calibration (None: not measured yet) and the query's vector."""

    cosines: dict
    model_id: str | None = None
    calibration: calibration.Calibration | None = None
    vector: object = None  # numpy (dimensions,)
    dimensions: int = 0


WORDS_ONLY = Meaning({})


def meaning(user_id: str, reach: Reach, query: str, *, n: int, also, config: Config, using: str) -> Meaning:
    """The cosines of the nearest vectors in ``reach`` and of ``also``. An embedder that fails
    leaves the words to it."""
    embedder = embedding.embedder_for(config)
    if embedder is None:
        return WORDS_ONLY
    try:
        vector = embedder.embed_query(redact(query).text)  # a query's private block stays with the caller
        # Where a runner embeds off the request path, it measures the calibration; a search
        # measures it only where nothing else embeds (no runner: searches and the command).
        model = calibration.calibration_for(embedder, using=using, measure=embedding.runner_for(config) is None)
    except EmbeddingError as error:
        logger.warning("ilab_memory: search fell back to words only: %s", error)
        return WORDS_ONLY
    cosines = vectors.similarities(
        user_id=user_id, reach=reach, model_id=embedder.model_id, dimensions=embedder.dimensions, query=vector,
        n=n, also=also, using=using, max_bytes=config.VECTOR_CACHE_MB * 1024 * 1024,
    )
    return Meaning(cosines, embedder.model_id, model, vector, embedder.dimensions)


def null(meaning: Meaning, *, user_id: str, reach: Reach, config: Config, using: str) -> float | None:
    """The user's null (``calibration.null_of``): the cosine a result needs to stand on its
    meaning; None before the model's calibration is measured."""
    if meaning.calibration is None or meaning.model_id is None:
        return None
    return vectors.derived_from_rows(
        user_id=user_id, reach=reach, model_id=meaning.model_id, dimensions=meaning.dimensions, using=using,
        max_bytes=config.VECTOR_CACHE_MB * 1024 * 1024, key="null",
        compute=lambda rows: calibration.null_of(meaning.calibration, rows),
    )
