"""``health/``: no authentication, no user data, 200 or 503 naming the failing part, a fixed
number of queries whatever the queue holds."""

import os
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from ilab_memory.models import ObservationVector
from tests.api.conftest import API
from tests.factories import ObservationFactory, SessionFactory
from tests.gunicorn_site import free_port, gunicorn_site

TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")


def health():
    return APIClient().get(API + "health/")


def queue(n: int, *, waited: timedelta, user_id: str = "alice") -> list[ObservationVector]:
    session = SessionFactory(user_id=user_id)
    rows = []
    for observation in ObservationFactory.create_batch(n, session=session, user_id=user_id):
        rows.append(ObservationVector.objects.update_or_create(
            observation=observation,
            defaults={"user_id": user_id, "model_id": None, "queued_at": timezone.now() - waited},
        )[0])
    return rows


def test_health_answers_200_without_credentials(db):
    response = health()
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["failing"] == []
    assert set(body["parts"]) == {"database", "migrations", "backlog", "runner"}
    assert body["parts"]["backlog"]["size"] == 0 and body["parts"]["backlog"]["oldest_seconds"] is None
    assert response["Cache-Control"] == "no-store"


def test_health_carries_no_user_data(db):
    queue(2, waited=timedelta(hours=1), user_id="secret-user-id")
    text = health().content.decode()
    assert "secret-user-id" not in text and "Body" not in text


def test_old_backlog_answers_503_naming_backlog(db):
    queue(3, waited=timedelta(minutes=11))
    response = health()
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["backlog"] and body["status"] == "failing"
    assert body["parts"]["backlog"]["size"] == 3
    assert body["parts"]["backlog"]["oldest_seconds"] >= 660


def test_young_backlog_is_healthy(db):
    queue(2, waited=timedelta(seconds=30))
    assert health().status_code == 200


@override_settings(ILAB_MEMORY={"EMBEDDING_RUNNER": "ilab_memory.tasks.runner"})
def test_memories_waiting_with_no_runner_at_work_fail_the_runner(db):
    queue(1, waited=timedelta(minutes=5))
    body = health().json()
    assert body["failing"] == ["runner"]


@override_settings(ILAB_MEMORY={"EMBEDDING_RUNNER": "ilab_memory.tasks.runner"})
def test_a_runner_holding_a_batch_is_seen(db):
    rows = queue(2, waited=timedelta(minutes=5))
    ObservationVector.objects.filter(pk=rows[0].pk).update(claimed_until=timezone.now() + timedelta(minutes=4))
    assert health().status_code == 200


@override_settings(ILAB_MEMORY={"EMBEDDING_RUNNER": "ilab_memory.tasks.runner"})
def test_a_runner_that_stored_a_vector_lately_is_seen(db):
    queue(1, waited=timedelta(minutes=5))
    done = queue(1, waited=timedelta(minutes=5), user_id="bob")[0]
    ObservationVector.objects.filter(pk=done.pk).update(model_id="m",
                                                        embedded_at=timezone.now() - timedelta(seconds=10))
    assert health().status_code == 200


def test_without_a_runner_waiting_memories_are_only_the_backlog_part(db):
    # The project's settings under pytest have no runner: the ilab_memory_embed command's cron.
    queue(1, waited=timedelta(minutes=5))
    body = health().json()
    assert body["status"] == "ok" and body["parts"]["runner"] == {"ok": True, "configured": False}


def test_an_unapplied_migration_answers_503_naming_migrations(db):
    MigrationRecorder.Migration.objects.filter(app="ilab_memory", name="0010_scopes").delete()
    response = health()
    assert response.status_code == 503
    assert response.json()["failing"] == ["migrations"]
    assert response.json()["parts"]["migrations"]["unapplied"] == 1


@pytest.mark.parametrize("waiting", [0, 40])
def test_health_query_count_is_fixed(db, waiting):
    queue(waiting, waited=timedelta(seconds=10))
    health()  # the migration loader's imports happen once per process
    with CaptureQueriesContext(connection) as ctx:
        assert health().status_code == 200
    statements = [q for q in ctx.captured_queries if not q["sql"].upper().startswith(TRANSACTION_CONTROL)]
    # SELECT 1, whether the migrations table exists, the applied migrations, the
    # backlog's capped count, and its oldest row when there is one
    expected = 4 + (1 if waiting else 0)
    assert len(statements) == expected, [q["sql"] for q in statements]


@pytest.mark.engine_independent
def test_an_unreachable_database_answers_503_naming_database():
    """The demo site in a real process, its database a PostgreSQL port where nothing listens."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "DJANGO_DEBUG": "0",
           "DATABASE_URL": f"postgres://nobody@127.0.0.1:{free_port()}/nothing"}
    with gunicorn_site(env, timeout=30) as root:
        try:
            urllib.request.urlopen(root + "/api/memory/health/", timeout=5)
            raise AssertionError("health answered 200 without a database")
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode()
    assert status == 503
    assert '"failing":["database"]' in body and "nobody" not in body
