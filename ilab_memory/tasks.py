"""Celery's entry to the library: ``autodiscover_tasks`` imports each app's ``tasks`` module, and
this one registers the embedding task of ``runners.celery`` (named ``ilab_memory.embed_waiting``).

``EMBEDDING_RUNNER = "ilab_memory.tasks.runner"`` is the old path of the Celery runner, kept for
one release (system check ``ilab_memory.W013``): name ``"ilab_memory.runners.celery.runner"``.
"""

from .runners.celery import embed_on_worker_start, embed_waiting_task, runner

__all__ = ["embed_on_worker_start", "embed_waiting_task", "runner"]
