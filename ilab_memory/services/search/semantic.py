"""Search by meaning: the query's cosine to the user's stored vectors, when an embedder is set."""

from __future__ import annotations

import logging

from ... import vectors
from ...conf import Config
from ...embeddings import EmbeddingError
from ...scopes import Reach
from .. import embedding
from ..privacy import redact

logger = logging.getLogger("ilab_memory.search")


def cosines(user_id: str, reach: Reach, query: str, *, n: int, also, config: Config,
            using: str) -> tuple[dict, str | None]:
    """({observation id: cosine} of the nearest vectors in ``reach`` and of ``also``, the model id), or
    ({}, None) when search is lexical only. An embedder that fails leaves the words to it."""
    embedder = embedding.embedder_for(config)
    if embedder is None:
        return {}, None
    try:
        vector = embedder.embed_query(redact(query).text)  # a query's private block stays with the caller
    except EmbeddingError as error:
        logger.warning("ilab_memory: search fell back to words only: %s", error)
        return {}, None
    return vectors.similarities(
        user_id=user_id, scopes=reach.scopes, model_id=embedder.model_id, dimensions=embedder.dimensions, query=vector, n=n,
        also=also, using=using, max_bytes=config.VECTOR_CACHE_MB * 1024 * 1024,
    ), embedder.model_id
