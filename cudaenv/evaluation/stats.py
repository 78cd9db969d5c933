"""Uncertainty for pass@k and for the difference between two runs, by bootstrap.

A suite's pass@k is the mean over problems of the unbiased per-problem estimator
(:func:`cudaenv.grading.summary.pass_at_k`). Two sources of noise make it uncertain: which
problems the suite happens to hold, and which samples each problem happened to draw. The
interval here resamples both (a two-level bootstrap: problems with replacement, then each
drawn problem's samples with replacement) and reports the percentile interval. It is
deterministic: the generator is seeded, so a report is reproducible byte for byte.

:func:`paired_difference` compares two runs on the problems both ran: the per-problem
difference of the estimators, resampled the same way (the same problems drawn for both runs,
each run's samples resampled on its own), so problem difficulty, shared by both runs, cancels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from cudaenv.grading.summary import pass_at_k

__all__ = [
    "BOOTSTRAP_ROUNDS",
    "Estimate",
    "mean_interval",
    "paired_difference",
    "pass_at_k_interval",
]

BOOTSTRAP_ROUNDS = 2000
LEVEL = 0.95


class Estimate(BaseModel):
    """A value with its bootstrap percentile interval (None where it cannot be computed:
    no problem has k samples)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    problems: int = 0

    def text(self, digits: int = 3) -> str:
        """``0.500 [0.250, 0.750]``; ``-`` when there is no value."""
        if self.value is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _table(n: int, k: int) -> np.ndarray:
    """pass@k for ``c`` = 0..n correct of n samples (index c)."""
    return np.array([pass_at_k(n, c, k) for c in range(n + 1)])


def _bootstrap(
    runs: Sequence[Mapping[str, Sequence[bool]]],
    weights: Sequence[float],
    k: int,
    rounds: int,
    seed: int,
) -> tuple[float, np.ndarray] | None:
    """The point estimate and bootstrap replicates of ``sum_r w_r * mean_p pass@k(run r, p)``
    over the problems every run has with at least k samples."""
    tasks = sorted(set.intersection(*(set(r) for r in runs)))
    tasks = [t for t in tasks if all(len(r[t]) >= k for r in runs)]
    if not tasks:
        return None
    rng = np.random.default_rng(seed)
    point = 0.0
    reps = np.zeros(rounds)
    picks = rng.integers(0, len(tasks), size=(rounds, len(tasks)))
    for run, weight in zip(runs, weights, strict=True):
        values = np.zeros(len(tasks))
        boots = np.zeros((rounds, len(tasks)))
        for i, t in enumerate(tasks):
            outcomes = run[t]
            table = _table(len(outcomes), k)
            values[i] = table[sum(outcomes)]
            hits = picks == i  # the slots where this problem was drawn
            count = int(hits.sum())
            if count:  # n samples drawn with replacement: the number correct is binomial
                correct = rng.binomial(len(outcomes), sum(outcomes) / len(outcomes), count)
                boots[hits] = table[correct]
        point += weight * float(values.mean())
        reps += weight * boots.mean(axis=1)
    return point, reps


def _estimate(result: tuple[float, np.ndarray] | None, problems: int) -> Estimate:
    if result is None:
        return Estimate(value=None)
    point, reps = result
    alpha = (1 - LEVEL) / 2
    low, high = np.quantile(reps, [alpha, 1 - alpha])
    return Estimate(value=point, low=float(low), high=float(high), problems=problems)


def pass_at_k_interval(
    outcomes: Mapping[str, Sequence[bool]],
    k: int,
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = 0,
) -> Estimate:
    """pass@k over the problems with at least ``k`` samples, with its 95% interval.

    ``outcomes``: per task_id, whether each sample passed (samples that could not run to a
    decision left out).

    >>> est = pass_at_k_interval({"a": [True, True], "b": [False, False]}, 1)
    >>> est.value, est.low, est.high
    (0.5, 0.0, 1.0)
    """
    kept = {t: list(v) for t, v in outcomes.items() if len(v) >= k}
    return _estimate(_bootstrap([kept], [1.0], k, rounds, seed), len(kept))


def paired_difference(
    a: Mapping[str, Sequence[bool]],
    b: Mapping[str, Sequence[bool]],
    k: int,
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = 0,
) -> Estimate:
    """pass@k of run ``b`` minus run ``a`` over the problems both ran with at least ``k``
    samples, with its 95% paired-bootstrap interval.

    >>> paired_difference({"x": [False], "y": [True]}, {"x": [True], "y": [True]}, 1).value
    0.5
    """
    shared = [t for t in set(a) & set(b) if len(a[t]) >= k and len(b[t]) >= k]
    return _estimate(_bootstrap([b, a], [1.0, -1.0], k, rounds, seed), len(shared))


def mean_interval(
    values: Sequence[float], *, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0
) -> Estimate:
    """The mean of ``values`` with a 95% bootstrap interval (e.g. per-problem log speedups).

    >>> mean_interval([1.0, 1.0, 1.0]).text()
    '1.000 [1.000, 1.000]'
    """
    if not values:
        return Estimate(value=None)
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    reps = data[rng.integers(0, len(data), size=(rounds, len(data)))].mean(axis=1)
    alpha = (1 - LEVEL) / 2
    low, high = np.quantile(reps, [alpha, 1 - alpha])
    return Estimate(value=float(data.mean()), low=float(low), high=float(high), problems=len(data))
