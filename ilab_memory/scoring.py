"""ContextScore: which of a user's memories matter most at the start of a session.

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

from .types import ContextScore

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
SCORE_COLUMNS = (
    f"{RECENCY} AS recency, {REINFORCEMENT} AS reinforcement, {RECENCY} * type_weight * {REINFORCEMENT} AS score"
)


def context_score(row) -> ContextScore:
    """The ContextScore of a ranked row (``score``, ``hours``, ``recency``, ``type_weight``,
    ``reinforcement``); the breakdown also names the row's scope."""
    return ContextScore(
        value=row.score,
        breakdown={
            "hours_since_update": round(row.hours, 3),
            "recency": row.recency,
            "type_weight": row.type_weight,
            "reinforcement": row.reinforcement,
            "scope": row.scope,
        },
    )
