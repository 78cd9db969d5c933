"""Statistics of timed samples: a Timing from samples, the speedup's confidence interval, and
which speedup the timing actually shows (the noise rule every speed reward uses).

Why a noise rule: a byte-for-byte copy of a baseline, timed beside it, measures a "speedup" of
0.97-1.03 by chance; a log2 reward pays 0.015 for 1.01. A policy trained on that learns to
resubmit the baseline. So a speed reward sees :func:`credited_speedup`: the measured speedup
only where the timing shows a difference (the bootstrap CI excludes 1 AND the point estimate
is beyond :data:`NOISE_MARGIN`), else exactly 1.0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from cudaenv.grading.verdict import Timing, Verdict

#: a measured speedup within this relative margin of 1 is treated as no difference, even when
#: its CI excludes 1: interleaved rounds share systematic effects (clock ramps, the order of
#: the pair) that a bootstrap over a few rounds cannot see. 3% is above the A/A spread the
#: timing-noise bench measures for the bundled suite's region timings.
NOISE_MARGIN = 0.03
BOOTSTRAP_DRAWS = 1000


def summarise(samples: Sequence[float], source: str) -> Timing:
    """The Timing of ``samples`` (ms): all of them, their median and spread."""
    if not samples:
        return Timing(source=source)
    med = statistics.median(samples)
    spread = (max(samples) - min(samples)) if len(samples) > 1 else 0.0
    return Timing(
        samples_ms=[round(s, 6) for s in samples], median_ms=med, spread_ms=spread, source=source
    )


def speedup_ci(
    solution: Sequence[float], baseline: Sequence[float], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Bootstrap CI of median(baseline) / median(solution). Interleaved rounds (equal counts)
    are resampled as pairs, so a drift both sides saw in the same round cancels; otherwise
    each side is resampled on its own. None with fewer than two samples on a side."""
    if len(solution) < 2 or len(baseline) < 2:
        return None
    rng = np.random.default_rng(seed)
    s = np.asarray(solution, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if s.size == b.size:
        idx = rng.integers(0, s.size, size=(BOOTSTRAP_DRAWS, s.size))
        ratios = np.median(b[idx], axis=1) / np.median(s[idx], axis=1)
    else:
        bi = rng.integers(0, b.size, size=(BOOTSTRAP_DRAWS, b.size))
        si = rng.integers(0, s.size, size=(BOOTSTRAP_DRAWS, s.size))
        ratios = np.median(b[bi], axis=1) / np.median(s[si], axis=1)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def shows_difference(
    speedup: float, ci: tuple[float, float] | None, margin: float = NOISE_MARGIN
) -> bool:
    """Whether a measured speedup is a real difference: beyond ``margin`` of 1 and, where a CI
    exists, with the whole CI on the same side of 1."""
    if abs(math.log(speedup)) <= math.log1p(margin):  # symmetric: 1.03x and 1/1.03x
        return False
    if ci is None:
        return True
    lo, hi = ci
    return lo > 1.0 if speedup > 1.0 else hi < 1.0


def credited_speedup(verdict: Verdict, margin: float = NOISE_MARGIN) -> float | None:
    """The speedup a speed reward may pay for: the verdict's own where the timing shows a
    difference (:func:`shows_difference`), exactly 1.0 where it does not; None when nothing
    was timed against a baseline."""
    if verdict.speedup is None or verdict.speedup <= 0:
        return None
    return verdict.speedup if shows_difference(verdict.speedup, verdict.speedup_ci, margin) else 1.0


__all__ = [
    "NOISE_MARGIN",
    "credited_speedup",
    "shows_difference",
    "speedup_ci",
    "summarise",
]
