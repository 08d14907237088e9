"""Paired comparisons over questions: a bootstrap interval of the mean difference and a sign test.

Both benchmarks score every question on its own, so two systems (ours and BM25 in one run) or
two runs (``--compare a.json b.json``) are compared question by question:

* the mean of the per-question differences, with a 95 % **paired bootstrap** interval: the
  questions resampled with replacement 10,000 times (seeded, so a rerun prints the same
  interval), the 2.5th and 97.5th percentiles of the resampled means;
* a **sign test**: how many questions the first system wins, loses and ties, and the exact
  two-sided binomial p-value of the wins against the losses (ties left out).

An interval that holds 0 means the sets cannot tell the two apart.
"""

from __future__ import annotations

import math

RESAMPLES = 10_000
SEED = 20_261_203


def paired_bootstrap(differences, *, resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95):
    """(mean, low, high) of the per-question ``differences``."""
    import numpy as np

    values = np.asarray(list(differences), dtype="float64")
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 1000):  # chunks: 1000 × n indices at a time
        stop = min(start + 1000, resamples)
        means[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(values.mean()), float(low), float(high)


def sign_test(differences) -> dict:
    """Wins, losses and ties of the first system, and the exact two-sided p-value."""
    wins = sum(d > 1e-12 for d in differences)
    losses = sum(d < -1e-12 for d in differences)
    ties = len(list(differences)) - wins - losses
    n = wins + losses
    if n == 0:
        p = 1.0
    else:
        tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
        p = min(1.0, 2 * tail)
    return {"wins": wins, "losses": losses, "ties": ties, "p": p}


def paired(first: dict, second: dict) -> dict:
    """``first`` and ``second``: {question id: value}; compared over the questions both hold."""
    common = [q for q in first if q in second]
    differences = [first[q] - second[q] for q in common]
    mean, low, high = paired_bootstrap(differences)
    return {
        "n": len(common),
        "first": sum(first[q] for q in common) / len(common) if common else 0.0,
        "second": sum(second[q] for q in common) / len(common) if common else 0.0,
        "difference": mean, "low": low, "high": high, **sign_test(differences),
    }


def describe(result: dict) -> str:
    """``+0.025 [-0.010, +0.061]  wins 10 / losses 5 / ties 50, sign test p 0.30``"""
    return (f"{result['difference']:+.3f} [{result['low']:+.3f}, {result['high']:+.3f}]  "
            f"wins {result['wins']} / losses {result['losses']} / ties {result['ties']}, "
            f"sign test p {result['p']:.2g}")
