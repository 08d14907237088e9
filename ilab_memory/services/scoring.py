"""ContextScore: which of a user's memories matter most at the start of a session.

value = recency × type weight × reinforcement
  recency        RECENCY_DECAY_PER_HOUR ** hours since updated_at (Generative Agents' 0.995/h)
  type weight    TYPE_WEIGHTS[type], 1.0 for a type not listed
  reinforcement  1 + REINFORCEMENT_CAP × extra / (extra + REINFORCEMENT_HALF), where extra is
                 (revision_count − 1) + (duplicate_count − 1): grows with use, never past 1 + cap
"""

from __future__ import annotations

from datetime import datetime

from ..types import ContextScore

RECENCY_DECAY_PER_HOUR = 0.995
REINFORCEMENT_CAP = 0.5
REINFORCEMENT_HALF = 4


def _signals(
    now: datetime, updated_at: datetime, type: str, revision_count: int, duplicate_count: int, type_weights
) -> tuple[float, float, float, float]:
    hours = max(0.0, (now - updated_at).total_seconds() / 3600)
    recency = RECENCY_DECAY_PER_HOUR**hours
    weight = float(type_weights.get(type, 1.0))
    extra = max(0, revision_count - 1) + max(0, duplicate_count - 1)
    reinforcement = 1 + REINFORCEMENT_CAP * extra / (extra + REINFORCEMENT_HALF)
    return hours, recency, weight, reinforcement


def context_value(
    *,
    now: datetime,
    updated_at: datetime,
    type: str,
    revision_count: int,
    duplicate_count: int,
    type_weights: dict[str, float],
) -> float:
    """``context_score(...).value`` without building the score: for ranking many candidates."""
    _, recency, weight, reinforcement = _signals(now, updated_at, type, revision_count, duplicate_count, type_weights)
    return recency * weight * reinforcement


def context_score(
    *,
    now: datetime,
    updated_at: datetime,
    type: str,
    revision_count: int,
    duplicate_count: int,
    type_weights: dict[str, float],
) -> ContextScore:
    hours, recency, weight, reinforcement = _signals(
        now, updated_at, type, revision_count, duplicate_count, type_weights
    )
    return ContextScore(
        value=recency * weight * reinforcement,
        breakdown={
            "hours_since_update": round(hours, 3),
            "recency": recency,
            "type_weight": weight,
            "reinforcement": reinforcement,
        },
    )
