"""The prepared GPU gate (``bench/gpu_gate.py``, ``scripts/gpu-check.sh``) on the CPU: the two
calls its header prescribes cover every stage once and fit their budgets and the device's 15
minutes; the ``families`` stage runs the generated problems' GPU test and reports what ran
(here: nothing, the test skips without a GPU, so the stage is not ok)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from cudaenv.toolkit import has_gpu

ROOT = Path(__file__).resolve().parent.parent
DEVICE_BUDGET_S = 15 * 60
START_UP_S = 60  # one start-up, the second call on the warm machine
INSTALL_S = 20  # the wheels' install, per call


def _gate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_gate", ROOT / "bench" / "gpu_gate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_two_calls_cover_every_stage_within_their_budgets() -> None:
    caps = _gate().CAPS_S
    header = (ROOT / "scripts" / "gpu-check.sh").read_text()
    calls = re.findall(r'GATE_STAGES="([^"]+)" GATE_BUDGET_S=(\d+) bash', header)
    assert len(calls) == 2, calls
    stages = [s for names, _ in calls for s in names.split()]
    assert sorted(stages) == sorted(caps), "each stage in exactly one call"
    for names, budget in calls:
        assert sum(caps[s] for s in names.split()) <= int(budget), (names, budget)
    total = sum(int(b) for _, b in calls) + 2 * INSTALL_S + START_UP_S
    assert total <= DEVICE_BUDGET_S, total
    for stage, cap in caps.items():  # the header states each cap as the code has it
        assert re.search(rf"#   {stage} (?:(?!\(cap ).)*\(cap {cap} s\)", header, re.S), stage


@pytest.mark.skipif(has_gpu(), reason="exercises the stage's report without a GPU")
def test_families_stage_reports_a_run_that_did_nothing(tmp_path: Path) -> None:
    gate = _gate()
    g = gate.Gate(tmp_path, 300)
    gate.stage_families(g, 120, 1)
    summary = json.loads((tmp_path / "gate.json").read_text())["families"]
    assert summary["ok"] is False and summary["problems"] == 0 and summary["of"] == 1
    assert summary["rc"] == 0  # pytest ran the test, which skipped
    assert "skipped" in (tmp_path / "gate" / "families.txt").read_text()


def test_the_gate_fails_a_benchmarked_problem_without_a_speed_of_light() -> None:
    """Issue 32's rule, enforced by the gate: a timed reference must come with a SOL fraction."""
    from cudaenv.problems.loader import load_suite

    gate = _gate()
    suite = {p.task_id: p for p in load_suite("builtin")}
    bench = suite["streams-pipeline"]
    assert gate.missing_sol(bench, {"sol_fraction": 0.4}) is None
    assert "no speed-of-light" in gate.missing_sol(bench, {"sol_fraction": None})
    bare = bench.model_copy(update={"metadata": bench.metadata.model_copy(update={"work": None})})
    assert "without metadata.work" in gate.missing_sol(bare, {"sol_fraction": None})
    no_bench = next(p for p in suite.values() if not p.has_benchmark)
    assert gate.missing_sol(no_bench, {"sol_fraction": None}) is None


def test_every_benchmarked_problem_has_a_speed_of_light_on_every_known_device() -> None:
    """What the gate's rule needs, checked without a GPU: bundled and generated problems that
    are benchmarked declare work whose roofline time is positive on every device the table has
    (runtime-API problems too: streams-pipeline and unified-memory are bound by the host link)."""
    from cudaenv.grading import speed_of_light as sol
    from cudaenv.problems.loader import load_suite

    problems = [*load_suite("builtin"), *load_suite("generated:seed=5,count=40")]
    benchmarked = [p for p in problems if p.has_benchmark]
    assert len(benchmarked) > 40
    for p in benchmarked:
        work = sol.work_of(p)
        assert work is not None, p.task_id
        for device in sol.BUILTIN_DEVICES:
            assert sol.sol_ms(work, device) > 0, p.task_id  # the floor may be 0: all in L2


def test_gpu_check_script_parses_and_its_plan_skips_every_stage_without_running(
    tmp_path: Path,
) -> None:
    """``bash -n`` and the dry run a GPU-less machine gets: each stage listed with its cap,
    nothing installed, nothing graded, exit 0 (issue 32)."""
    import os
    import subprocess

    script = ROOT / "scripts" / "gpu-check.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    env = {**os.environ, "OUT": str(tmp_path / "out")}
    res = subprocess.run(
        ["bash", str(script), "--dry-run"], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    for stage, cap in _gate().CAPS_S.items():
        assert re.search(rf"^  {stage} +cap +{cap} s  dry run$", res.stdout, re.M), stage
    assert "(no stage ran)" in res.stdout and not (tmp_path / "out" / "gate.json").exists()


def test_gate_tables_show_each_stage_and_its_rows(tmp_path: Path, capsys) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import gpu_gate_extra

    gate = _gate().Gate(tmp_path, 60)
    gate.record("validate", {"task_id": "fused-axpby", "ok": True, "speedup": 1.5,
                             "sol_fraction": 0.61234, "problem": None})  # fmt: skip
    gate.finish("validate", True, 3.0, validated=1, of=1, failed=[])
    gate.finish("agreement", False, 1.0, rc=1)
    gpu_gate_extra.print_tables(tmp_path)
    out = capsys.readouterr().out
    assert re.search(r"^validate +ok +3\.0 s", out, re.M)
    assert re.search(r"^agreement +FAILED", out, re.M)
    assert re.search(r"^fused-axpby +True +1\.5 +0\.6123", out, re.M), out


def test_agreement_stage_is_skipped_with_its_reason_without_computeeval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import gpu_gate_extra

    monkeypatch.delenv("COMPUTE_EVAL_PYTHON", raising=False)
    gate = _gate().Gate(tmp_path, 60)
    gpu_gate_extra.stage_agreement(gate, 30)
    summary = json.loads((tmp_path / "gate.json").read_text())["agreement"]
    assert summary["ok"] is True and "COMPUTE_EVAL_PYTHON" in summary["skipped"]
