"""Embedders of our own interface for tests: they record every text they are given."""

import hashlib
import re
import threading
from typing import ClassVar

import numpy as np

DIMENSIONS = 64


class RecordingEmbedder:
    """Bag-of-words vectors (each word hashed to a dimension): texts sharing words are near.

    Every text it embeds is kept in ``seen``, and the stored texts also in ``passages``
    (class-wide, since the settings build instances).
    """

    model_id = "tests:bag-of-words-64"
    dimensions = DIMENSIONS
    seen: ClassVar[list[str]] = []
    passages: ClassVar[list[str]] = []
    fail = False

    def _vector(self, text: str) -> np.ndarray:
        vector = np.full(DIMENSIONS, 1e-3, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vector[int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % DIMENSIONS] += 1
        return vector / np.linalg.norm(vector)

    def embed_passages(self, texts):
        if RecordingEmbedder.fail:
            from ilab_memory.embeddings import EmbeddingError

            raise EmbeddingError("the test embedder was told to fail")
        RecordingEmbedder.seen.extend(texts)
        RecordingEmbedder.passages.extend(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS), np.float32)

    def embed_query(self, text):
        if RecordingEmbedder.fail:
            from ilab_memory.embeddings import EmbeddingError

            raise EmbeddingError("the test embedder was told to fail")
        RecordingEmbedder.seen.append(text)
        return self._vector(text)


class OtherModelEmbedder(RecordingEmbedder):
    model_id = "tests:another-model"


class GatedEmbedder(RecordingEmbedder):
    """The same vectors; the background thread's calls wait until ``gate`` is set (its batch
    stays in flight for as long as a test needs), everyone else's go at once."""

    gate = threading.Event()

    def embed_passages(self, texts):
        if threading.current_thread().name.startswith("ilab_memory-embedder"):
            assert GatedEmbedder.gate.wait(120), "the test never opened the gate"
        return super().embed_passages(texts)


class SlowEmbedder(RecordingEmbedder):
    """The same vectors, ``DELAY`` seconds per passage: a batch stays in flight long enough to
    kill the worker that embeds it (tests/runners/test_celery.py)."""

    DELAY = 1.0

    def embed_passages(self, texts):
        import time

        time.sleep(self.DELAY * len(texts))
        return super().embed_passages(texts)


COMMITTED: list[str] = []


def recording_runner(*, config, using):
    """An ``EMBEDDING_RUNNER`` that embeds nothing: it records the database of each commit."""
    COMMITTED.append(using)
