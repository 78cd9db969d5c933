"""Reward functions: small, named maps from a Verdict to a float.

=========  ==================================================================
name       formula
=========  ==================================================================
binary     1 if passed else 0
shaped     1 if passed; 0.1 if it compiled but failed; 0 otherwise
speedup    0 if not passed; else clip(log2(speedup), lo=-1, hi=3) clipped at 0
           from below unless ``allow_negative`` (1.0 = 2x faster); when no
           timing ran, the binary reward
tiered     0 if not passed; 0.2 at < 1x, then steps at 1x, 1.2x, 1.5x, 2x, 3x
           to 0.4, 0.6, 0.8, 0.9, 1.0
sol        0 if not passed or a suspected hack; else SOL-ExecBench's
           1 / (1 + (T - T_sol) / (T_baseline - T_sol)) clipped to [0, 1]: 1 at
           the device's speed of light, 0.5 at the baseline's time, towards 0
           when slower; when T, T_baseline or T_sol is unknown, the binary reward
=========  ==================================================================

Every speed reward sees the speedup the timing shows (``timing_stats.credited_speedup``): the
measured one where its bootstrap CI excludes 1 and it is more than ``NOISE_MARGIN`` (3%) from
1, else exactly 1.0 -- so resubmitting the baseline earns nothing for noise (``speedup``: 0,
``tiered``: the 1x tier, ``sol``: 0.5, the baseline's own score).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from cudaenv.errors import SpecError
from cudaenv.grading.timing_stats import credited_speedup
from cudaenv.grading.verdict import Verdict

RewardFn = Callable[[Verdict], float]


def binary(verdict: Verdict) -> float:
    """1.0 when every test passed, else 0.0 (None, i.e. could not run, is 0)."""
    return 1.0 if verdict.passed else 0.0


def shaped(verdict: Verdict, *, compile_credit: float = 0.1) -> float:
    """Binary plus partial credit for a solution that compiled but failed."""
    if verdict.passed:
        return 1.0
    return compile_credit if verdict.compiled and not verdict.suspected_hack else 0.0


def speedup(
    verdict: Verdict, *, lo: float = -1.0, hi: float = 3.0, allow_negative: bool = False
) -> float:
    """log2 of the credited speedup over the baseline, clipped to [lo, hi]; 0 when not passed."""
    if not verdict.passed:
        return 0.0
    shown = credited_speedup(verdict)
    if shown is None:
        return binary(verdict)
    value = max(lo, min(hi, math.log2(shown)))
    return value if allow_negative else max(0.0, value)


TIERS: tuple[tuple[float, float], ...] = (
    (3.0, 1.0),
    (2.0, 0.9),
    (1.5, 0.8),
    (1.2, 0.6),
    (1.0, 0.4),
)


def tiered(verdict: Verdict) -> float:
    """Step reward by speedup tier (see the module table)."""
    if not verdict.passed:
        return 0.0
    shown = credited_speedup(verdict)
    if shown is None:
        return binary(verdict)
    for threshold, value in TIERS:
        if shown >= threshold:
            return value
    return 0.2


def sol(verdict: Verdict) -> float:
    """How much of the gap between the baseline and the speed of light the solution closed,
    as SOL-ExecBench scores it (see the module table). A baseline already at the bound
    (``T_baseline <= T_sol``) leaves no gap: 1 for matching it, else 0."""
    if not verdict.passed or verdict.suspected_hack:
        return 0.0
    t, base, t_sol = verdict.solution_ms, verdict.baseline_ms, verdict.sol_ms
    if t is None or base is None or t_sol is None:
        return binary(verdict)
    if credited_speedup(verdict) == 1.0:  # no difference the timing shows: the baseline's time
        t = base
    gap = base - t_sol
    if gap <= 0:
        return 1.0 if t <= base else 0.0
    if t <= t_sol:  # the formula's value is above 1 (or undefined) here: clipped
        return 1.0
    return 1.0 / (1.0 + (t - t_sol) / gap)


REWARDS: dict[str, RewardFn] = {
    "binary": binary,
    "shaped": shaped,
    "speedup": speedup,
    "tiered": tiered,
    "sol": sol,
}
DEFAULT_BY_MODE = {"solve": "binary", "optimize": "speedup", "repair": "binary"}


def get_reward(reward: str | RewardFn | None, mode: str = "solve") -> RewardFn:
    """Resolve a reward by name (or the mode's default); a callable is returned as is."""
    if callable(reward):
        return reward
    name = reward or DEFAULT_BY_MODE.get(mode, "binary")
    try:
        return REWARDS[name]
    except KeyError:
        raise SpecError(
            f"unknown reward {name!r}; choose one of {sorted(REWARDS)}", field="reward"
        ) from None
