"""The vector lookup (ilab_memory/vectors.py): exact, scoped by user, never stale."""

import numpy as np
import pytest

from ilab_memory import vectors
from ilab_memory.models import ObservationVector, VectorStamp
from ilab_memory.scopes import EVERY_SCOPE, Reach
from ilab_memory.services import embedding
from tests.embedders import RecordingEmbedder

MODEL = RecordingEmbedder.model_id


@pytest.fixture(autouse=True)
def recording(settings):
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}
    vectors.matrices.clear()


def nearest(user_id, text, n=10, also=()):
    query = RecordingEmbedder().embed_query(text)
    return vectors.similarities(user_id=user_id, model_id=MODEL, dimensions=RecordingEmbedder.dimensions,
                                query=query, n=n, also=also, using="default", max_bytes=1 << 30)


def test_nearest_are_the_users_own_with_exact_cosines(tmem):
    tea = tmem.mem_save("alice", "Green tea", "Green tea in the morning.").observation
    tmem.mem_save("alice", "Deploy", "Blue-green deploys.")
    tmem.mem_save("bob", "Green tea", "Green tea in the morning.")
    embedding.embed_waiting()
    found = nearest("alice", "green tea")
    assert set(found) == set(ObservationVector.objects.filter(user_id="alice").values_list("observation_id", flat=True))
    assert len(found) == 2 and str(max(found, key=found.get)) == tea.id
    stored = ObservationVector.objects.get(observation_id=tea.id)
    expected = float(np.frombuffer(bytes(stored.vector), "<f4") @ RecordingEmbedder().embed_query("green tea"))
    assert found[stored.observation_id] == pytest.approx(expected, abs=1e-6)


def test_a_committed_change_by_anyone_is_seen_by_the_next_lookup(tmem):
    tmem.mem_save("alice", "Green tea", "Green tea.")
    embedding.embed_waiting()
    assert len(nearest("alice", "tea")) == 1
    other = tmem.mem_save("alice", "Black tea", "Black tea.").observation
    embedding.embed_waiting()
    assert len(nearest("alice", "tea")) == 2
    ObservationVector.objects.filter(observation_id=other.id).delete()  # as another process would
    assert len(nearest("alice", "tea")) == 1


def test_a_requeued_row_is_not_found_by_its_old_vector(tmem):
    """A revise queues the row again without a new stamp: the lookup finds it stale and reloads."""
    tmem.mem_save("alice", "Tea", "Green tea.", topic_key="drink")
    tmem.mem_save("alice", "Deploy", "Blue-green deploys.")
    embedding.embed_waiting()
    stamp = VectorStamp.objects.get(user_id="alice").stamp
    assert len(nearest("alice", "tea")) == 2
    tmem.mem_save("alice", "Coffee", "Black coffee.", topic_key="drink")  # revised: queued again
    assert VectorStamp.objects.get(user_id="alice").stamp == stamp
    assert len(nearest("alice", "tea")) == 1
    embedding.embed_waiting()
    assert VectorStamp.objects.get(user_id="alice").stamp != stamp
    assert len(nearest("alice", "tea")) == 2


def test_every_store_writes_a_new_stamp_for_its_users_only(tmem):
    tmem.mem_save("alice", "Tea", "Green tea.")
    tmem.mem_save("bob", "Tea", "Green tea.")
    embedding.embed_waiting()
    stamps = dict(VectorStamp.objects.values_list("user_id", "stamp"))
    assert set(stamps) == {"alice", "bob"}
    tmem.mem_save("alice", "Coffee", "Black coffee.")
    embedding.embed_waiting()
    assert VectorStamp.objects.get(user_id="alice").stamp != stamps["alice"]
    assert VectorStamp.objects.get(user_id="bob").stamp == stamps["bob"]


def test_also_adds_the_cosines_of_candidates_outside_the_nearest(tmem):
    saved = [tmem.mem_save("alice", f"Note {k}", f"Body number {k}.").observation for k in range(5)]
    embedding.embed_waiting()
    ids = [ObservationVector.objects.get(observation_id=o.id).observation_id for o in saved]
    found = nearest("alice", "note", n=1, also=ids[:3])
    assert len(found) >= 3 and set(ids[:3]) <= set(found)


def test_the_cache_is_bounded_in_bytes_least_recent_out_first(tmem):
    if vectors.pgvector_ready("default"):
        pytest.skip("pgvector reads the database on every search: there is no cache")
    for user in ("alice", "bob", "carol"):
        tmem.mem_save(user, "Green tea", "Green tea.")
    embedding.embed_waiting()
    per_user = RecordingEmbedder.dimensions * 4
    for user in ("alice", "bob", "carol"):
        vectors.similarities(user_id=user, model_id=MODEL, dimensions=RecordingEmbedder.dimensions,
                             query=RecordingEmbedder().embed_query("tea"), n=5, using="default", max_bytes=2 * per_user)
    assert [key[1] for key in vectors.matrices._entries] == ["bob", "carol"]


def test_the_lookup_keeps_to_the_scopes_it_is_given(tmem):
    shared = tmem.mem_save("alice", "Green tea", "Green tea in the morning.").observation
    coding = tmem.mem_save("alice", "Green tea", "Green tea while coding.", scope="coding").observation
    support = tmem.mem_save("alice", "Green tea", "Green tea for support.", scope="support").observation
    embedding.embed_waiting()
    query = RecordingEmbedder().embed_query("green tea")

    def found(scopes, also=()):
        reach = EVERY_SCOPE if scopes is None else Reach(scopes=scopes, own=None)
        return {str(pk) for pk in vectors.similarities(
            user_id="alice", reach=reach, model_id=MODEL, dimensions=RecordingEmbedder.dimensions, query=query,
            n=10, also=also, using="default", max_bytes=1 << 30)}

    assert found(("coding", "")) == {shared.id, coding.id}
    assert found(None) == {shared.id, coding.id, support.id}
    # A candidate found by words in another scope gets no cosine either.
    assert found(("support",), also=[ObservationVector.objects.get(observation_id=coding.id).observation_id]) == {
        support.id}
