"""Cutting a passage longer than a model's window into pieces that each fit it.

A transformer encoder sees at most its window (512 tokens for e5); a longer
text is embedded as several pieces whose vectors are then combined (see
:class:`~ilab_memory.embeddings.e5.E5Embedder`). Pieces end at a line break
where one is near, else at the end of a sentence, else between words; only a
"word" longer than a whole piece (a URL, a base64 blob, text without spaces)
is cut inside. The pieces of one text are about the same size, so that none
is a short tail, and together they are exactly the text: nothing is dropped
or repeated. A text's vector is then the mean of its pieces' vectors weighted
by their tokens, like e5's own mean over the tokens of one pass.

No model import here: the token counter is passed in, so the rules are the
same for any backend and testable with a stand-in counter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy

# Each level cuts a unit that is still too long into smaller ones; every unit
# keeps the whitespace that follows it, so joining the units gives the text back.
_LINES = re.compile(r"[^\n]*\n+\s*|[^\n]+")
_SENTENCES = re.compile(r".+?(?:[.!?;…]+[\"'”’»)\]]*(?:\s+|$)|[。！？；]+[”’」』）]*\s*|$)", re.DOTALL)
_WORDS = re.compile(r"\s*\S+\s*|\s+")
_LEVELS = (_LINES, _SENTENCES, _WORDS)


class Piece(NamedTuple):
    """A piece of a passage, and its tokens of text (the model's fixed cost left out)."""

    text: str
    tokens: int


def split_passage(
    text: str, *, count: Callable[[str], int], budget: int, whole_up_to: int | None = None
) -> list[Piece]:
    """``text`` as consecutive pieces, each with ``count(piece.text) <= budget``.

    ``count`` gives the tokens the model is fed for a text (its fixed cost,
    special tokens and any prefix, included; ``count("")`` is that cost). A
    text of at most ``whole_up_to`` tokens (default ``budget``) is not cut: one
    piece. The texts of the pieces joined are ``text``. Raises ValueError if
    ``budget`` leaves no room for text after the fixed cost.
    """
    whole_up_to = budget if whole_up_to is None else whole_up_to
    overhead = count("")
    room = budget - overhead
    if room < 1:
        raise ValueError(f"a budget of {budget} tokens leaves no room after the fixed {overhead}")
    # Count the text by its lines (sentences, words): one pass, in short calls. The
    # sum is exact across whitespace joins (a SentencePiece token never spans one)
    # and at most one token per join over elsewhere, so only a text near the
    # budget is counted whole, to decide exactly whether it fits.
    units: list[Piece] = []
    for level, part in _parts(text, 0):
        _add(units, part, level + 1, count=count, overhead=overhead, room=room)
    left = sum(unit.tokens for unit in units)
    joins_in_words = sum(1 for unit in units[:-1] if not unit.text[-1:].isspace())
    if left - joins_in_words <= whole_up_to - overhead:
        tokens = count(text) - overhead
        if tokens <= whole_up_to - overhead:
            return [Piece(text, max(tokens, 0))]
    pieces_left = math.ceil(left / room)
    pieces: list[Piece] = []
    current: list[Piece] = []
    size = 0
    for unit in units:
        # Close the piece when the unit would not fit, or when the piece is already
        # nearer its share of what is left than it would be with the unit: equal
        # pieces, and no short last one.
        if current and (size + unit.tokens > room or size + unit.tokens / 2 > left / pieces_left):
            pieces.extend(_close(current, count=count, overhead=overhead, room=room))
            left -= size
            pieces_left = max(pieces_left - 1, math.ceil(left / room), 1)
            current, size = [], 0
        current.append(unit)
        size += unit.tokens
    pieces.extend(_close(current, count=count, overhead=overhead, room=room))
    return pieces


def _parts(text: str, level: int) -> list[tuple[int, str]]:
    """``text`` cut by the pattern of ``level`` (lines, sentences, words), with the level
    it was cut at: the next level if the pattern found a single part."""
    while level < len(_LEVELS):
        parts = [match.group() for match in _LEVELS[level].finditer(text) if match.group()]
        if len(parts) > 1:
            return [(level, part) for part in parts]
        level += 1
    return [(level, text)]


def _add(units: list[Piece], part: str, level: int, *, count, overhead: int, room: int) -> None:
    """Append ``part`` to ``units`` as pieces of at most ``room`` tokens each."""
    cost = count(part) - overhead
    if cost <= room:
        units.append(Piece(part, max(cost, 0)))
    elif level < len(_LEVELS):
        for next_level, smaller in _parts(part, level):
            _add(units, smaller, next_level + 1, count=count, overhead=overhead, room=room)
    else:
        units.extend(
            Piece(piece, count(piece) - overhead)
            for piece in _cut_characters(part, count=count, budget=room + overhead)
        )


def _cut_characters(text: str, *, count: Callable[[str], int], budget: int) -> list[str]:
    """``text`` cut anywhere, into the longest prefixes that fit ``budget`` (binary search)."""
    pieces = []
    start = 0
    while start < len(text):
        low, high = start + 1, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if count(text[start:middle]) <= budget:
                low = middle
            else:
                high = middle - 1
        pieces.append(text[start:low])
        start = low
    return pieces


def _close(units: list[Piece], *, count: Callable[[str], int], overhead: int, room: int) -> list[Piece]:
    """The units joined. Counts add up across a whitespace join (a SentencePiece token
    never spans one), so only a piece with a join inside a word (CJK sentences, cut
    words) is counted again, and split again if the sum fell short."""
    piece = Piece("".join(unit.text for unit in units), sum(unit.tokens for unit in units))
    if len(units) == 1 or all(unit.text[-1:].isspace() for unit in units[:-1]):
        return [piece]
    tokens = count(piece.text) - overhead
    if tokens <= room:
        return [Piece(piece.text, tokens)]
    middle = len(units) // 2
    return _close(units[:middle], count=count, overhead=overhead, room=room) + _close(
        units[middle:], count=count, overhead=overhead, room=room
    )


def mean_of_pieces(vectors: numpy.ndarray, weights: Sequence[Sequence[float]]) -> numpy.ndarray:
    """One row per text from the rows of its pieces: ``weights[i]`` holds a weight for each
    of text ``i``'s consecutive rows (its pieces' tokens). The weighted mean, as e5's own
    mean over tokens; the caller normalizes it."""
    import numpy as np

    counts = np.array([len(row) for row in weights])
    flat = np.array([weight for row in weights for weight in row], dtype=vectors.dtype)
    flat = np.maximum(flat, 1)  # an empty piece (only an empty text is one) still counts
    starts = np.cumsum(counts) - counts
    sums = np.add.reduceat(vectors * flat[:, None], starts, axis=0)
    return sums / np.add.reduceat(flat, starts)[:, None]
