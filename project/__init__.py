"""The demo site that mounts ilab_memory (and the ``python3 -m project`` bootstrap)."""

try:
    # The site's Celery app, so tasks enqueued by the web process use its broker. Absent while
    # ``python3 -m project`` runs on the bare interpreter to create .venv.
    from .celery import app as celery_app  # noqa: F401
except ImportError:
    pass
