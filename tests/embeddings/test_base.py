"""ilab_memory.embeddings.base: the interface's duck-typed test and the checks every backend shares."""

import numpy as np
import pytest

from ilab_memory.embeddings.base import (
    EmbedderConfigError,
    EmbeddingError,
    check_texts,
    empty_matrix,
    is_embedder,
    normalize_rows,
    passage_vectors,
)
from tests.embedders import RecordingEmbedder

pytestmark = pytest.mark.engine_independent


def test_is_embedder_takes_an_instance_with_the_four_members_and_not_a_class():
    embedder = RecordingEmbedder()
    assert is_embedder(embedder)
    assert not is_embedder(RecordingEmbedder)
    assert not is_embedder(object())


def test_a_config_error_is_an_embedding_error():
    assert issubclass(EmbedderConfigError, EmbeddingError)


def test_check_texts_refuses_a_bare_string_and_non_str_items():
    assert check_texts(("a", "b")) == ["a", "b"]
    with pytest.raises(TypeError, match="single string"):
        check_texts("one string")
    with pytest.raises(TypeError, match="#1 is bytes"):
        check_texts(["a", b"b"])


def test_normalize_rows_gives_unit_float32_rows():
    rows = normalize_rows([[3, 4], [0, 2]], 2)
    assert rows.dtype == np.float32 and rows.flags.c_contiguous
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)


@pytest.mark.parametrize(
    "vectors, needle",
    [([[1, 0, 0]], "2-dimensional"), ([[0, 0]], "zero vector"), ([[float("nan"), 1]], "NaN"), ([["x", 1]], "numeric")],
)
def test_normalize_rows_names_the_source_of_a_bad_vector(vectors, needle):
    with pytest.raises(EmbeddingError, match=needle) as info:
        normalize_rows(vectors, 2, source="stub")
    assert str(info.value).startswith("stub:")


def test_empty_matrix_has_no_rows_and_the_dimensions():
    empty = empty_matrix(5)
    assert empty.shape == (0, 5) and empty.dtype == np.float32


def test_passage_vectors_without_embed_pieces_gives_none_for_each_text():
    embedder = RecordingEmbedder()
    vectors, pieces = passage_vectors(embedder, ["one", "two"])
    assert vectors.shape[0] == 2 and pieces == [None, None]
