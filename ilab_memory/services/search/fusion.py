"""Fusion: one SearchScore per candidate from its words, its meaning and its age.

value = (LEXICAL_WEIGHT × lexical + SEMANTIC_WEIGHT × semantic) × recency / (LEXICAL_WEIGHT + SEMANTIC_WEIGHT)

  lexical   COVERAGE_SHARE × coverage, the idf-weighted share of the query's terms the memory
            holds (1 when it holds all), plus the rest of one by its relevance:
            (1 − COVERAGE_SHARE) × relevance / (relevance + LEXICAL_HALF). Relevance is the
            engine's own (bm25 on SQLite, idf-weighted ts_rank on PostgreSQL, both with the
            user's own collection statistics) on one absolute scale, never divided by the query's
            best match, so a weak match scores low whatever else the user has. Coverage counts on
            its own because "the memory holds what you asked" does not saturate with repeats.
  semantic  standing / STANDING_SPAN, within [0, 1]: ``standing`` is how many standard
            deviations the memory's cosine lies above the query's pool (its POOL_SIZE nearest
            memories and one imagined unrelated memory). e5's raw cosines crowd into a narrow
            band whose place moves with the query, so a memory's standing among the user's own
            memories is what tells an answer apart. A memory holding every term of the query
            is an exact match: its semantic part is 1 whatever its vector says, so a short
            query's noisy vector never sinks it. A memory whose vector has not arrived has its
            lexical part as its semantic part (1 for an exact match).
  recency   a gentle tie-breaker (``recency_factor``)

A date phrase in the query ("last week", ``periods``) multiplies the value of a memory that
happened in the period it names by PERIOD_BOOST (at most 1): a boost, never a filter, so a
wrong reading reorders and hides nothing.

The value lies in [0, 1] and means the same for every query of one configuration (words only, it
is ``lexical × recency``): 1 is every term of the query, at
full strength, in a memory far nearer in meaning than the rest. A candidate is a result only
with evidence: a word of the query (not one of a question's function words, see
``query.any_terms``), or a cosine above the pool's mean (and, when no memory holds a word of
the query, above the user's null: ``calibration``). A memory without a vector yet is valued by
its words alone: its semantic part is its lexical part, so its value is ``lexical × recency``,
what words-only search gives it (an exact match's is 1, as with a vector). docs/search.md shows
how the constants were chosen and what was tried.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ...types import SearchScore

LEXICAL_WEIGHT = 0.6
SEMANTIC_WEIGHT = 0.7
COVERAGE_SHARE = 0.5
# Relevance at which its part of ``lexical`` is half full, per engine: bm25 sums idf × a saturated term
# frequency; PostgreSQL's ts_rank is a fraction of one per term.
LEXICAL_HALF = {"sqlite-fts5-bm25": 10.0, "postgresql-ts_rank": 8.0}

# Recency: a gentle tie-breaker between near-equal matches (a newer version of the same fact
# should win), never strong enough to bury a much better old match.
RECENCY_FLOOR = 0.75
RECENCY_HALF_LIFE_DAYS = 30.0

# What happened in the period a query names, against what did not (``in_period``). Chosen on the
# dated development set (benchmarks/time_search.py) and LongMemEval dev among 1.1, 1.25, 1.5 and 2:
# 1.5 lifts the most answers while a misleading phrase costs no more than at 1.25; 2 starts to
# cost rank there. Confirmed on LongMemEval val (docs/benchmarks.md, "Time").
PERIOD_BOOST = 1.5

POOL_SIZE = 20
STANDING_SPAN = 3.0
# The pool's imagined unrelated memory weighs as much as one memory. Its cosine and spread are
# the model's own (``calibration``): e5 puts unrelated texts near 0.8, other models elsewhere.
PRIOR_WEIGHT = 1


def recency_factor(age_days: float) -> float:
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS)


class CosinePool(NamedTuple):
    """Mean and standard deviation of the cosines of a query's nearest memories."""

    mean: float
    deviation: float

    @classmethod
    def of(cls, cosines, *, prior: tuple[float, float] | None) -> CosinePool:
        """The pool of ``cosines``' POOL_SIZE largest and the imagined memory ``prior`` (its
        cosine and deviation; None while the model's is not measured: the nearest alone)."""
        nearest = sorted(cosines, reverse=True)[:POOL_SIZE]
        weight = 0 if prior is None else PRIOR_WEIGHT
        prior_cosine, prior_deviation = prior or (0.0, 0.0)
        n = len(nearest) + weight
        if n == 0:
            return cls(0.0, 0.0)
        mean = (sum(nearest) + weight * prior_cosine) / n
        spread = sum((c - mean) ** 2 for c in nearest) + weight * (prior_deviation**2 + (prior_cosine - mean) ** 2)
        return cls(mean, math.sqrt(spread / n))

    def standing(self, cosine: float | None) -> float | None:
        if cosine is None or self.deviation <= 0:
            return None
        return (cosine - self.mean) / self.deviation


class Signals(NamedTuple):
    relevance: float | None
    all_terms: bool
    coverage: float
    lexical: float
    cosine: float | None
    standing: float | None
    semantic: float
    recency: float
    value: float
    evidence: bool
    vector: bool = True  # False: the memory's vector has not arrived, its meaning was not read
    period: float = 1.0  # PERIOD_BOOST when it happened in the period the query names, else 1

    def in_period(self, inside: bool) -> Signals:
        """These signals for a memory that happened inside (or outside) the query's period."""
        if not inside:
            return self
        return self._replace(period=PERIOD_BOOST, value=min(1.0, self.value * PERIOD_BOOST))

    def score(self, *, engine: str, mode: str, terms: int, model_id: str | None, scope: str,
              period: dict | None = None) -> SearchScore:
        breakdown = {
            "engine": engine, "mode": mode, "terms": terms, "relevance": self.relevance,
            "all_terms": self.all_terms, "coverage": self.coverage, "lexical": self.lexical, "recency": self.recency, "scope": scope,
        }
        if period is not None:  # the period the query named, as read, and this memory's factor
            breakdown.update(period=period, period_boost=self.period)
        if model_id is not None:
            breakdown.update(
                model=model_id, vector=self.vector, cosine=self.cosine, standing=self.standing,
                semantic=self.semantic, weights={"lexical": LEXICAL_WEIGHT, "semantic": SEMANTIC_WEIGHT},
            )
        return SearchScore(value=self.value, breakdown=breakdown)


def signals(*, engine: str, relevance: float | None, all_terms: bool, coverage: float, cosine: float | None,
            pool: CosinePool | None, recency: float, threshold: float | None = None) -> Signals:
    """One candidate's signals: ``relevance`` None when no word matched, ``all_terms`` whether
    every term did, ``coverage`` the idf-weighted share of the terms it holds (1 with all), ``cosine`` None without a vector (yet), ``pool`` None when the query has no
    vector (words only: the value is then ``lexical × recency``). ``threshold``: the cosine a
    result with no word of the query must pass besides standing out (None: standing out is enough)."""
    relevance = max(relevance, 0.0) if relevance is not None else None
    lexical = 0.0
    if relevance is not None:
        lexical = COVERAGE_SHARE * coverage + (1 - COVERAGE_SHARE) * relevance / (relevance + LEXICAL_HALF[engine])
    # A word of the query held whole is evidence. A match through the fallback's prefixes alone
    # ("grows" finding "growth") is evidence only where nothing else can judge it: in words-only
    # search, or for a memory whose vector has not arrived; with a vector it must also mean it.
    words = relevance is not None and (coverage > 0 or pool is None or cosine is None)
    if pool is None:
        return Signals(relevance, all_terms, coverage, lexical, None, None, 0.0, recency, lexical * recency, words)
    # A memory holding every term of the query is an exact match: no vector sinks it (e5's
    # vector of "cache stampede" lies nearer to notes holding one of the words than to the one
    # holding both). A memory whose vector has not arrived (a backlog) is valued by its words,
    # so a memory with a vector passes it only on meaning stronger than the waiting one's words.
    standing = None if cosine is None else pool.standing(cosine)
    if cosine is None:
        semantic = lexical
    else:
        semantic = 0.0 if standing is None else min(1.0, max(0.0, standing / STANDING_SPAN))
    if all_terms:
        semantic = 1.0
    value = (LEXICAL_WEIGHT * lexical + SEMANTIC_WEIGHT * semantic) * recency / (LEXICAL_WEIGHT + SEMANTIC_WEIGHT)
    stands_out = standing is not None and standing > 0 and (threshold is None or cosine > threshold)
    return Signals(relevance, all_terms, coverage, lexical, cosine, standing, semantic, recency, value, words or stands_out,
                   cosine is not None)
