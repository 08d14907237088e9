"""ilab_memory.services.search.calibration: the background bank, measured once per model and kept
in the database, and the calibration shipped for the default model."""

import pytest

from ilab_memory.models import EmbedderCalibration
from ilab_memory.services.search import calibration
from tests.test_search_states import MEMORIES


@pytest.fixture
def alice(mem, clock):
    return {title: mem.mem_save("alice", title, content, type=type_).observation for title, content, type_ in MEMORIES}


def test_the_background_bank_is_embedded_once_per_model_and_survives_a_restart(mem, alice, settings):
    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "EMBEDDING_RUNNER": None}
    from tests.embedders import RecordingEmbedder

    questions = calibration.bank()
    calibration.forget_cache()
    RecordingEmbedder.seen.clear()
    mem.mem_search("alice", "cats and the office")
    assert set(questions) <= set(RecordingEmbedder.seen)
    stored = EmbedderCalibration.objects.get(model_id=RecordingEmbedder.model_id)
    assert stored.bank_digest == calibration.bank_digest() and stored.questions == len(questions)

    calibration.forget_cache()  # a new process: only the database remembers
    RecordingEmbedder.seen.clear()
    mem.mem_search("alice", "cats and the office")
    assert not set(questions) & set(RecordingEmbedder.seen)
    assert EmbedderCalibration.objects.filter(model_id=RecordingEmbedder.model_id).count() == 1


def test_the_default_models_shipped_calibration_is_of_the_current_bank():
    from ilab_memory.embeddings import configured_embedder

    embedder = configured_embedder("default")
    shipped = calibration._shipped(embedder.model_id, calibration.bank_digest())
    assert shipped is not None, "background.txt changed: run calibration.write_shipped for the default model"
    questions = calibration.bank()
    assert shipped.queries.shape == (len(questions), embedder.dimensions)
    assert shipped.questions == len(questions) and 0 < shipped.unrelated_deviation < shipped.unrelated_cosine < 1


def test_whoever_embeds_measures_the_calibration_once_its_queue_is_drained(mem, settings):
    from ilab_memory.conf import get_config
    from ilab_memory.services.embedding import embed_waiting
    from tests.embedders import RecordingEmbedder

    settings.ILAB_MEMORY = {"EMBEDDER": "tests.embedders.RecordingEmbedder", "SEARCH_EMBED_BUDGET": 0,
                            "EMBEDDING_RUNNER": "tests.embedders.recording_runner"}
    calibration.forget_cache()
    mem.mem_save("alice", "Tomato plants", "Water the balcony tomatoes every second day.")
    assert not EmbedderCalibration.objects.filter(model_id=RecordingEmbedder.model_id).exists()
    # A search where a runner embeds does not measure it: until then every result found by
    # meaning alone is weak.
    assert all(r.score.breakdown["weak"] for r in mem.mem_search("alice", "garden on the terrace"))
    assert not EmbedderCalibration.objects.filter(model_id=RecordingEmbedder.model_id).exists()
    assert embed_waiting(config=get_config()) == 1
    assert EmbedderCalibration.objects.filter(model_id=RecordingEmbedder.model_id).count() == 1
