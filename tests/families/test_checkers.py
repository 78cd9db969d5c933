"""The trusted checkers of generated problems, without a GPU: outputs computed here in NumPy
(tests/families/answers.py, independent of the families' reference semantics) and laid out as
each runner writes them pass ``verify`` for one problem of every family, tests and benchmark;
every kind of wrong output fails, naming the case and the array (a wrong value, a NaN, a write
into the guard, a modified input, a missing file, a wrong dtype or shape, the runner's error, a
wrong timed call, a wrong host-array call); every run draws fresh inputs (the benchmark's
included: the seed lives in the checker alone, issue 27 item 5); a costly reference's sample
is drawn after the run, from the run's seed, never a fixed stride."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import numpy as np
import pytest

from cudaenv.families import family_names, get_family
from cudaenv.families.base import build_problem
from cudaenv.problems.model import Problem
from tests.families.answers import Arrays, poison, respond
from tests.grading.split_harness import CheckerDir, cases

SIM = {"NUMBA_ENABLE_CUDASIM": "1"}
# one parameter set per family, picked to cover its features (half, pitch, broadcast, affine,
# 4-D permutations, mirror boundaries, segments, epilogues, weights)
PARAMS: dict[str, dict] = {
    "reduce-axis": {"axis": "col", "op": "mean", "dtype": "f16", "pitched": True},
    "py-reduce-axis": {"axis": "mid", "op": "argmin", "dtype": "f64", "pitched": False},
    "elementwise": {"dtype": "f16", "expr": ["mul", ["tanh", "x0"], "x1"], "bcast": ["full", "col"]},
    "py-elementwise": {"dtype": "f32", "expr": ["sub", ["exp", "x0"], ["relu", "x1"]],
                       "bcast": ["full", "row"]},
    "rownorm": {"kind": "logsoftmax", "dtype": "f16", "regime": "short", "scale": 2.0, "eps": 0.0,
                "affine": "none"},
    "py-rownorm": {"kind": "layernorm", "dtype": "f64", "regime": "long", "scale": 1.0, "eps": 1e-5,
                   "affine": "gamma_beta"},
    "permute": {"perm": [2, 0, 3, 1], "dtype": "f16"},
    "py-permute": {"perm": [1, 2, 0], "dtype": "i32"},
    "stencil": {"dim": 2, "radius": 2, "shape": "cross", "boundary": "mirror", "dtype": "f32",
                "weights": [0.5, -0.25, 2.0, 1.0, -2.0, 0.125, 0.25, -1.0, 0.5]},
    "py-stencil": {"dim": 1, "radius": 3, "shape": "line", "boundary": "wrap", "dtype": "f64",
                   "weights": [0.25, -0.5, 1.0, 2.0, -1.0, 0.125, -0.25]},
    "scan": {"kind": "exclusive", "op": "max", "dtype": "i32", "layout": "1d", "segmented": False},
    "py-scan": {"kind": "exclusive", "op": "add", "dtype": "f32", "layout": "rows",
                "segmented": True},
    "matmul": {"trans_a": True, "trans_b": False, "epilogue": "bias_gelu", "dtype": "f16",
               "shape": "tall"},
    "indexing": {"op": "scatter_add", "dtype": "f32", "width": 33, "weighted": True,
                 "policy": "none", "dist": "hot"},
}  # fmt: skip
# the benchmark's answers here are cheap enough for these C++ problems (the others' layout is
# the same: family_check.py is one file); every Python one runs small on the simulator
CPP_PERF = ("reduce-axis", "matmul")
SEED, OTHER = 20261202, 7


@functools.cache
def problem(family: str) -> Problem:
    return build_problem(get_family(family), PARAMS[family])


def checker(family: str, root: Path) -> CheckerDir:
    python = problem(family).problem_type == "cuda_python"
    return CheckerDir(problem(family), root, SIM if python else None)


def test_every_family_is_covered() -> None:
    assert set(PARAMS) == set(family_names())


class Answered:
    """A checker's inputs of one stage and the correct runner's outputs for them."""

    def __init__(self, family: str, stage: str, root: Path) -> None:
        self.family, self.stage = family, stage
        self.check = checker(family, root / "check")
        self.inputs = self.check.gen(stage, SEED)
        self.outputs = respond(problem(family), self.inputs, root / "out")

    def verify(self, outputs: Path | None = None, seed: int = SEED) -> dict:
        return self.check.verify(self.stage, seed, self.inputs, outputs or self.outputs)

    def mutated(self, dest: Path, mutate) -> Path:
        """A copy of the outputs, each case's arrays passed through ``mutate(case, arrays)``."""
        shutil.copytree(self.outputs, dest)
        for case in (self.inputs / "manifest.txt").read_text().split():
            arrays = {f.stem: np.load(f) for f in (dest / case).glob("*.npy")}
            new = mutate(case, dict(arrays))
            for f in (dest / case).glob("*.npy"):
                f.unlink()
            for k, a in new.items():
                np.save(dest / case / f"{k}.npy", a, allow_pickle=False)
        return dest


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory):
    """``answered(family, stage)``: made once per module (the benchmark's are large)."""
    made: dict[tuple[str, str], Answered] = {}

    def get(family: str, stage: str) -> Answered:
        if (family, stage) not in made:
            root = tmp_path_factory.mktemp(f"{family}-{stage}")
            made[family, stage] = Answered(family, stage, root)
        return made[family, stage]

    return get


@pytest.mark.parametrize("family", sorted(PARAMS))
def test_independent_answers_pass(family: str, answered) -> None:
    stages = ["test"]
    if problem(family).problem_type == "cuda_python" or family in CPP_PERF:
        stages.append("perf")
    for stage in stages:
        run = answered(family, stage)
        report = run.verify()
        assert report["passed"], (stage, report["failures"])
        assert report["cases"] == len((run.inputs / "manifest.txt").read_text().split())


# --- every kind of check rejects --------------------------------------------------------


def _first(arrays: Arrays, name: str) -> Arrays:
    """``name``'s first element changed (+1, or a flipped sign bit past zero)."""
    a = arrays[name].copy()
    a[0] = a[0] + 1 if a.dtype.kind in "iu" else -a[0] - 1
    return {**arrays, name: a}


def _set(name: str, index: int, value: float):
    def apply(case: str, arrays: Arrays) -> Arrays:
        a = arrays[name].copy()
        a[index] = value
        return {**arrays, name: a}

    return apply


CPP_WRONG = {  # elementwise: x0 full, x1 a column vector, out (rows, cols); C++ layout
    "a wrong value": (lambda c, a: _first(a, "out"), "out: 1 of"),
    "a NaN": (_set("out", 0, np.nan), "out: 1 of"),
    "a write past the end": (_set("out", -1, 0.0), "out past the end"),
    "a modified input": (lambda c, a: _first(a, "x1.after"), "x1.after (modified by the call)"),
    "a write past an input": (_set("x0.after", -1, 0.0), "x0.after past the end"),
    "a missing output": (lambda c, a: {k: v for k, v in a.items() if k != "out"}, "out.npy is missing"),
    "a wrong dtype": (lambda c, a: {**a, "out": a["out"].astype(np.float32)}, "out: dtype <f4, expected <f2"),
    "a wrong shape": (lambda c, a: {**a, "out": a["out"][:-1]}, "out: shape"),
}  # fmt: skip


@pytest.mark.parametrize("what", sorted(CPP_WRONG))
def test_each_wrong_cpp_output_fails_naming_case_and_array(
    what: str, answered, tmp_path: Path
) -> None:
    mutate, message = CPP_WRONG[what]
    run = answered("elementwise", "test")
    target = "case4"  # 7 x 32

    def only(case: str, arrays: Arrays) -> Arrays:
        return mutate(case, arrays) if case == target else arrays

    report = run.verify(run.mutated(tmp_path / "out", only))
    assert not report["passed"]
    assert report["failures"] and all(f.startswith(f"{target}: ") for f in report["failures"])
    assert any(message in f for f in report["failures"]), report["failures"]


def test_the_runners_error_fails_the_case(answered, tmp_path: Path) -> None:
    run = answered("elementwise", "test")
    out = run.mutated(tmp_path / "out", lambda case, arrays: arrays)
    (out / "case2" / "error.txt").write_text("fused_elementwise: CUDA error an illegal address\n")
    report = run.verify(out)
    assert report["failures"] == [
        "case2: the runner reported an error: fused_elementwise: CUDA error an illegal address"
    ]


PY_WRONG = {  # py-stencil: x (n,), y (n,); Python layout, host and device variants
    "a wrong device value": (lambda c, a: _first(a, "y.device"), "y.device: 1 of"),
    "a wrong host value": (lambda c, a: _first(a, "y.host") if "y.host" in a else a, "y.host: 1 of"),
    "a modified host input": (lambda c, a: _first(a, "x.host") if "x.host" in a else a,
                              "x.host (modified by the call)"),
    "a modified device input": (lambda c, a: _first(a, "x.device"), "x.device (modified by"),
    "an element never written": (_set("y.device", 0, poison(1, np.float64)[0]), "y.device: 1 of"),
    "a missing host call": (lambda c, a: {k: v for k, v in a.items() if not k.endswith(".host")},
                            "y.host.npy is missing"),
}  # fmt: skip


@pytest.mark.parametrize("what", sorted(PY_WRONG))
def test_each_wrong_python_output_fails(what: str, answered, tmp_path: Path) -> None:
    mutate, message = PY_WRONG[what]
    run = answered("py-stencil", "test")
    target = "case2"  # n = 2, called with host arrays too

    def only(case: str, arrays: Arrays) -> Arrays:
        return mutate(case, arrays) if case == target else arrays

    report = run.verify(run.mutated(tmp_path / "out", only))
    assert not report["passed"] and any(message in f for f in report["failures"]), report


@pytest.mark.parametrize("family", ["reduce-axis", "py-elementwise"])
def test_every_timed_calls_output_is_checked(family: str, answered, tmp_path: Path) -> None:
    """The last timed call's output, wrong, fails the benchmark (every one is compared)."""
    run = answered(family, "perf")
    last = f"out.{int(np.load(run.inputs / 'perf' / 'calls.npy')) - 1}"
    report = run.verify(run.mutated(tmp_path / "out", lambda c, a: _first(a, last)))
    assert not report["passed"]
    assert [f.split(":")[1].strip() for f in report["failures"]] == [last], report


# --- a costly reference: a sample drawn after the run, from the run's seed --------------


def test_matmul_benchmark_is_sampled_at_verify_never_on_a_fixed_stride(
    answered, tmp_path: Path
) -> None:
    """Half of every timed call's entries wrong (the odd ones: a stride of any even step, as
    the old harness's 4096-entry stride was, misses them all) fails for any seed; which
    entries were compared depends on the verify's seed."""

    def odd_wrong(case: str, arrays: Arrays) -> Arrays:
        out = {}
        for k, a in arrays.items():
            a = a.copy()
            a[1 : a.size - 64 : 2] += np.float16(100)  # far outside the tolerance
            out[k] = a
        return out

    run = answered("matmul", "perf")
    out = run.mutated(tmp_path / "out", odd_wrong)
    report = run.verify(out)
    assert not report["passed"] and len(report["failures"]) == 3  # each timed call
    assert all("sampled elements" in f for f in report["failures"])
    assert run.verify(out) == report  # the sample is the run's: reproducible from its seed
    other = run.verify(out, seed=OTHER)  # the same outputs, another run's seed
    assert not other["passed"] and other["failures"] != report["failures"]


def test_matmul_benchmark_outputs_are_all_written_and_finite(answered, tmp_path: Path) -> None:
    def holes(case: str, arrays: Arrays) -> Arrays:
        c = arrays["C.1"].copy()
        c[12345] = poison(1, c.dtype)[0]  # never written (far from any sample, likely)
        c[54321] = np.float16(np.inf)
        return {**arrays, "C.1": c}

    run = answered("matmul", "perf")
    failures = run.verify(run.mutated(tmp_path / "out", holes))["failures"]
    assert any("C.1 (never written): 1 of" in f for f in failures), failures
    assert any("C.1 (not finite)" in f for f in failures), failures


# --- fresh inputs for every run -----------------------------------------------------------


def _differ(a: dict[str, dict[str, np.ndarray]], b: dict[str, dict[str, np.ndarray]]) -> None:
    """Same cases and shapes; every drawn float array (not a constant one) differs."""
    assert a.keys() == b.keys()
    for case in a:
        for name, arr in a[case].items():
            assert arr.shape == b[case][name].shape, (case, name)
            if arr.dtype.kind == "f" and arr.size > 1 and arr.min() != arr.max():
                assert not np.array_equal(arr, b[case][name]), (case, name)


@pytest.mark.parametrize("family", [f for f in sorted(PARAMS) if f.startswith("py-")])
def test_every_run_draws_fresh_inputs(family: str, tmp_path: Path) -> None:
    """Test runs and benchmark rounds alike: each seed its own inputs (a Python benchmark used
    to run seed 99 every round)."""
    check = checker(family, tmp_path / "check")
    for stage in ("test", "perf"):
        first, second = check.gen(stage, SEED), check.gen(stage, OTHER)
        _differ(cases(first), cases(second))
        assert cases(check.gen(stage, SEED)).keys() == cases(first).keys()


def test_no_generated_file_carries_a_token_or_a_seed() -> None:
    for family in PARAMS:
        p = problem(family)
        for f in (*p.test_files, *p.check_files):
            for word in ("CUDAENV_BENCH_SEED", "CUDAENV_COMPLETION_TOKEN", "CUDAENV_COMPLETE"):
                assert word not in f.content, (family, f.path, word)


def test_the_graders_checker_draws_each_benchmark_round_afresh(tmp_path: Path) -> None:
    """Through the grader's own Checker (a fresh local sandbox): two benchmark rounds, two
    seeds, two sets of inputs."""
    from cudaenv.grading.checker import Checker
    from cudaenv.sandbox.local import LocalSandbox

    p = problem("py-scan")
    check = Checker(p, lambda: LocalSandbox(isolation="rlimits"), lambda box: dict(SIM), 120)
    try:
        one, two = check.start("perf"), check.start("perf")
    finally:
        check.close()
    assert one.seed != two.seed
    drawn = [k for k in one.inputs if k.startswith("perf/x.") and ".shape" not in k]
    assert drawn and all(one.inputs[k] != two.inputs[k] for k in drawn)


def test_the_python_runner_answers_each_round_on_its_own_inputs(tmp_path: Path) -> None:
    """On numba-cuda's simulator: the real runner with the reference solution passes the
    benchmark of its round; the same outputs judged against another round's inputs fail."""
    pytest.importorskip("numba")
    import os
    import subprocess
    import sys

    p = problem("py-elementwise")
    check = checker("py-elementwise", tmp_path / "check")
    work = tmp_path / "work"
    for f in (*p.test_files, *p.solution.files):  # type: ignore[union-attr]
        (work / f.path).parent.mkdir(parents=True, exist_ok=True)
        (work / f.path).write_text(f.content)
    inputs, other = check.gen("perf", SEED), check.gen("perf", OTHER)
    shutil.copytree(inputs, work / ".cudaenv-io" / "in")
    (work / ".cudaenv-io" / "out").mkdir()
    env = {**os.environ, **SIM, "CUDAENV_IO": ".cudaenv-io"}
    run = subprocess.run(
        [sys.executable, "test/cudaenv_pyrunner.py", "--perf"], cwd=work, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    out = work / ".cudaenv-io" / "out"
    assert check.verify("perf", SEED, inputs, out)["passed"]
    assert not check.verify("perf", OTHER, other, out)["passed"]
