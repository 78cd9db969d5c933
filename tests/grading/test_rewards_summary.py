from __future__ import annotations

import json
import math

import pytest

from cudaenv.errors import SpecError
from cudaenv.grading import rewards
from cudaenv.grading.summary import Graded, pass_at_k, summarise
from cudaenv.grading.timing import parse_custom_ms, speedup_ci
from cudaenv.grading.verdict import StageResult, Verdict


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
    assert s["speedup"]["fast_1"] == pytest.approx(1 / 3)  # a's failure counts as not fast
    assert s["speedup"]["over"] == 3 and s["speedup"]["count"] == 2


def _skipped(task_id: str = "t") -> Verdict:
    """What the grader returns without a GPU: built, the GPU stages skipped."""
    return Verdict(
        task_id=task_id,
        compiled=True,
        passed=None,
        stages={
            "build": StageResult(status="ok", exit_code=0),
            "test": StageResult(status="skipped", reason="no GPU"),
        },
        reason="compiled; GPU stages skipped (no GPU)",
    )


def _ran(task_id: str, passed: bool, speedup: float | None = None) -> Verdict:
    test = StageResult(status="ok" if passed else "failed", exit_code=0 if passed else 1)
    return Verdict(
        task_id=task_id,
        compiled=True,
        passed=passed,
        speedup=speedup,
        stages={"build": StageResult(status="ok", exit_code=0), "test": test},
        failure=None if passed else "agent",
        reason="" if passed else "tests failed",
    )


def _infra(task_id: str) -> Verdict:
    return Verdict(task_id=task_id, passed=None, failure="infrastructure", reason="sandbox died")


def g(task_id: str, verdict: Verdict, group: str = "g", sample: int = 0) -> Graded:
    return Graded(task_id=task_id, group=group, sample=sample, verdict=verdict)


def test_all_not_run_is_null_not_zero() -> None:
    """16 C++ problems on a machine without a GPU: no rate, the count of what did not run."""
    rows = [g(f"p{i}", _skipped(f"p{i}")) for i in range(16)]
    s = summarise(rows, ks=[1])
    assert s["pass_at_k"] == {"pass@1": None}
    assert (s["not_run"], s["run"], s["samples"], s["passed"]) == (16, 0, 16, 0)
    assert s["speedup"]["geomean"] is None and s["speedup"]["fast_1"] is None
    assert s["groups"]["g"]["pass_at_k"] == {"pass@1": None}
    assert s["groups"]["g"]["not_run"] == 16
    assert json.loads(json.dumps(s))["pass_at_k"]["pass@1"] is None  # null in summary.json


def test_some_not_run_rates_are_over_the_samples_that_ran() -> None:
    rows = [
        g("a", _ran("a", True), sample=0),
        g("a", _skipped("a"), sample=1),  # not a failure: a's pass@1 is 1/1
        g("b", _ran("b", False)),
        g("c", _skipped("c")),  # c never ran: it is left out of pass@k entirely
    ]
    s = summarise(rows, ks=[1, 2])
    assert s["pass_at_k"]["pass@1"] == pytest.approx(0.5)  # mean of a (1.0) and b (0.0)
    assert s["pass_at_k"]["pass@2"] is None  # a and b have one sample that ran each
    assert (s["run"], s["not_run"], s["infrastructure_failures"]) == (2, 2, 0)


def test_infrastructure_and_not_run_are_counted_apart() -> None:
    rows = [g("a", _infra("a")), g("b", _skipped("b")), g("b", _infra("b"), sample=1)]
    s = summarise(rows)
    assert s["pass_at_k"]["pass@1"] is None
    assert (s["run"], s["not_run"], s["infrastructure_failures"]) == (0, 1, 2)
    rows.append(g("c", _ran("c", False)))
    s = summarise(rows)
    assert s["pass_at_k"]["pass@1"] == 0.0 and s["run"] == 1  # a real failure is a real 0


def test_each_group_reports_its_own_not_run() -> None:
    rows = [
        g("k1", _ran("k1", True, speedup=2.0), group="kernels"),
        g("k2", _ran("k2", False), group="kernels"),
        g("r1", _skipped("r1"), group="runtime"),
        g("r2", _skipped("r2"), group="runtime"),
    ]
    s = summarise(rows)
    kernels, runtime = s["groups"]["kernels"], s["groups"]["runtime"]
    assert kernels["pass_at_k"]["pass@1"] == 0.5 and kernels["not_run"] == 0
    assert runtime["pass_at_k"]["pass@1"] is None and runtime["not_run"] == 2
    assert runtime["run"] == 0 and runtime["speedup"]["geomean"] is None
    assert kernels["speedup"]["fast_1"] == 0.5 and s["speedup"]["fast_1"] == 0.5
    assert s["pass_at_k"]["pass@1"] == 0.5 and s["not_run"] == 2


def test_speedups_leave_out_samples_whose_benchmark_did_not_run() -> None:
    """A pass without a measured speedup (benchmark skipped) is neither fast nor slow."""
    rows = [
        g("a", _ran("a", True, speedup=1.5)),
        g("b", _ran("b", True, speedup=None)),
        g("c", _skipped("c")),
        g("d", _infra("d")),
    ]
    sp = summarise(rows)["speedup"]
    assert (sp["count"], sp["over"]) == (1, 1)
    assert sp["fast_1"] == 1.0 and sp["fast_1.2"] == 1.0
    only_failures = summarise([g("e", _ran("e", False)), g("c", _skipped("c"))])["speedup"]
    assert only_failures["fast_1"] is None  # nothing was timed: no 0.0 either


def test_custom_timing_line_and_ci() -> None:
    assert parse_custom_ms("x\nCOMPUTE_EVAL_TIME_MS: 1.5\nCOMPUTE_EVAL_TIME_MS: 2.25\n") == 2.25
    assert parse_custom_ms("COMPUTE_EVAL_TIME_MS: fast") is None
    lo, hi = speedup_ci([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.0])
    assert 1.6 < lo <= 2.0 <= hi < 2.5


def _sol_verdict(t: float | None, base: float | None = 10.0, t_sol: float | None = 2.0, **kw):
    return Verdict(task_id="t", passed=True, solution_ms=t, baseline_ms=base, sol_ms=t_sol, **kw)


def test_sol_reward_edges() -> None:
    """SOL-ExecBench's 1 / (1 + (T - T_sol) / (T_b - T_sol)), clipped to [0, 1]."""
    assert rewards.sol(_sol_verdict(2.0)) == 1.0  # at the speed of light
    assert rewards.sol(_sol_verdict(10.0)) == pytest.approx(0.5)  # the baseline's time
    assert rewards.sol(_sol_verdict(6.0)) == pytest.approx(1 / (1 + 4 / 8))
    assert rewards.sol(_sol_verdict(18.0)) == pytest.approx(1 / 3)  # slower than the baseline
    assert 0 < rewards.sol(_sol_verdict(1e9)) < 1e-6  # towards 0, never below
    assert rewards.sol(_sol_verdict(1.0)) == 1.0  # under the bound: clipped, not above 1
    assert rewards.sol(_sol_verdict(-6.0)) == 1.0  # where the raw formula divides by zero
    assert rewards.sol(_sol_verdict(3.0, base=2.0)) == 0.0  # baseline at the bound: no gap
    assert rewards.sol(_sol_verdict(2.0, base=2.0)) == 1.0
    assert rewards.sol(Verdict(task_id="t", passed=False, solution_ms=2.0, sol_ms=2.0)) == 0.0
    assert rewards.sol(_sol_verdict(5.0, suspected_hack=["impossible timing"])) == 0.0
    assert rewards.sol(_sol_verdict(5.0, t_sol=None)) == 1.0  # no work declared: binary
    assert rewards.sol(_sol_verdict(None)) == 1.0  # not timed: binary
    assert rewards.get_reward("sol") is rewards.sol


def test_summary_reports_the_mean_sol_fraction() -> None:
    def timed(task_id: str, fraction: float | None, passed: bool = True) -> Graded:
        ran = _ran(task_id, passed, speedup=2.0).model_copy(update={"sol_fraction": fraction})
        return g(task_id, ran)

    rows = [timed("a", 0.2), timed("b", 0.6), timed("c", None), timed("d", 0.9, passed=False)]
    rows.append(g("e", _skipped("e")))
    s = summarise(rows)
    assert s["sol"] == {"count": 2, "mean_fraction": pytest.approx(0.4), "median_fraction": 0.4}
    assert s["groups"]["g"]["sol"]["count"] == 2
    none = summarise([g("e", _skipped("e"))])["sol"]
    assert none == {"count": 0, "mean_fraction": None, "median_fraction": None}


def _failed(task_id: str, stage: str, reason: str, hack: bool = False) -> Verdict:
    verdict = Verdict(task_id=task_id, mode="solve", passed=False, failure="agent", reason=reason)
    verdict.stages["static"] = StageResult(status="ok")
    verdict.stages[stage] = StageResult(status="failed", reason=reason)
    if hack:
        verdict.suspected_hack.append(reason)
    return verdict


def test_failures_are_counted_by_group_stage_and_reason() -> None:
    pre_main = "forbidden construct: {}: initialiser calls '{}': the solution's own code"
    rows = [
        g("a", _failed("a", "toolchain", pre_main.format("solution.cu", "f()"), True), "cccl"),
        g("b", _failed("b", "toolchain", pre_main.format("kernel.cu", "g()"), True), "cccl"),
        g("c", _failed("c", "build", "build failed: exit code 1"), "mathlibs"),
        g("d", _failed("d", "build", "build failed: exit code 2"), "mathlibs"),
        g("e", _skipped("e"), "cccl"),
    ]
    s = summarise(rows)
    assert s["failed"] == 4 and s["suspected"] == 2
    assert s["failed_by_stage"] == {"build": 2, "toolchain": 2}
    assert s["groups"]["cccl"]["failed_by_stage"] == {"toolchain": 2}
    # the same cause counts once, whatever file or name it names
    assert [(f["group"], f["kind"], f["stage"], f["count"]) for f in s["failures"]] == [
        ("cccl", "agent", "toolchain", 2),
        ("mathlibs", "agent", "build", 2),
    ]
    assert s["failures"][0]["examples"] == ["a", "b"]
    assert "<file>" in s["failures"][0]["reason"] and "'…'" in s["failures"][0]["reason"]
    json.dumps(s)  # summary.json
