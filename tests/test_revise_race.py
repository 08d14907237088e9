"""PostgreSQL: a revise whose topic row is soft-deleted while it waits loses the race, and the retry creates."""

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from ilab_memory.models import Observation, ObservationRevision

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
    pytest.mark.django_db(transaction=True),
]


def test_a_topic_deleted_during_a_revise_is_not_revised_and_the_save_creates(tmem):
    import psycopg

    first = tmem.mem_save("alice", "Plan", "v1", topic_key="plan").observation
    settings = connection.settings_dict
    deleter = psycopg.connect(dbname=settings["NAME"], host=settings["HOST"], port=settings["PORT"] or 5432,
                              user=settings["USER"])
    # A concurrent soft delete holds the row, not committed yet (it never takes the session lock).
    deleter.execute("UPDATE ilab_memory_observation SET deleted_at = %s WHERE id = %s", (timezone.now(), first.id))
    result = {}

    def save():
        try:
            result["saved"] = tmem.mem_save("alice", "Plan", "v2", topic_key="plan")
        finally:
            connection.close()

    saver = threading.Thread(target=save)
    saver.start()
    time.sleep(0.3)  # the revise now waits for the deleter's row lock
    deleter.commit()
    deleter.close()
    saver.join(timeout=30)
    saved = result["saved"]
    assert saved.action == "created" and saved.observation.id != first.id
    assert Observation.objects.get(pk=first.id).revision_count == 1  # the deleted row was never revised
    assert not ObservationRevision.objects.filter(observation_id=first.id).exists()  # the lost try's copy rolled back
