"""The one decision of a search: from each candidate's evidence, what is kept and how it ranks.

Every candidate (a memory that holds a word of the query, or one of the query's nearest by
meaning) arrives with its ``Evidence``: its words (the engine's relevance, whether it holds every
term, the idf-weighted share of the terms it holds), its meaning (its cosine to the query, None
while its vector has not arrived) and its age. ``decide`` judges each one on its own evidence and
then the list as a whole, by the rules of ``RULES`` in that order; each rule is named, has its
unit test (tests/test_fusion.py) and its measured gain (docs/search.md).

value = ((LEXICAL_WEIGHT × lexical + SEMANTIC_WEIGHT × semantic) × recency [+ PERIOD_WEIGHT × in_period])
        / (LEXICAL_WEIGHT + SEMANTIC_WEIGHT [+ PERIOD_WEIGHT])

  lexical   COVERAGE_SHARE × coverage plus the rest of one by the relevance:
            (1 − COVERAGE_SHARE) × relevance / (relevance + LEXICAL_HALF), on one absolute
            scale per engine (never divided by the query's best match).
  semantic  standing / STANDING_SPAN within [0, 1]: how many standard deviations the memory's
            cosine lies above the query's pool (its POOL_SIZE nearest memories and one imagined
            unrelated memory, the model's ``calibration``).
  recency   a gentle tie-breaker (``recency_factor``).
  in_period 1 when the memory happened in the period a date phrase of the query names, else 0;
            the bracketed parts count only for a query that names one ("what did we decide
            last week?"): there the period is evidence beside words and meaning, and a memory
            of that period is a result even when neither its words nor its meaning are near.
            Recency does not scale it: a period every candidate shares ("this year", in a
            year-old memory) must not reorder them.

Words only (no embedder), the semantic part is left out. The value lies in [0, 1] and means the
same for every query of one configuration.

A result is **weak** when the search reads meaning and neither its words nor its meaning are
enough: it holds less than WORDS_ENOUGH of the query's weighted words and its cosine does not
pass the user's null (the nearest that questions about nothing the user said come,
``calibration.null_of``). A weak result stays, marked (``weak`` and ``evidence`` in the
breakdown), and only the WEAK_CAP best of them are returned: an agent drops them by the mark;
the library does not drop true answers for it.
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

# The weight of having happened in the period a query names, beside words and meaning: a
# question that is mostly its date ("¿qué decidimos la semana pasada?") is answered by its period.
PERIOD_WEIGHT = 0.5

POOL_SIZE = 20
STANDING_SPAN = 3.0
# The pool's imagined unrelated memory weighs as much as one memory.
PRIOR_WEIGHT = 1

# Evidence: the share of the query's weighted words a memory must hold to stand on its words.
WORDS_ENOUGH = 0.5
# At most this many weak results, the best of them.
WEAK_CAP = 5

# The rules, in the order ``decide`` applies them. A benchmark may run without one
# (``benchmarks/tune.py``): ``ACTIVE`` is the set in force.
RULES = {
    "exact-match": "a memory holding every term of the query has semantic 1: no vector sinks an exact match",
    "waiting-by-words": "a memory whose vector has not arrived has its lexical part as its semantic part",
    "period": "a memory that happened in the period the query names has it as evidence, weighing PERIOD_WEIGHT",
    "weak-meaning": "a result with neither WORDS_ENOUGH of the words nor a cosine above the user's null is weak",
    "weak-cap": "at most WEAK_CAP weak results",
}
ACTIVE = frozenset(RULES)


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


class Evidence(NamedTuple):
    """What one candidate brings: ``relevance`` None when no word matched, ``all_terms`` whether
    it holds every term, ``coverage`` the idf-weighted share of the terms it holds (1 with all),
    ``cosine`` None without a vector (yet) or in a words-only search."""

    relevance: float | None
    all_terms: bool
    coverage: float
    cosine: float | None
    recency: float
    in_period: bool = False


class Judged(NamedTuple):
    """A candidate judged: its evidence and what the rules made of it."""

    evidence: Evidence
    lexical: float
    standing: float | None
    semantic: float
    value: float
    kind: str | None  # "words", "meaning", "words+meaning", "period"; None: no evidence, not a result
    weak: bool
    in_period: bool = False  # it happened in the period the query names, and that counted

    def score(self, *, engine: str, mode: str, terms: int, model_id: str | None, scope: str,
              period: dict | None = None) -> SearchScore:
        e = self.evidence
        breakdown = {
            "engine": engine, "mode": mode, "terms": terms, "relevance": e.relevance, "all_terms": e.all_terms,
            "coverage": e.coverage, "lexical": self.lexical, "recency": e.recency, "scope": scope,
            "evidence": self.kind, "weak": self.weak,
        }
        weights = {"lexical": LEXICAL_WEIGHT}
        if period is not None:  # the period the query named, as read, and whether this memory is in it
            breakdown.update(period=period, in_period=self.in_period)
            weights["period"] = PERIOD_WEIGHT
        if model_id is not None:
            weights["semantic"] = SEMANTIC_WEIGHT
            breakdown.update(
                model=model_id, vector=e.cosine is not None, cosine=e.cosine, standing=self.standing,
                semantic=self.semantic, weights=weights,
            )
        return SearchScore(value=self.value, breakdown=breakdown)


class Context(NamedTuple):
    """What the whole query brings: the engine, the pool of its cosines (None: words only), the
    user's null (None: not known, every result found by meaning alone is weak) and whether it
    names a period."""

    engine: str
    pool: CosinePool | None = None
    null: float | None = None
    names_period: bool = False


def lexical_part(engine: str, relevance: float | None, coverage: float) -> float:
    if relevance is None:
        return 0.0
    relevance = max(relevance, 0.0)
    return COVERAGE_SHARE * coverage + (1 - COVERAGE_SHARE) * relevance / (relevance + LEXICAL_HALF[engine])


def judge(e: Evidence, context: Context, rules=None) -> Judged:
    """One candidate on its own evidence (the per-candidate rules)."""
    rules = ACTIVE if rules is None else rules
    lexical = lexical_part(context.engine, e.relevance, e.coverage)
    words = e.relevance is not None  # a term, a word of a phrase or a prefix of the fallback held
    period_weight = PERIOD_WEIGHT if context.names_period and "period" in rules else 0.0
    in_period = period_weight > 0 and e.in_period
    pool = context.pool
    if pool is None:
        value = (LEXICAL_WEIGHT * lexical * e.recency + period_weight * in_period) / (LEXICAL_WEIGHT + period_weight)
        kind = "words" if words else "period" if in_period else None
        return Judged(e, lexical, None, 0.0, value, kind, False, in_period)
    standing = pool.standing(e.cosine)
    if e.cosine is None:
        semantic = lexical if "waiting-by-words" in rules else 0.0
    else:
        semantic = 0.0 if standing is None else min(1.0, max(0.0, standing / STANDING_SPAN))
    if e.all_terms and "exact-match" in rules:
        semantic = 1.0
    value = (((LEXICAL_WEIGHT * lexical + SEMANTIC_WEIGHT * semantic) * e.recency + period_weight * in_period)
             / (LEXICAL_WEIGHT + SEMANTIC_WEIGHT + period_weight))
    meaning = standing is not None and standing > 0
    kind = ("words+meaning" if words and meaning else "words" if words else "meaning" if meaning
            else "period" if in_period else None)
    return Judged(e, lexical, standing, semantic, value, kind, _is_weak(e, context, rules), in_period)


def may_be_weak(e: Evidence, rules=None) -> bool:
    """Whether ``e`` is weak unless its meaning passes the user's null: it has a vector (a memory
    without one is judged by its words alone, as words-only search judges it) and holds less
    than WORDS_ENOUGH of the query's weighted words."""
    rules = ACTIVE if rules is None else rules
    if "weak-meaning" not in rules or e.cosine is None:
        return False
    return not (e.all_terms or (e.relevance is not None and e.coverage >= WORDS_ENOUGH))


def _is_weak(e: Evidence, context: Context, rules) -> bool:
    """Neither enough words nor meaning above the user's null (None: not known)."""
    # may_be_weak holds only for a result with a cosine; the test says so to the type checker too.
    return may_be_weak(e, rules) and e.cosine is not None and (context.null is None or e.cosine <= context.null)


def decide(candidates, context: Context, *, limit: int | None, rules=None) -> list:
    """``candidates``: (Evidence, item) pairs; the kept ones as (Judged, item), best first, at
    most ``limit`` (None: all). Ties keep the order of ``candidates`` (sort them first)."""
    rules = ACTIVE if rules is None else rules
    judged = [(judge(e, context, rules), item) for e, item in candidates]
    kept = sorted(((j, item) for j, item in judged if j.kind is not None), key=lambda pair: -pair[0].value)
    if "weak-cap" in rules:
        weak = 0
        capped = []
        for pair in kept:
            weak += pair[0].weak
            if not pair[0].weak or weak <= WEAK_CAP:
                capped.append(pair)
        kept = capped
    return kept if limit is None else kept[:limit]
