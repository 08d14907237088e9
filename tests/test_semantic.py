"""ilab_memory.services.search.semantic: a query's cosines to the user's vectors, or words only."""

import pytest

from ilab_memory import vectors
from ilab_memory.conf import get_config
from ilab_memory.scopes import EVERY_SCOPE
from ilab_memory.services import embedding
from ilab_memory.services.search.semantic import WORDS_ONLY, meaning
from tests.embedders import RecordingEmbedder


@pytest.fixture(autouse=True)
def recording(settings):
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}
    vectors.matrices.clear()


def test_the_meaning_holds_the_cosines_of_the_users_own_vectors(tmem):
    tea = tmem.mem_save("alice", "Green tea", "Green tea in the morning.").observation
    tmem.mem_save("bob", "Green tea", "Green tea in the morning.")
    embedding.embed_waiting()
    found = meaning("alice", EVERY_SCOPE, "green tea", n=10, also=(), config=get_config(), using="default")
    assert found.model_id == RecordingEmbedder.model_id and found.dimensions == RecordingEmbedder.dimensions
    assert [str(key) for key in found.cosines] == [tea.id]


def test_without_an_embedder_the_meaning_is_words_only(db, settings):
    settings.ILAB_MEMORY = {"EMBEDDER": None}
    assert meaning("alice", EVERY_SCOPE, "green tea", n=10, also=(), config=get_config(), using="default") is WORDS_ONLY


def test_a_failing_embedder_leaves_the_search_to_the_words(tmem, caplog):
    RecordingEmbedder.fail = True
    try:
        found = meaning("alice", EVERY_SCOPE, "green tea", n=10, also=(), config=get_config(), using="default")
    finally:
        RecordingEmbedder.fail = False
    assert found is WORDS_ONLY and "fell back to words only" in caplog.text
