"""Seeded text for benchmark rows."""

from __future__ import annotations

import random

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "pe", "so", "vi", "da", "ge", "hu", "ri", "mo", "ba", "fe", "li",
              "no", "sa", "tu", "ve", "zo", "ki", "pa"]


class Corpus:
    """Seeded pools of words, titles and sentences (cheap to draw from, a million times): the
    same seed makes the same rows."""

    def __init__(self, seed: int):
        rng = random.Random(seed)
        words = set()
        while len(words) < 3000:
            words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
        self.words = sorted(words)
        # Zipf-like: a few words are everywhere, most are rare.
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.sentences = [" ".join(rng.choices(self.words, weights, k=rng.randint(14, 30)))
                          for _ in range(4000)]
        self.titles = [" ".join(rng.choices(self.words, weights, k=rng.randint(3, 7))) for _ in range(2000)]
