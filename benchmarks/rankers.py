"""The rankers the benchmarks rank beside ours: plain Okapi BM25 (any query word, the user's own
collection statistics, no fields, no fallback) and dense-only (our stored vectors alone)."""

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


def dense_ranking(embedder, user_id: str, query: str, k: int = 10) -> list[str]:
    from ilab_memory import vectors

    cosines = vectors.similarities(
        user_id=user_id, model_id=embedder.model_id, dimensions=embedder.dimensions,
        query=embedder.embed_query(query), n=k, using="default", max_bytes=256 * 1024 * 1024,
    )
    return [str(pk) for pk in sorted(cosines, key=cosines.get, reverse=True)[:k]]
