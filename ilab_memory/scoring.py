"""The two scores: ContextScore (what matters now) and SearchScore (what a query is about).

ContextScore: which of a user's memories matter most at the start of a session.

value = recency × type weight × reinforcement
  recency        RECENCY_DECAY_PER_HOUR ** hours since updated_at (Generative Agents' 0.995/h)
  type weight    TYPE_WEIGHTS[type], 1.0 for a type not listed
  reinforcement  1 + REINFORCEMENT_CAP × extra / (extra + REINFORCEMENT_HALF), where extra is
                 (revision_count − 1) + (duplicate_count − 1): grows with use, never past 1 + cap

The database computes it over the candidates (``sql.ranked_context``), so only the winners come
back. This module is the formula's one home: the SQL expressions of its factors, and the score
built from the factors the statement returns.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .types import ContextScore, SearchScore

RECENCY_DECAY_PER_HOUR = 0.995
REINFORCEMENT_CAP = 0.5
REINFORCEMENT_HALF = 4

# Hours from the stored updated_at to ``now`` (a parameter adapted like the column). SQLite
# stores Django's text timestamps; julianday reads them (to the millisecond) in whatever zone
# they were written, so the difference is right for UTC and for a database TIME_ZONE alike.
HOURS_SINCE_UPDATE = {
    "sqlite": "max(0.0, (julianday(%s) - julianday(updated_at)) * 24.0)",
    "postgresql": "greatest(0.0, CAST(EXTRACT(EPOCH FROM (CAST(%s AS timestamptz) - updated_at)) AS float8) / 3600.0)",
}
GREATEST = {"sqlite": "max", "postgresql": "greatest"}


def factor_columns(vendor: str, weighted_types: int) -> str:
    """``hours``, ``type_weight`` and ``extra`` of an observation row, as SELECT columns.

    Parameters, in order: ``factor_params``.
    """
    weight = "".join(" WHEN %s THEN CAST(%s AS float8)" for _ in range(weighted_types))
    weight = f"CASE type{weight} ELSE CAST(1 AS float8) END" if weighted_types else "CAST(1 AS float8)"
    greatest = GREATEST[vendor]
    extra = f"{greatest}(0, revision_count - 1) + {greatest}(0, duplicate_count - 1)"
    return f"{HOURS_SINCE_UPDATE[vendor]} AS hours, {weight} AS type_weight, {extra} AS extra"


def factor_params(*, now_param, type_weights: dict[str, float]) -> list:
    return [now_param, *(value for name, weight in type_weights.items() for value in (name, float(weight)))]


# Over the columns of ``factor_columns``: recency, reinforcement, then their product. Every
# constant is a double: PostgreSQL reads a bare 0.5 as exact numeric and would return Decimals.
def _double(value: float) -> str:
    return f"CAST({float(value)!r} AS float8)"


RECENCY = f"power({_double(RECENCY_DECAY_PER_HOUR)}, hours)"
REINFORCEMENT = f"({_double(1)} + {_double(REINFORCEMENT_CAP)} * extra / (extra + {_double(REINFORCEMENT_HALF)}))"
SCORE_COLUMNS = f"{RECENCY} AS recency, {REINFORCEMENT} AS reinforcement, {RECENCY} * type_weight * {REINFORCEMENT} AS score"


def context_score(row) -> ContextScore:
    """The ContextScore of a ranked row (``score``, ``hours``, ``recency``, ``type_weight``, ``reinforcement``)."""
    return ContextScore(
        value=row.score,
        breakdown={
            "hours_since_update": round(row.hours, 3),
            "recency": row.recency,
            "type_weight": row.type_weight,
            "reinforcement": row.reinforcement,
        },
    )


# -- SearchScore ----------------------------------------------------------------------------------
#
# value = (lexical_weight × lexical + SEMANTIC_WEIGHT × semantic) × recency, divided by the best
# value of the same query, so the top result scores 1 and every result lies in (0, 1].
#   lexical   the engine's relevance / the best relevance of this query, 0 when the words did
#             not match. lexical_weight is 1 when every term matched ("all" mode) and
#             ANY_TERM_WEIGHT when only some did ("any", the fallback): a partial match of a
#             question's words says less than a memory that means the question.
#   semantic  how far the memory's cosine stands above the query's pool (its SEMANTIC_POOL
#             nearest memories), in standard deviations / Z_SCALE, 0 at or below the pool's
#             mean. Raw cosines of e5 sit in a narrow band (unrelated texts near 0.75-0.8,
#             answers 0.82-0.9), so the spread within the user's own memories is what tells
#             an answer apart; a memory no nearer than average adds nothing.
#   recency   a gentle tie-breaker (services/search/lexical.py: recency_factor)
# A candidate with neither signal is not a result. Without an embedder the value is
# lexical × recency, as before hybrid search. docs/search.md shows how the constants were
# chosen on the development sets.

SEMANTIC_WEIGHT = 1.0
ANY_TERM_WEIGHT = 0.5
SEMANTIC_POOL = 20
Z_SCALE = 3.0
# The pool also holds one imagined memory at the cosine unrelated memories typically have
# (e5-small: pools of 20 average 0.80 with a spread of 0.02 on the development sets), so a user
# with one or two memories still gets a spread to stand above; with 20 it barely moves.
PRIOR_COSINE, PRIOR_DEVIATION, PRIOR_WEIGHT = 0.80, 0.02, 1


class SearchSignals(NamedTuple):
    relevance: float | None
    lexical: float
    cosine: float | None
    semantic: float
    recency: float
    value: float

    def score(self, *, best: float, engine: str, mode: str, terms: int, model_id: str | None) -> SearchScore:
        breakdown = {
            "engine": engine, "mode": mode, "terms": terms, "relevance": self.relevance, "lexical": self.lexical,
            "recency": self.recency,
        }
        if model_id is not None:
            breakdown.update(
                model=model_id, cosine=self.cosine, semantic=self.semantic,
                weights={"lexical": 1.0 if mode == "all" else ANY_TERM_WEIGHT, "semantic": SEMANTIC_WEIGHT},
            )
        value = self.value / best if self.value > 0 and best > 0 else math.ulp(1.0)  # (0, 1]: never zero
        return SearchScore(value=min(value, 1.0), breakdown=breakdown)


class CosinePool(NamedTuple):
    """Mean and standard deviation of the cosines of a query's nearest memories."""

    mean: float
    deviation: float

    @classmethod
    def of(cls, cosines) -> "CosinePool":
        nearest = sorted(cosines, reverse=True)[:SEMANTIC_POOL]
        n = len(nearest) + PRIOR_WEIGHT
        mean = (sum(nearest) + PRIOR_WEIGHT * PRIOR_COSINE) / n
        spread = sum((c - mean) ** 2 for c in nearest) + PRIOR_WEIGHT * (PRIOR_DEVIATION**2 + (PRIOR_COSINE - mean) ** 2)
        return cls(mean, math.sqrt(spread / n))

    def semantic(self, cosine: float | None) -> float:
        if cosine is None or self.deviation <= 0:
            return 0.0
        return max(0.0, (cosine - self.mean) / self.deviation) / Z_SCALE


def search_signals(*, relevance: float | None, best_relevance: float, mode: str, cosine: float | None,
                   pool: CosinePool | None, recency: float) -> SearchSignals:
    """The signals of one candidate: ``relevance`` None when its words did not match, ``cosine``
    None when it has no vector (yet); ``pool`` None when the query has no vector (lexical only)."""
    lexical = relevance / best_relevance if relevance and best_relevance > 0 else 0.0
    if pool is None:
        return SearchSignals(relevance, lexical, None, 0.0, recency, lexical * recency)
    meaning = pool.semantic(cosine)
    weight = 1.0 if mode == "all" else ANY_TERM_WEIGHT
    return SearchSignals(relevance, lexical, cosine, meaning, recency, (weight * lexical + SEMANTIC_WEIGHT * meaning) * recency)
