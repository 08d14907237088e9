"""The demo site's Celery app: ``celery -A project.celery worker`` runs the embedding tasks.

Settings come from the ``CELERY_*`` names in project/settings.py (broker: Redis by default).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
