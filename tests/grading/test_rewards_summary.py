from __future__ import annotations

import math

import pytest

from cudaenv.errors import SpecError
from cudaenv.grading import rewards
from cudaenv.grading.summary import Graded, pass_at_k, summarise
from cudaenv.grading.timing import parse_custom_ms, speedup_ci
from cudaenv.grading.verdict import Verdict


def v(passed, speedup=None, compiled=True, failure=None) -> Verdict:
    return Verdict(task_id="t", passed=passed, speedup=speedup, compiled=compiled, failure=failure)


def test_rewards() -> None:
    assert (
        rewards.binary(v(True)) == 1
        and rewards.binary(v(None)) == 0
        and rewards.binary(v(False)) == 0
    )
    assert rewards.shaped(v(False)) == 0.1 and rewards.shaped(v(False, compiled=False)) == 0
    assert rewards.speedup(v(True, 2.0)) == pytest.approx(1.0)
    assert rewards.speedup(v(True, 100.0)) == 3.0
    assert rewards.speedup(v(True, 0.5)) == 0.0
    assert rewards.speedup(v(True, 0.5), allow_negative=True) == pytest.approx(-1.0)
    assert rewards.speedup(v(False, 4.0)) == 0
    assert [rewards.tiered(v(True, s)) for s in (0.5, 1.0, 1.3, 1.6, 2.5, 3.5)] == [
        0.2,
        0.4,
        0.6,
        0.8,
        0.9,
        1.0,
    ]
    assert rewards.get_reward(None, "optimize") is rewards.speedup
    assert rewards.get_reward(lambda x: 7.0)(v(True)) == 7.0
    with pytest.raises(SpecError, match="unknown reward"):
        rewards.get_reward("nope")


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(10, 0, 1) == 0
    assert pass_at_k(10, 10, 5) == 1
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - math.comb(2, 2) / math.comb(4, 2))
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_summary_groups_and_infrastructure() -> None:
    rows = [
        Graded(task_id="a", group="g1", sample=0, verdict=v(True, 2.0)),
        Graded(task_id="a", group="g1", sample=1, verdict=v(False)),
        Graded(task_id="b", group="g2", sample=0, verdict=v(True, 0.5)),
        Graded(task_id="b", group="g2", sample=1, verdict=v(None, failure="infrastructure")),
    ]
    s = summarise(rows, ks=[1, 2])
    assert s["infrastructure_failures"] == 1
    assert s["pass_at_k"]["pass@1"] == pytest.approx((0.5 + 1.0) / 2)
    assert s["pass_at_k"]["pass@2"] is None  # b has only one counted sample
    assert s["groups"]["g1"]["pass_at_k"]["pass@2"] == 1.0
    assert s["speedup"]["geomean"] == pytest.approx(1.0)
    assert s["speedup"]["fast_1"] == 0.5


def test_custom_timing_line_and_ci() -> None:
    assert parse_custom_ms("x\nCOMPUTE_EVAL_TIME_MS: 1.5\nCOMPUTE_EVAL_TIME_MS: 2.25\n") == 2.25
    assert parse_custom_ms("COMPUTE_EVAL_TIME_MS: fast") is None
    lo, hi = speedup_ci([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.0])
    assert 1.6 < lo <= 2.0 <= hi < 2.5
