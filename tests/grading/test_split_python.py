"""The bundled cuda_python problems as split harnesses (py-vector-add has its own tests).

Each checker's cases, answered by NumPy written here (not the checker's own functions), pass
``verify``; mutants of the right answer fail it, one per kind of check, each failure naming
its case and array: a wrong value, a NaN, an element never written (the runner's poison), a
missing output, a wrong dtype or shape, a host input the call modified, the runner's own
error, and the problem's own typical mistake. The perf stage checks every timed call's output.
The checkers run at numba-cuda's simulator sizes (``NUMBA_ENABLE_CUDASIM=1``, as the grader
gives them on a machine without a GPU); the GPU sizes are drawn too.

On the simulator the whole harness runs here (``slow``): the reference and the baseline pass
through ``cudaenv.grade``, a do-nothing solution fails there on the checker's verdict, and the
reference's benchmark run (runner ``--perf``) passes the perf checker.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import cudaenv
from cudaenv.problems import load_suite
from cudaenv.problems.model import Solution, SourceFile
from tests.grading.split_answers import (
    Checked,
    Inputs,
    Mutation,
    Outputs,
    drop,
    poison,
    retype,
    run_python,
)

pytest.importorskip("numba")

SUITE = load_suite("builtin")
SIM = {"NUMBA_ENABLE_CUDASIM": "1"}
SEED = 7_340_033


# --- independent answers: each problem's outputs from a case's inputs ----------------------


def _relu(c: Inputs) -> np.ndarray:
    x, lo, hi = c["x"], np.float32(c["lo"]), np.float32(c["hi"])
    y = x.copy()
    y[x >= hi] = hi
    y[x <= lo] = 0.0
    return y


def _histogram(c: Inputs) -> np.ndarray:
    counts = np.zeros(int(c["nbins"]), np.int32)
    np.add.at(counts, c["values"], 1)
    return counts


def _matmul(c: Inputs) -> np.ndarray:
    return np.einsum("ik,kj->ij", c["A"].astype(np.float64), c["B"].astype(np.float64)).astype(
        np.float32
    )


def _scan(c: Inputs) -> np.ndarray:
    return np.array(list(itertools.accumulate(c["x"].tolist())), dtype=np.int32).reshape(
        c["x"].shape
    )


def _max(x: np.ndarray) -> np.ndarray:
    return np.array(sorted(x.tolist())[-1] if x.size else -np.inf, np.float64)  # 0-d


def _gray(c: Inputs) -> np.ndarray:
    r, g, b = (c["rgb"][..., k].astype(np.uint32) for k in range(3))
    return ((r * 77 + g * 150 + b * 29 + 128) // 256).astype(np.uint8)


def _stencil(c: Inputs) -> np.ndarray:
    x, w = c["x"].astype(np.float64), c["weights"].astype(np.float64)
    if x.size == 0:
        return np.zeros(0, np.float32)
    r = (w.size - 1) // 2
    full = np.convolve(x, w[::-1], mode="full")  # full[i + r] = sum_k w[k] x[i + k - r]
    return full[r : r + x.size].astype(np.float32)


def both(name: str, value: np.ndarray, **inputs: np.ndarray) -> Outputs:
    """A test case's outputs: the host and the device call's, and the host inputs back."""
    return {f"host_{name}": value, f"device_{name}": value.copy(), **inputs}


# --- mutations ------------------------------------------------------------------------------


def bump(name: str, index: int = -1) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        flat = out[name].reshape(-1)  # type: ignore[union-attr]
        if flat.dtype.kind in "iu":
            flat[index] ^= 1  # off by one, without overflow
        else:
            flat[index] += 1.0

    return mutate


def nan(name: str) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        out[name].reshape(-1)[0] = np.nan  # type: ignore[union-attr]

    return mutate


def unwritten(name: str) -> Mutation:
    """The last element left as the runner's poison (never written)."""

    def mutate(out: Outputs, _: Inputs) -> None:
        arr = out[name]
        arr.reshape(-1)[-1:] = poison(arr.dtype, 1)  # type: ignore[union-attr]

    return mutate


def shorten(name: str) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        arr = out[name]
        out[name] = arr[:-1] if arr.ndim else arr.reshape(1)  # type: ignore[union-attr]

    return mutate


def runner_error(out: Outputs, _: Inputs) -> None:
    out["error.txt"] = "CUDA error: an illegal memory access was encountered\n"


def replace(name: str, make: Callable[[Inputs], np.ndarray]) -> Mutation:
    def mutate(out: Outputs, inputs: Inputs) -> None:
        out[name] = make(inputs)

    return mutate


@dataclass
class Spec:
    """A problem's independent answers and mutants: ``plan`` holds (kind, case, mutation,
    what its one failure says)."""

    answer: Callable[[Inputs], Outputs]
    perf: Callable[[Inputs], Outputs]
    plan: list[tuple[str, str, Mutation, str]] = field(default_factory=list)


def _timed(name: str, make: Callable[[Inputs], np.ndarray]) -> Callable[[Inputs], Outputs]:
    """The perf outputs: ``name<k>`` for every timed call, each the same answer."""
    return lambda c: {f"{name}{k}": make(c) for k in range(int(c["iters"]))}


def _common(main: str, case: str, size: int, host_input: str, what: str) -> list:
    """The kinds every problem's outputs can get wrong, on ``case`` (``size`` elements)."""
    return [
        ("wrong-value", case, bump(f"host_{main}", 3), f"host_{main}: 1 of {size} elements wrong"),
        ("unwritten", case, unwritten(f"device_{main}"), f"device_{main}: 1 of {size} elements"),
        ("missing", case, drop(f"device_{main}"), f"device_{main}.npy is missing"),
        ("wrong-shape", case, shorten(f"host_{main}"), f"host_{main}: shape"),
        ("input-modified", case, bump(host_input, 0), f"{what} (modified by the call)"),
        ("runner-error", case, runner_error, "the runner reported an error: CUDA error"),
    ]


def _reduce_perf(c: Inputs) -> Outputs:
    out = {}
    for k, (p, v) in enumerate(zip(c["pos"].tolist(), c["value"].tolist(), strict=True)):
        x = c["base"].copy()
        x[p] = v
        out[f"max{k}"] = _max(x)
    return out


def _lo_kept(out: Outputs, inputs: Inputs) -> None:
    """x == lo passes through instead of becoming 0 (a < where <= belongs)."""
    at = np.flatnonzero(inputs["x"] == np.float32(inputs["lo"]))
    out["host_out"][at] = inputs["x"][at]  # type: ignore[index]


SPECS = {
    "py-relu-clip": Spec(
        lambda c: both("out", _relu(c), host_x=c["x"].copy()),
        _timed("out", _relu),
        [
            *_common("out", "n257", 257, "host_x", "x"),
            ("nan", "n1000", nan("device_out"), "device_out: 1 of 1000 elements wrong"),
            ("wrong-dtype", "n9", retype("host_out", np.float64), "dtype <f8, expected <f4"),
            ("lo-kept", "n3001", _lo_kept, "host_out: 1 of 3001 elements wrong"),
        ],
    ),
    "py-histogram": Spec(
        lambda c: both("counts", _histogram(c), host_values=c["values"].copy()),
        _timed("counts", _histogram),
        [
            *_common("counts", "uniform", 256, "host_values", "values"),
            ("wrong-dtype", "skewed", retype("host_counts", np.int64), "dtype <i8, expected <i4"),
            (
                "count-moved",
                "2048-bins",
                replace("host_counts", lambda c: np.roll(_histogram(c), 1)),
                "host_counts: ",
            ),
        ],
    ),
    "py-matmul-shared": Spec(
        lambda c: both("C", _matmul(c), host_A=c["A"].copy(), host_B=c["B"].copy()),
        _timed("C", _matmul),
        [
            *_common("C", "m40-k50-n24", 960, "host_A", "A"),
            ("nan", "m17-k5-n33", nan("device_C"), "device_C: 1 of 561 elements wrong"),
            ("wrong-dtype", "m1-k1-n1", retype("host_C", np.float64), "dtype <f8, expected <f4"),
            (
                "transposed",
                "m16-k16-n16",
                replace("host_C", lambda c: _matmul({"A": c["A"], "B": c["B"].T.copy()})),
                "host_C: ",
            ),
        ],
    ),
    "py-prefix-sum": Spec(
        lambda c: both("out", _scan(c), host_x=c["x"].copy(), device_x=c["x"].copy()),
        _timed("out", _scan),
        [
            *_common("out", "n257", 257, "host_x", "host_x"),
            ("device-input-modified", "n900", bump("device_x", 5), "device_x (modified"),
            ("wrong-dtype", "n5", retype("host_out", np.int64), "dtype <i8, expected <i4"),
            (
                "exclusive",
                "ones-300",
                replace("host_out", lambda c: _scan(c) - c["x"]),
                "host_out: 300 of 300 elements wrong",
            ),
        ],
    ),
    "py-reduce-max": Spec(
        lambda c: {
            "host_max": _max(c["x"]),
            "device_max": _max(c["x"]),
            "host_x": c["x"].copy(),
            "device_x": c["x"].copy(),
        },
        _reduce_perf,
        [
            ("wrong-value", "max-first", bump("host_max"), "host_max: 1 of 1 elements wrong"),
            ("missing", "max-last", drop("device_max"), "device_max.npy is missing"),
            ("wrong-dtype", "single", retype("host_max", np.float32), "dtype <f4, expected <f8"),
            ("wrong-shape", "constant", shorten("device_max"), "device_max: shape (1,)"),
            ("input-modified", "all-negative", bump("host_x", 7), "host_x (modified"),
            ("device-input-modified", "uniform-1500", bump("device_x", 0), "device_x (modified"),
            ("runner-error", "max-last", runner_error, "the runner reported an error"),
            (
                "empty-not-minus-inf",
                "empty",
                replace("device_max", lambda c: np.array(0.0)),
                "device_max: 1 of 1 elements wrong",
            ),
        ],
    ),
    "py-rgb-to-gray": Spec(
        lambda c: both("gray", _gray(c), host_rgb=c["rgb"].copy()),
        _timed("gray", _gray),
        [
            *_common("gray", "h33-w65", 33 * 65, "host_rgb", "rgb"),
            ("wrong-dtype", "h7-w13", retype("host_gray", np.int32), "dtype <i4, expected |u1"),
            (
                "truncated",
                "h9-w300",
                replace(
                    "host_gray",
                    lambda c: (c["rgb"].astype(np.int64) @ np.array([77, 150, 29]) >> 8).astype(
                        np.uint8
                    ),
                ),
                "host_gray: ",
            ),
        ],
    ),
    "py-stencil-1d": Spec(
        lambda c: both("out", _stencil(c), host_x=c["x"].copy(), host_weights=c["weights"].copy()),
        _timed("out", _stencil),
        [
            *_common("out", "n300-r1", 300, "host_x", "x"),
            ("nan", "n257-r2", nan("device_out"), "device_out: 1 of 257 elements wrong"),
            ("weights-modified", "n700-r16", bump("host_weights", 0), "weights (modified"),
            (
                "wrapped-ends",
                "n40-r16",
                replace(
                    "host_out",
                    lambda c: np.array(
                        [
                            sum(
                                float(c["weights"][k]) * float(c["x"][(i + k - 16) % 40])
                                for k in range(33)
                            )
                            for i in range(40)
                        ],
                        np.float32,
                    ),
                ),
                "host_out: ",
            ),
        ],
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checked]:
    """Each problem's test-stage run at the simulator's sizes (one gen per problem)."""
    root = tmp_path_factory.mktemp("python-checkers")
    return {t: Checked(SUITE[t], root / t, SEED, env=SIM) for t in SPECS}


def test_every_python_problem_is_split_on_the_shared_runner() -> None:
    python = [p for p in SUITE if p.problem_type == "cuda_python"]
    assert {p.task_id for p in python} == {*SPECS, "py-vector-add"}
    for p in python:
        assert p.split and p.test_command == "python test/cudaenv_pyrunner.py", p.task_id
        assert p.benchmark_command == "python test/cudaenv_pyrunner.py --perf", p.task_id
        assert {"test/run.py", "test/cudaenv_pyrunner.py"} <= {f.path for f in p.test_files}


@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_independent_answers_pass(runs: dict[str, Checked], task_id: str) -> None:
    run = runs[task_id]
    outputs = {name: SPECS[task_id].answer(c) for name, c in run.inputs.items()}
    assert run.verify(outputs) == {"passed": True, "cases": len(outputs), "failures": []}


@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_each_kind_of_mistake_fails_naming_case_and_array(
    runs: dict[str, Checked], task_id: str
) -> None:
    spec = SPECS[task_id]
    found = runs[task_id].mutants(spec.answer, [(k, c, m) for k, c, m, _ in spec.plan])
    for kind, _, _, says in spec.plan:
        assert len(found[kind]) == 1 and says in found[kind][0], (kind, found[kind])


@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_the_cases_are_fresh_per_seed(tmp_path: Path, task_id: str) -> None:
    run = Checked(SUITE[task_id], tmp_path, SEED, env=SIM)
    again = Checked(SUITE[task_id], tmp_path / "again", SEED, env=SIM).inputs
    other = Checked(SUITE[task_id], tmp_path / "other", SEED + 1, env=SIM).inputs
    assert list(again) == list(run.inputs) == list(other)  # the same cases, in order
    same = [np.array_equal(a, b) for c in run.inputs for a, b in zip_inputs(run.inputs, again, c)]
    assert all(same)  # reproducible from the seed
    fresh = [
        not np.array_equal(a, b) for c in run.inputs for a, b in zip_inputs(run.inputs, other, c)
    ]
    assert any(fresh)  # fresh per run (fixed edge cases may stay the same)


def zip_inputs(a: dict, b: dict, case: str) -> list[tuple[np.ndarray, np.ndarray]]:
    assert a[case].keys() == b[case].keys()
    return [(a[case][k], b[case][k]) for k in a[case]]


@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_every_timed_call_is_checked(tmp_path: Path, task_id: str) -> None:
    run = Checked(SUITE[task_id], tmp_path, SEED, stage="perf", env=SIM)
    (perf,) = run.inputs.values()
    outputs = SPECS[task_id].perf(perf)
    assert len(outputs) >= 2
    assert run.verify({"perf": outputs})["passed"]
    last = sorted(outputs)[-1]
    bump(last)(outputs, perf)
    report = run.verify({"perf": outputs})
    assert not report["passed"] and report["failures"][0].startswith(f"perf: {last}: "), report


@pytest.mark.slow  # hundreds of MB of inputs
@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_on_a_gpu_the_cases_grow(tmp_path: Path, task_id: str) -> None:
    """Without the simulator the test stage adds its large cases (the GPU's sizes)."""
    sim = Checked(SUITE[task_id], tmp_path / "sim", SEED, env=SIM).inputs
    gpu = Checked(SUITE[task_id], tmp_path / "gpu", SEED, env={"NUMBA_ENABLE_CUDASIM": "0"})
    biggest = max(a.size for c in gpu.inputs.values() for a in c.values())
    assert len(gpu.inputs) > len(sim) and biggest >= 1_000_000


# --- the whole harness on numba-cuda's simulator ------------------------------------------

# a solution that launches a kernel doing nothing (and names what the static rules require)
NOTHING = """\
import numpy as np
from numba import cuda, float32


@cuda.jit
def _nothing(out):
    if cuda.grid(1) < 0:  # never: keeps cuda.atomic and cuda.shared in the source
        cuda.atomic.add(out, 0, 1)
        cuda.shared.array(1, float32)


def {name}({args}):
    _nothing[1, 32](np.zeros(1, np.int32))
    {tail}
"""
SIGNATURES = {
    "py-relu-clip": ("relu_clip", "x, lo, hi, out", ""),
    "py-histogram": ("histogram", "values, counts", ""),
    "py-matmul-shared": ("matmul", "A, B, C", ""),
    "py-prefix-sum": ("inclusive_scan", "x, out", ""),
    "py-reduce-max": ("reduce_max", "x", "return 0.0"),
    "py-rgb-to-gray": ("rgb_to_gray", "rgb, gray", ""),
    "py-stencil-1d": ("stencil_1d", "x, weights, out", ""),
}


def _nothing(task_id: str) -> Solution:
    name, args, tail = SIGNATURES[task_id]
    text = NOTHING.format(name=name, args=args, tail=tail)
    return Solution(task_id=task_id, files=[SourceFile(path="solution.py", content=text)])


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(SPECS))
def test_reference_and_baseline_pass_and_a_do_nothing_solution_fails(
    tmp_path: Path, task_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = SUITE[task_id]
    assert problem.solution is not None and problem.baseline_solution is not None
    ref = cudaenv.grade(problem, problem.solution, test_cache=False)
    assert ref.passed is True, ref.reason
    base = cudaenv.grade(problem, problem.baseline_solution, check_references=False)
    assert base.passed is True, base.reason
    nothing = cudaenv.grade(problem, _nothing(task_id), test_cache=False)
    assert nothing.passed is False and "wrong outputs" in (nothing.reason or ""), nothing.reason
    perf = Checked(problem, tmp_path / "perf", SEED, stage="perf", env=SIM)
    ran, report = run_python(problem, problem.solution.files, perf, tmp_path / "work")
    assert ran.returncode == 0 and report["passed"], ran.stderr[-2000:] + str(report)
