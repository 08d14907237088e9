"""Migration 0012 on data of the previous version: every memory happened when it was saved (a
revision when it was written), and none expires."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from ilab_memory import ILabMemory
from ilab_memory.models import Observation, ObservationRevision
from tests.migrations.test_0010_scopes import latest, migrate

BEFORE = [("ilab_memory", "0011_embedder_calibration")]


@pytest.fixture
def previous_version_data(transactional_db):
    apps = migrate(BEFORE)
    OldSession = apps.get_model("ilab_memory", "Session")
    OldObservation = apps.get_model("ilab_memory", "Observation")
    OldRevision = apps.get_model("ilab_memory", "ObservationRevision")
    now = timezone.now()
    created, written = now - timedelta(days=40), now - timedelta(days=40, hours=3)
    session = OldSession.objects.create(user_id="alice", status="active", started_at=now, last_activity_at=now)
    old = OldObservation.objects.create(
        id=uuid.uuid4(), user_id="alice", session_id=session.pk, type="decision", title="Database",
        content="PostgreSQL.", dedupe_hash="0" * 64, created_at=created, updated_at=now, last_seen_at=now,
        revision_count=2,
    )
    OldRevision.objects.create(observation_id=old.pk, user_id="alice", revision=1, type="decision",
                               title="Database", content="SQLite.", written_at=written, replaced_at=now)
    yield {"observation": old.pk, "created": created, "written": written}
    latest()


def test_old_memories_happened_when_they_were_saved_and_never_expire(previous_version_data):
    latest()
    row = Observation.objects.get(pk=previous_version_data["observation"])
    assert row.happened_at == previous_version_data["created"] and row.expires_at is None
    revision = ObservationRevision.objects.get(observation=row)
    assert revision.happened_at == previous_version_data["written"]

    mem = ILabMemory(embedder=None)
    week = {"since": previous_version_data["created"] - timedelta(days=1),
            "until": previous_version_data["created"] + timedelta(days=1)}
    assert [m.title for m in mem.mem_list_observations("alice", **week)] == ["Database"]
    assert [m.title for m in mem.mem_search("alice", "database", **week)] == ["Database"]
