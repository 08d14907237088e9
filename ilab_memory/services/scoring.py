"""ContextScore: which of a user's memories matter most at the start of a session.

value = recency × type weight × reinforcement
  recency        RECENCY_DECAY_PER_HOUR ** hours since updated_at (Generative Agents' 0.995/h)
  type weight    TYPE_WEIGHTS[type], 1.0 for a type not listed
  reinforcement  1 + REINFORCEMENT_CAP × extra / (extra + REINFORCEMENT_HALF), where extra is
                 (revision_count − 1) + (duplicate_count − 1): grows with use, never past 1 + cap
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from ..types import ContextScore

RECENCY_DECAY_PER_HOUR = 0.995
REINFORCEMENT_CAP = 0.5
REINFORCEMENT_HALF = 4
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ContextSignals(NamedTuple):
    """The factors of a ContextScore, cheap to compute for every candidate."""

    hours: float
    recency: float
    type_weight: float
    reinforcement: float

    @property
    def value(self) -> float:
        return self.recency * self.type_weight * self.reinforcement

    def score(self) -> ContextScore:
        return ContextScore(
            value=self.value,
            breakdown={
                "hours_since_update": round(self.hours, 3),
                "recency": self.recency,
                "type_weight": self.type_weight,
                "reinforcement": self.reinforcement,
            },
        )


def hours_between(updated_at: datetime, now: datetime) -> float:
    return max(0.0, (now - updated_at).total_seconds() / 3600)


def reinforcing_uses(revision_count: int, duplicate_count: int) -> int:
    return max(0, revision_count - 1) + max(0, duplicate_count - 1)


def reinforcement(extra: int) -> float:
    return 1 + REINFORCEMENT_CAP * extra / (extra + REINFORCEMENT_HALF)


def context_value(*, hours: float, type_weight: float, extra: int) -> float:
    """``ContextSignals.value`` without building the signals: ranks many candidates cheaply."""
    return RECENCY_DECAY_PER_HOUR**hours * type_weight * reinforcement(extra)


# ContextScore in SQL, for ranking the candidates in the database. It must give the same float
# as ``context_value`` bit for bit, so it repeats its IEEE steps in order: the microseconds since
# the update (exact integers) become hours as total_seconds() / 3600 does, then pow, then the
# products left to right. Every constant is a double-precision parameter (PostgreSQL would
# otherwise compute ``0.5 * n`` in exact numeric). tests/test_context_sql.py holds it to that.
# ``float8`` is PostgreSQL's double precision, and a REAL on SQLite (a type name with "FLOA").
# The type weight is one CAST around the CASE: a weight bound on the client arrives as the
# decimal of its repr, which the CAST turns back into the same double.
_DOUBLE = "CAST(%s AS float8)"


def context_value_sql(*, epoch_micros: str, greatest: str, weighted_types: int) -> str:
    """The SQL expression of ``context_value`` over an observation row.

    ``epoch_micros`` is the SQL of the row's updated_at in microseconds since the epoch,
    ``greatest`` the two-argument maximum (``max`` on SQLite, ``greatest`` on PostgreSQL).
    Parameters, in order: ``context_value_params``.
    """
    hours = (
        f"{greatest}(CAST(0 AS float8), "
        f"(CAST(%s - {epoch_micros} AS float8) / CAST(1000000 AS float8))"
        " / CAST(3600 AS float8))"
    )
    weight = "".join(" WHEN %s THEN %s" for _ in range(weighted_types))
    weight = f"CAST(CASE type{weight} ELSE 1 END AS float8)" if weighted_types else "CAST(1 AS float8)"
    extra = f"({greatest}(0, revision_count - 1) + {greatest}(0, duplicate_count - 1))"
    reinforcement = f"(1 + {_DOUBLE} * {extra} / ({extra} + %s))"
    return f"(power({_DOUBLE}, {hours}) * {weight} * {reinforcement})"


def context_value_params(*, now: datetime, type_weights: dict[str, float]) -> list:
    now_epoch_micros = (now - EPOCH) // timedelta(microseconds=1)  # exact, like the column side
    weights = [value for name, weight in type_weights.items() for value in (name, float(weight))]
    return [RECENCY_DECAY_PER_HOUR, now_epoch_micros, *weights, REINFORCEMENT_CAP, REINFORCEMENT_HALF]


def context_signals(
    *,
    now: datetime,
    updated_at: datetime,
    type: str,
    revision_count: int,
    duplicate_count: int,
    type_weights: dict[str, float],
) -> ContextSignals:
    """The signals alone: rank many candidates by ``.value``, build ``.score()`` for the winners."""
    hours = hours_between(updated_at, now)
    return ContextSignals(
        hours=hours,
        recency=RECENCY_DECAY_PER_HOUR**hours,
        type_weight=float(type_weights.get(type, 1.0)),
        reinforcement=reinforcement(reinforcing_uses(revision_count, duplicate_count)),
    )


def context_score(**signals) -> ContextScore:
    """The ContextScore of one observation (keyword arguments as ``context_signals``)."""
    return context_signals(**signals).score()
