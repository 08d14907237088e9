"""Migration 0010 on data of the previous version: every row lands in the shared space, and the
one-active-session and one-live-topic rules become per (user, scope)."""

import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from ilab_memory import ILabMemory
from ilab_memory.models import Observation, ObservationVector, Session
from ilab_memory.services.search.index import repair_after_migrate

BEFORE = [("ilab_memory", "0009_pgvector")]
SCOPES = [("ilab_memory", "0010_scopes")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def previous_version_data(transactional_db):
    """Rows written by the previous version's models (no scope column yet)."""
    apps = migrate(BEFORE)
    OldSession = apps.get_model("ilab_memory", "Session")
    OldObservation = apps.get_model("ilab_memory", "Observation")
    OldVector = apps.get_model("ilab_memory", "ObservationVector")
    now = timezone.now()
    active = OldSession.objects.create(user_id="alice", status="active", started_at=now, last_activity_at=now)
    OldSession.objects.create(user_id="alice", status="completed", started_at=now - timedelta(days=2),
                              last_activity_at=now - timedelta(days=2), ended_at=now - timedelta(days=1),
                              summary="Old work.")
    topic = OldObservation.objects.create(
        id=uuid.uuid4(), user_id="alice", session_id=active.pk, type="preference", title="Tea",
        content="Green tea, no sugar.", topic_key="drinks", dedupe_hash="0" * 64, created_at=now, updated_at=now,
        last_seen_at=now,
    )
    OldVector.objects.create(observation_id=topic.pk, user_id="alice", queued_at=now)
    yield {"session": active.pk, "observation": topic.pk}
    latest()  # leave the database as the other tests expect it: every migration applied


def latest():
    """Every migration, then what ``migrate`` does after them (``post_migrate``): the live code
    reads the current schema, and on SQLite a table a migration rebuilt lost its search
    triggers, which the repair puts back with the index."""
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("ilab_memory"))
    repair_after_migrate()


def test_previous_rows_land_in_the_shared_space_and_keep_their_meaning(previous_version_data):
    migrate(SCOPES)
    assert set(Session.objects.values_list("scope", flat=True)) == {""}
    assert set(Observation.objects.values("scope").values_list("scope", flat=True)) == {""}
    assert set(ObservationVector.objects.values_list("scope", flat=True)) == {""}
    latest()

    mem = ILabMemory(embedder=None)
    start = mem.mem_session_start("alice")  # no scope: the session the previous version opened
    assert (start.is_new, uuid.UUID(start.session_id)) == (False, previous_version_data["session"])
    assert [m.title for m in start.memories] == ["Tea"] and start.sessions_context[0].summary == "Old work."
    revised = mem.mem_save("alice", "Tea", "Black tea now.", type="preference", topic_key="drinks")
    assert (revised.action, uuid.UUID(revised.observation.id)) == ("revised", previous_version_data["observation"])


def test_after_the_migration_each_scope_has_its_own_active_session_and_topics(previous_version_data):
    latest()
    mem = ILabMemory(embedder=None)
    support = mem.mem_session_start("alice", scope="support")
    assert support.is_new and uuid.UUID(support.session_id) != previous_version_data["session"]
    assert Session.objects.filter(user_id="alice").active().count() == 2
    saved = mem.mem_save("alice", "Tea", "Support's note.", topic_key="drinks", scope="support")
    assert saved.action == "created"  # the shared space's topic is another (user, scope)'s

    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        Session.objects.create(user_id="alice", scope="support", started_at=now, last_activity_at=now)
    Session.objects.create(user_id="alice", scope="coding", started_at=now, last_activity_at=now)
