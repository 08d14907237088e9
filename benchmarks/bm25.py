"""Plain Okapi BM25, the baseline every benchmark ranks beside ours: any query word, the
collection's own statistics, no fields, no fallback."""

from __future__ import annotations

import math
from collections import defaultdict

K1, B = 1.5, 0.75


def bm25_ranking(docs: dict[str, list[str]], query: list[str], k: int = 10) -> list[str]:
    """Plain Okapi BM25 over ``docs`` ({id: tokens}), any query word."""
    n = len(docs)
    average = sum(map(len, docs.values())) / max(n, 1)
    frequency: dict[str, int] = defaultdict(int)
    for words in docs.values():
        for word in set(words):
            frequency[word] += 1
    scores = {}
    for doc_id, words in docs.items():
        counts: dict[str, int] = defaultdict(int)
        for word in words:
            counts[word] += 1
        score = 0.0
        for word in set(query):
            tf = counts.get(word, 0)
            if tf:
                idf = math.log(1 + (n - frequency[word] + 0.5) / (frequency[word] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(words) / average))
        if score > 0:
            scores[doc_id] = score
    return sorted(scores, key=scores.get, reverse=True)[:k]
