"""Deprecated: the thread runner moved to ``ilab_memory.runners.thread``.

``EMBEDDING_RUNNER = "ilab_memory.background.runner"`` keeps working for one release (system
check ``ilab_memory.W013``): name ``"ilab_memory.runners.thread.runner"``.
"""

from .runners.thread import BackgroundEmbedder, runner

__all__ = ["BackgroundEmbedder", "runner"]
