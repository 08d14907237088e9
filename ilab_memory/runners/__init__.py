"""Who embeds off the write path: the runners ``EMBEDDING_RUNNER`` may name, side by side.

``base.Runner`` is the contract; ``thread.runner`` (a thread in the process that wrote) and
``celery.runner`` (Celery workers) are the two shipped. The services import none of them: the
setting's dotted path is read with ``import_string`` when a write commits.
"""
