"""Cutting long passages into pieces (embeddings/pieces.py), with a stand-in token counter:
one token per word (a run of CJK characters counts one per character) plus a fixed cost of 3,
like e5's ``<s> passage: … </s>``."""

import re

import numpy as np
import pytest

from ilab_memory.embeddings.pieces import mean_of_pieces, split_passage

pytestmark = pytest.mark.engine_independent

OVERHEAD = 3


def count(text: str) -> int:
    return OVERHEAD + len(re.findall(r"[\u3000-\u9fff]|[^\s\u3000-\u9fff]+", text))


def sentences(n: int, words: int = 9, start: int = 0) -> str:
    return " ".join(" ".join(["word"] * (words - 1)) + f" s{i}." for i in range(start, start + n))


def split(text: str, budget: int, **options) -> list[str]:
    """The pieces' texts, after checking that each piece carries its own count of tokens."""
    pieces = split_passage(text, count=count, budget=budget, **options)
    assert all(tokens == count(piece) - OVERHEAD for piece, tokens in pieces)
    return [piece for piece, _ in pieces]


def check(pieces: list[str], text: str, budget: int) -> None:
    assert "".join(pieces) == text
    assert all(count(piece) <= budget for piece in pieces), [count(piece) for piece in pieces]


def test_a_text_that_fits_is_one_piece():
    for text in ["", "one", sentences(5), "  \n\n  "]:
        assert split(text, 48) == [text]


def test_a_text_up_to_whole_up_to_stays_whole_and_longer_ones_use_the_smaller_budget():
    text = sentences(10)  # 90 words
    assert split(text, 32, whole_up_to=93) == [text]
    pieces = split(text, 32, whole_up_to=92)
    check(pieces, text, 32)
    assert len(pieces) == 4


def test_pieces_end_at_sentences_and_have_about_the_same_size():
    text = sentences(23)  # 207 words, 9 per sentence; pieces of at most 50 words
    pieces = split(text, 53)
    check(pieces, text, 53)
    assert len(pieces) == 5
    assert all(piece.rstrip().endswith(".") for piece in pieces)
    sizes = [count(piece) - OVERHEAD for piece in pieces]
    assert max(sizes) - min(sizes) <= 9, sizes  # no short last piece


def test_lines_are_preferred_to_sentences():
    lines = [sentences(2, start=2 * i) for i in range(12)]  # 18 words a line
    text = "\n".join(lines)
    pieces = split(text, 3 + 40)
    check(pieces, text, 43)
    assert all(piece.endswith("\n") for piece in pieces[:-1])


def test_a_sentence_longer_than_a_piece_is_cut_between_words():
    text = " ".join(f"w{i}" for i in range(100)) + "."
    pieces = split(text, 23)
    check(pieces, text, 23)
    assert len(pieces) == 5
    assert all(piece.endswith(" ") for piece in pieces[:-1])


def test_a_word_longer_than_a_piece_is_cut_inside():
    def count_characters(text: str) -> int:
        return OVERHEAD + len(text)

    blob = "x" * 250
    pieces = split_passage(blob, count=count_characters, budget=103)
    assert [(len(piece), tokens) for piece, tokens in pieces] == [(100, 100), (100, 100), (50, 50)]
    assert "".join(piece for piece, _ in pieces) == blob


def test_cjk_sentences_without_spaces_are_cut_at_their_stops():
    text = "今日は晴れです。" * 40  # 8 "tokens" a sentence
    pieces = split(text, 3 + 50)
    check(pieces, text, 53)
    assert len(pieces) == 7 and all(piece.endswith("。") for piece in pieces)


def test_the_number_of_pieces_grows_linearly_with_the_length():
    counts = [len(split(sentences(50 * k), 3 + 100)) for k in (1, 2, 4, 8)]
    # The fewest that whole sentences allow: 11 sentences of 9 words fill a piece of 100.
    assert counts == [5, 10, 19, 37]


def test_a_budget_without_room_for_text_is_refused():
    with pytest.raises(ValueError, match="no room"):
        split_passage(sentences(3), count=count, budget=OVERHEAD)


def test_mean_of_pieces_weighs_each_texts_own_rows_by_their_tokens():
    vectors = np.array([[1, 0], [0, 1], [1, 1], [3, 3], [5, 1]], dtype=np.float32)
    means = mean_of_pieces(vectors, [[7], [1, 1, 2], [0]])
    np.testing.assert_allclose(means, [[1, 0], [7 / 4, 8 / 4], [5, 1]])
