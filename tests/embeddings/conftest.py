"""The in-process e5 model, loaded once per module, and a cleared embedder cache."""

import pytest

from ilab_memory.embeddings import E5Embedder, clear_embedder_cache


@pytest.fixture(scope="module")
def e5():
    return E5Embedder()


@pytest.fixture
def fresh_cache():
    clear_embedder_cache()
    yield
    clear_embedder_cache()
