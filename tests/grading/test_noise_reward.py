"""Optimize mode rewards only what the timing shows (issue 32): samples are injected through
the grader's own ``record_timings``, so the verdict is built the way a benchmark builds it."""

from __future__ import annotations

import math

import pytest

from cudaenv.grading import rewards
from cudaenv.grading.timing import record_timings
from cudaenv.grading.timing_stats import (
    NOISE_MARGIN,
    credited_speedup,
    shows_difference,
    speedup_ci,
)
from cudaenv.grading.verdict import Verdict


def timed(solution: list[float], baseline: list[float], sol_ms: float | None = None) -> Verdict:
    v = Verdict(task_id="t", mode="optimize", passed=True, compiled=True, sol_ms=sol_ms)
    record_timings(v, solution, baseline, None, "region")
    return v


# a byte-for-byte copy of the baseline, timed beside it: the same distribution on both sides
COPY_SOL = [10.1, 9.9, 10.2, 9.8, 10.05]
COPY_BASE = [10.0, 10.2, 9.9, 10.1, 10.3]


def test_a_copy_of_the_baseline_earns_nothing_for_noise() -> None:
    v = timed(COPY_SOL, COPY_BASE, sol_ms=2.0)
    # the raw estimate (median over median) says "faster": 10.1 / 10.05
    assert v.speedup == pytest.approx(10.1 / 10.05)
    assert credited_speedup(v) == 1.0
    assert rewards.speedup(v) == 0.0
    assert rewards.tiered(v) == 0.4  # the 1x tier, whichever side of 1 the noise fell
    assert rewards.sol(v) == pytest.approx(0.5)  # the baseline's own score


def test_a_clear_speedup_is_paid_in_full() -> None:
    v = timed([5.0, 5.1, 4.9, 5.0, 5.05], [10.0, 10.2, 9.9, 10.1, 10.3])
    assert v.speedup == pytest.approx(10.1 / 5.0)
    # the paired bootstrap (seeded) keeps the whole interval above 1
    assert v.speedup_ci is not None and v.speedup_ci[0] > 1.0
    assert credited_speedup(v) == v.speedup
    assert rewards.speedup(v) == pytest.approx(math.log2(v.speedup))
    assert rewards.tiered(v) == 0.9


def test_a_noisy_solution_whose_ci_straddles_one_gets_no_credit() -> None:
    v = timed([8.0, 12.0, 7.0, 13.0, 9.0], [10.0] * 5)
    assert v.speedup == pytest.approx(10.0 / 9.0)  # beyond the margin...
    assert v.speedup_ci is not None and v.speedup_ci[0] < 1.0 < v.speedup_ci[1]  # ...not shown
    assert rewards.speedup(v) == 0.0


def test_a_shown_slowdown_stays_a_slowdown() -> None:
    v = timed([20.0, 20.2, 19.9, 20.1, 20.0], [10.0, 10.1, 9.9, 10.0, 10.05])
    assert v.speedup == pytest.approx(10.0 / 20.0)
    assert credited_speedup(v) == v.speedup
    assert rewards.speedup(v, allow_negative=True) == pytest.approx(math.log2(v.speedup))
    assert rewards.tiered(v) == 0.2


def test_the_margin_alone_decides_without_a_ci() -> None:
    inside = 1.0 + NOISE_MARGIN * 0.9
    outside = 1.0 + NOISE_MARGIN * 1.5
    assert not shows_difference(inside, None)
    assert not shows_difference(1.0 / inside, None)  # symmetric on a log scale
    assert shows_difference(outside, None) and shows_difference(1.0 / outside, None)
    one = Verdict(task_id="t", passed=True, speedup=inside)
    assert rewards.speedup(one) == 0.0
    assert rewards.speedup(Verdict(task_id="t", passed=True, speedup=2.0)) == 1.0


def test_interleaved_rounds_are_resampled_as_pairs() -> None:
    """A drift both sides saw in the same round (clock ramp) cancels in a paired bootstrap."""
    base = [10.0, 20.0, 30.0, 40.0, 50.0]
    ci = speedup_ci([b / 2 for b in base], base)
    assert ci is not None and ci[0] == pytest.approx(2.0) and ci[1] == pytest.approx(2.0)
    unpaired = speedup_ci([b / 2 for b in base], [*base, 30.0])
    assert unpaired is not None and unpaired[0] < 1.5  # unequal counts: resampled apart


def test_no_baseline_timing_falls_back_to_binary() -> None:
    v = Verdict(task_id="t", passed=True, speedup=None)
    assert credited_speedup(v) is None
    assert rewards.speedup(v) == 1.0 and rewards.tiered(v) == 1.0
