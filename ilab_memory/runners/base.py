"""The contract of an embedding runner, the callable ``EMBEDDING_RUNNER`` names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..conf import Config


class Runner(Protocol):
    """Called with keywords when a write that queued vectors on database ``using`` commits (and
    when a process starts with rows waiting). It should return quickly, leaving the work to a
    thread or a queue, and never raise for the write's sake: the write has committed, and rows a
    runner fails to embed stay queued for the next runner call, a search or ``ilab_memory_embed``.
    ``services.embedding`` does the embedding itself (``embed_batch``, ``embed_waiting``)."""

    def __call__(self, *, config: Config, using: str) -> object: ...
