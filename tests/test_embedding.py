"""Vectors in step with writes (services/embedding.py), embedded off the write path."""

from datetime import timedelta

import pytest
from django.utils import timezone

from ilab_memory.conf import get_config
from ilab_memory.models import Observation, ObservationVector
from ilab_memory.services import embedding
from tests.embedders import RecordingEmbedder
from tests.factories import ObservationFactory, SessionFactory

EMBEDDER = "tests.embedders.RecordingEmbedder"
SECRET = "hunter2-secret"


@pytest.fixture(autouse=True)
def recording(settings):
    settings.ILAB_MEMORY = {"EMBEDDER": EMBEDDER}
    RecordingEmbedder.seen = []
    RecordingEmbedder.fail = False
    yield RecordingEmbedder


def vector_of(observation_id) -> ObservationVector:
    return ObservationVector.objects.get(observation_id=observation_id)


def test_a_save_queues_a_vector_that_a_search_then_embeds(mem, clock):
    saved = mem.mem_save("alice", "Prefers tea", "Green tea in the morning.").observation
    queued = vector_of(saved.id)
    assert queued.model_id is None and queued.vector is None and queued.user_id == "alice"
    assert mem.mem_stats("alice").waiting_for_vector == 1
    assert mem.mem_search("alice", "tea")[0].id == saved.id
    stored = vector_of(saved.id)
    assert stored.model_id == RecordingEmbedder.model_id and len(stored.vector) == 4 * RecordingEmbedder.dimensions
    assert mem.mem_stats("alice").waiting_for_vector == 0
    assert RecordingEmbedder.seen[:2] == ["manual: Prefers tea\nGreen tea in the morning.", "tea"]


def test_a_duplicate_keeps_its_vector(mem, clock):
    first = mem.mem_save("alice", "Prefers tea", "Green tea.").observation
    embedding.embed_waiting(user_id="alice")
    before = vector_of(first.id)
    assert mem.mem_save("alice", "Prefers tea", "Green tea.").action == "duplicate"
    after = vector_of(first.id)
    assert (after.generation, after.model_id, bytes(after.vector)) == (before.generation, before.model_id,
                                                                       bytes(before.vector))


@pytest.mark.parametrize("write", ["revise", "update"])
def test_a_write_that_changes_the_text_queues_it_again(mem, clock, write):
    saved = mem.mem_save("alice", "Deploy", "Blue-green.", topic_key="deploy").observation
    embedding.embed_waiting(user_id="alice")
    if write == "revise":
        mem.mem_save("alice", "Deploy", "Canary releases now.", topic_key="deploy")
    else:
        mem.mem_update("alice", saved.id, content="Canary releases now.")
    queued = vector_of(saved.id)
    assert queued.model_id is None and queued.vector is None and queued.generation == 2
    embedding.embed_waiting(user_id="alice")
    assert RecordingEmbedder.seen[-1] == "manual: Deploy\nCanary releases now."


def test_soft_delete_drops_the_vector_and_restore_queues_it_again(mem, clock):
    from ilab_memory.services.observations import observation_restore

    saved = mem.mem_save("alice", "Prefers tea", "Green tea.").observation
    embedding.embed_waiting(user_id="alice")
    mem.mem_delete("alice", saved.id)
    assert not ObservationVector.objects.exists()
    assert mem.mem_search("alice", "green tea") == []
    observation_restore(user_id="alice", observation_id=saved.id)
    assert vector_of(saved.id).model_id is None


def test_hard_delete_and_forget_leave_no_vector(mem, clock):
    kept = mem.mem_save("alice", "One", "First.").observation
    gone = mem.mem_save("alice", "Two", "Second.").observation
    mem.mem_save("bob", "Bob's", "Other user.")
    embedding.embed_waiting()
    mem.mem_delete("alice", gone.id, hard=True)
    assert list(ObservationVector.objects.filter(user_id="alice").values_list("observation_id", flat=True)) == [
        Observation.objects.get(pk=kept.id).pk
    ]
    counts = mem.mem_forget_user("alice")
    assert counts["vectors"] == 1
    assert not ObservationVector.objects.filter(user_id="alice").exists()
    assert ObservationVector.objects.filter(user_id="bob").count() == 1


def test_import_queues_the_live_observations(mem, clock):
    mem.mem_save("alice", "Prefers tea", "Green tea.")
    document = mem.mem_export("alice")
    mem.mem_forget_user("alice")
    mem.mem_import("carol", {**document, "user_id": "carol"})
    assert ObservationVector.objects.filter(user_id="carol", model_id__isnull=True).count() == 1


def test_private_text_never_reaches_the_embedder(mem, clock):
    mem.mem_save("alice", f"Key <private>{SECRET}</private>", f"Use <private>{SECRET}</private> to deploy.",
                 topic_key="key")
    mem.mem_save("alice", "Key", f"Rotated: <private>{SECRET}</private>", topic_key="key")
    mem.mem_search("alice", f"deploy key <private>{SECRET}</private>")
    assert RecordingEmbedder.seen and not any(SECRET in text for text in RecordingEmbedder.seen)
    assert not any(SECRET.encode() in bytes(v.vector) for v in ObservationVector.objects.all())


def test_a_slow_worker_never_stores_the_vector_of_an_older_text(mem, clock):
    saved = mem.mem_save("alice", "Deploy", "Blue-green.", topic_key="deploy").observation
    claimed = embedding._claim(RecordingEmbedder.model_id, user_id="alice", size=10, newest_first=False,
                               lease_seconds=300, using="default")
    mem.mem_save("alice", "Deploy", "Canary.", topic_key="deploy")  # meanwhile the text changes
    vectors = RecordingEmbedder().embed_passages(["Deploy\nBlue-green."])
    assert embedding._store(claimed, vectors, [None] * len(claimed), embedder=RecordingEmbedder(), using="default") == 0
    assert vector_of(saved.id).model_id is None  # still queued, for the new text


def test_a_claimed_batch_is_skipped_by_other_workers_until_its_lease_lapses(mem, clock, settings):
    mem.mem_save("alice", "One", "First.")
    assert embedding._claim(RecordingEmbedder.model_id, user_id=None, size=10, newest_first=False, lease_seconds=300,
                            using="default")
    assert embedding._claim(RecordingEmbedder.model_id, user_id=None, size=10, newest_first=False, lease_seconds=300,
                            using="default") == []
    assert embedding.waiting_exists(config=embedding.get_config(), using="default", held=True)
    from datetime import timedelta

    clock.shift(timedelta(seconds=settings.ILAB_MEMORY.get("EMBED_LEASE_SECONDS", 300) + 1))
    assert len(embedding._claim(RecordingEmbedder.model_id, user_id=None, size=10, newest_first=False,
                                lease_seconds=300, using="default")) == 1


def test_an_embedder_failure_leaves_search_to_the_words_and_loses_nothing(mem, clock, caplog):
    saved = mem.mem_save("alice", "Prefers tea", "Green tea.").observation
    RecordingEmbedder.fail = True
    assert [r.id for r in mem.mem_search("alice", "tea")] == [saved.id]
    assert "model" not in mem.mem_search("alice", "tea")[0].score.breakdown
    assert "fell back to words only" in caplog.text
    assert vector_of(saved.id).model_id is None and vector_of(saved.id).claimed_until is None
    RecordingEmbedder.fail = False
    assert mem.mem_search("alice", "tea")[0].score.breakdown["model"] == RecordingEmbedder.model_id


def test_a_new_model_ignores_the_old_vectors_until_it_has_embedded_them(mem, clock, settings):
    saved = mem.mem_save("alice", "Prefers tea", "Green tea.").observation
    embedding.embed_waiting()
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.OtherModelEmbedder", "SEARCH_EMBED_BUDGET": 0}
    assert mem.mem_stats("alice").waiting_for_vector == 1
    results = mem.mem_search("alice", "tea")  # a budget of 0: the search does not embed
    assert results[0].score.breakdown["cosine"] is None
    assert embedding.embed_waiting() == 1
    assert vector_of(saved.id).model_id == "tests:another-model"
    assert mem.mem_search("alice", "tea")[0].score.breakdown["cosine"] > 0.5


def test_without_an_embedder_nothing_is_queued_and_search_is_lexical(mem, clock, settings):
    settings.ILAB_MEMORY = {"EMBEDDER": None}
    saved = mem.mem_save("alice", "Prefers tea", "Green tea.").observation
    assert not ObservationVector.objects.exists()
    result = mem.mem_search("alice", "tea")[0]
    assert result.id == saved.id and "cosine" not in result.score.breakdown


def test_queue_missing_backfills_observations_written_without_a_queue(mem, clock, settings):
    settings.ILAB_MEMORY = {"EMBEDDER": None}
    mem.mem_save("alice", "One", "First.")
    settings.ILAB_MEMORY = {"EMBEDDER": EMBEDDER}
    assert embedding.queue_missing() == 1 and embedding.queue_missing() == 0
    assert embedding.embed_waiting() == 1


# -- who embeds: the runner chosen by a setting ------------------------------------------------

def test_a_runner_named_by_the_setting_runs_when_a_write_commits(tmem, settings):
    from tests import embedders

    settings.ILAB_MEMORY = {**settings.ILAB_MEMORY, "EMBEDDING_RUNNER": "tests.embedders.recording_runner"}
    embedders.COMMITTED.clear()
    tmem.mem_save("alice", "Runner", "Called on commit.")
    assert embedders.COMMITTED == ["default"]


def test_the_shipped_runners_are_named_by_path_and_no_service_imports_one():
    import pathlib

    from ilab_memory.runners import celery, thread

    assert embedding.runner_for(get_config({"EMBEDDING_RUNNER": "ilab_memory.runners.thread.runner"})) is thread.runner
    assert embedding.runner_for(get_config({"EMBEDDING_RUNNER": "ilab_memory.runners.celery.runner"})) is celery.runner
    assert embedding.runner_for(get_config({"EMBEDDING_RUNNER": None})) is None
    services = pathlib.Path(embedding.__file__).parent
    for module in services.rglob("*.py"):
        text = module.read_text()
        assert not any(f"{word} runners" in text or "from ..runners" in text for word in ("import", "from")), module


def test_queue_puts_each_observation_in_the_queue_with_nothing_else(db):
    now = timezone.now()
    session = SessionFactory(user_id="alice")
    observations = [ObservationFactory(session=session) for _ in range(3)]
    embedding.queue(observations, now=now, config=get_config(), using="default")
    embedding.queue([], now=now, config=get_config(), using="default")
    rows = ObservationVector.objects.order_by("observation_id")
    assert [(r.observation_id, r.user_id) for r in rows] == sorted((o.pk, "alice") for o in observations)
    assert {(r.model_id, r.vector, r.generation, r.queued_at, r.claimed_until) for r in rows} == {
        (None, None, 1, now, None)
    }


def test_requeue_clears_the_vector_as_a_new_generation(db):
    now = timezone.now()
    observation = ObservationFactory(session=SessionFactory(user_id="alice"))
    ObservationVector.objects.create(
        observation=observation, user_id="alice", model_id="m", dimensions=2, vector=b"\0" * 8, generation=3,
        queued_at=now - timedelta(hours=1), claimed_until=now, embedded_at=now,
    )
    embedding.requeue(observation, now=now, config=get_config(), using="default")
    row = ObservationVector.objects.get()
    assert (row.model_id, row.dimensions, row.vector, row.generation) == (None, None, None, 4)
    assert (row.queued_at, row.claimed_until, row.embedded_at) == (now, None, None)
    other = ObservationFactory(session=observation.session)
    embedding.requeue(other, now=now, config=get_config(), using="default")  # none yet: queued
    assert vector_of(other.pk).generation == 1 and vector_of(other.pk).queued_at == now


def test_drop_removes_only_those_observations_rows(db):
    now = timezone.now()
    session = SessionFactory(user_id="alice")
    kept, dropped = ObservationFactory(session=session), ObservationFactory(session=session)
    embedding.queue([kept, dropped], now=now, config=get_config(), using="default")
    assert embedding.drop(user_id="alice", observation_ids=[dropped.pk], using="default") == 1
    assert embedding.drop(user_id="alice", observation_ids=[dropped.pk], using="default") == 0
    assert list(ObservationVector.objects.values_list("observation_id", flat=True)) == [kept.pk]
