"""The cccl and cuBLAS split harnesses end to end on the CPU: each problem's runner
(``test/runner.cpp``) built with a solution on cuemu (tests/families/cuemu: kernels as fibers,
device memory as host memory), run on the checker's own inputs, its outputs judged by the
checker's ``verify``, as the grader would.

Thrust and CUB cannot run there, so the cccl references do not; their baselines are plain
kernels and do. cuBLAS runs as a host stand-in (library_emu/cublas_v2.h: BLAS semantics,
cuBLAS's argument checks), so the cuBLAS references run too, and a reference with one
mistake (a transpose flag, a leading dimension, a batch stride) fails through the runner.
A solution that does nothing fails every problem. The test stage runs its smaller cases (a
fiber per GPU thread is slow); the perf stage runs a small case of the benchmark's shape
(the benchmark's own sizes take minutes here), built below and judged by the same ``verify``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate
from tests.grading.split_mutants import Run

pytestmark = pytest.mark.skipif(emulate.available() is not None, reason=str(emulate.available()))

SUITE = load_suite("builtin")
SEED = 77_001
HERE = Path(__file__).resolve().parent / "library_emu"
PRELUDE = '#include "cuemu_split.h"\n'

# the test cases each problem runs on cuemu (the larger ones are GPU-sized)
SMALL = {
    "cub-device-scan": ["empty", "single", "two-huge", "small", "tile-plus-one", "all-zeros"],
    "cub-radix-sort-pairs": ["empty", "single", "two", "all-equal-zero", "few-distinct", "hundred"],
    "cub-segmented-reduce": [
        "no-segments",
        "one-empty-segment",
        "one-element",
        "small-segments",
        "three-huge-offset-start",
    ],
    "thrust-sort-by-key": ["empty", "single", "two", "all-equal", "sixteen-cells", "as-many-cells"],
    "thrust-transform-reduce": ["empty", "single", "two", "small", "small-spread", "large-mean"],
    "thrust-unique-count": [
        "empty",
        "single",
        "pair-equal",
        "extremes",
        "all-distinct-descending",
        "few-distinct",
    ],
}  # the cuBLAS problems run all their cases (the stand-in is host code)

# a solution that does nothing (the right signature, no work)
NOTHING = {
    "cub-device-scan": "void exclusive_offsets(const int*, long long*, int, cudaStream_t) {}",
    "cub-radix-sort-pairs": "void rank_scores(const float*, const int*, float*, int*, int) {}",
    "cub-segmented-reduce": "void segment_max(const float*, const int*, int, float*) {}",
    "thrust-sort-by-key": "void sort_by_cell(int*, int*, int) {}",
    "thrust-transform-reduce": "void mean_and_variance(const float*, int, double*, double*) {}",
    "thrust-unique-count": "int count_distinct(const int*, int) { return 0; }",
    "cublas-axpy-dot": "float axpy_dot(cublasHandle_t, int, float, const float*, float*) "
    "{ return 0; }",
    "cublas-batched-gemm": "void batched_gemm(cublasHandle_t, int, int, int, int, const float*, "
    "const float*, float*) {}",
    "cublas-gemv-rows": "void gemv_rows(cublasHandle_t, int, int, const float*, const float*, "
    "float*) {}",
    "cublas-sgemm-bias": "void sgemm_bias(cublasHandle_t, int, int, int, float, const float*, "
    "const float*, const float*, float*) {}",
}

# a reference with one mistake, and the failure it must give: (original, replacement, failure)
MISTAKES = {
    "cublas-axpy-dot": (
        "    cublasSaxpy(handle, n, &a, x, 1, y, 1);\n    float result = 0.0f;\n",
        "    float result = 0.0f;\n",  # the dot of the old y, and y never updated
        "y: ",
    ),
    "cublas-batched-gemm": ("B, k, (long long)k * n", "B, k, 0LL", "C: "),  # one B for all
    "cublas-gemv-rows": (  # A read as column-major rows x cols
        "CUBLAS_OP_T, cols, rows, &one, A, cols",
        "CUBLAS_OP_N, rows, cols, &one, A, rows",
        "y: ",
    ),
    "cublas-sgemm-bias": "void sgemm_bias(cublasHandle_t, int, int, int, float, const float*, "
    "const float*, const float*, float*) {}",
}

# a reference with one mistake, and the failure it must give: (original, replacement, failure)
MISTAKES = {
    "cublas-axpy-dot": (
        "    cublasSaxpy(handle, n, &a, x, 1, y, 1);\n    float result = 0.0f;\n",
        "    float result = 0.0f;\n",  # the dot of the old y, and y never updated
        "y: ",
    ),
    "cublas-batched-gemm": ("B, k, (long long)k * n", "B, k, 0LL", "C: "),  # one B for all
    "cublas-gemv-rows": (
        "CUBLAS_OP_T, cols, rows, &one, A, cols",
        "CUBLAS_OP_N, rows, cols, &one, A, rows",
        "y: ",
    ),
    "cublas-sgemm-bias": ("CUBLAS_OP_N, CUBLAS_OP_N", "CUBLAS_OP_T, CUBLAS_OP_N", "C: "),
}


def _files(problem: Problem, solution: str) -> dict[str, str]:
    """The workspace: headers, the runner (after the prelude), the solution, the stand-ins."""
    files = {f.path: f.content for f in problem.context_files}
    for f in problem.test_files:
        files[f.path] = PRELUDE + f.content if f.path == "test/runner.cpp" else f.content
    files["solution.cu"] = solution
    for header in HERE.glob("*.h"):
        files[f"include/{header.name}"] = header.read_text()
    return files


def _nothing(problem: Problem) -> str:
    header = next(f.path for f in problem.context_files if f.path.endswith(".h"))
    return f'#include "{Path(header).name}"\n{NOTHING[problem.task_id]}\n'


def _run(problem: Problem, solution: str, work: Path, inputs: Path, perf: bool) -> Path:
    """Build the runner with ``solution`` on cuemu and run it on ``inputs``; its out/."""
    binary = emulate.build(
        _files(problem, solution), work, sources=["solution.cu", "test/runner.cpp"]
    )
    io = work / "io"
    shutil.rmtree(io, ignore_errors=True)
    shutil.copytree(inputs, io / "in")
    (io / "out").mkdir()
    done = subprocess.run(
        [str(binary), *(["--perf"] if perf else [])],
        cwd=work,
        env={**os.environ, "CUDAENV_IO": str(io)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return io / "out"


class Emulated:
    """One problem's checker run (test-stage inputs) and its emulated runner."""

    def __init__(self, task_id: str, root: Path) -> None:
        self.problem = SUITE[task_id]
        self.run = Run(self.problem, root, SEED)
        self.root = root
        names = SMALL.get(task_id, list(self.run.inputs))
        self.inputs = self.run.subset({n: n for n in names})

    def test(self, solution: str, label: str) -> dict:
        out = _run(self.problem, solution, self.root / label, self.inputs, perf=False)
        return self.run.box.verify("test", SEED, self.inputs, out)

    def perf(self, solution: str, label: str) -> dict:
        folder = _perf_inputs(self.problem.task_id, self.root / f"perf-in-{label}")
        out = _run(self.problem, solution, self.root / label, folder, perf=True)
        return self.run.box.verify("perf", SEED, folder, out)


# ---------------------------------------------------------------------------------------------
# small benchmark cases, each of its problem's perf_cases shape


def _perf_inputs(task_id: str, folder: Path) -> Path:
    rng = np.random.default_rng(SEED)
    i32, f32 = np.int32, np.float32
    timed, warmup = i32(3), i32(3)

    def ints(shape, low=-(2**31), high=2**31):
        return rng.integers(low, high, shape, dtype=np.int32)

    def floats(shape, low=-1.0, high=1.0):
        return rng.uniform(low, high, shape).astype(np.float32)

    def padded(a, value):
        return np.concatenate([a, np.full((a.shape[0], 1), value, a.dtype)], axis=1)

    n = 3000
    if task_id == "cub-device-scan":
        inputs = {"x": ints((3, n), 0, 2**31), "warmup": warmup, "guard": i32(16)}
    elif task_id == "cub-radix-sort-pairs":
        scores = padded((rng.integers(-50, 51, (3, n)) / 64).astype(f32), f32(1e38))
        inputs = {"scores": scores, "ids": padded(ints((3, n)), i32(7)), "warmup": warmup}
        inputs["guard"] = i32(16)
    elif task_id == "cub-segmented-reduce":
        inputs = {"timed": timed, "warmup": warmup, "guard": i32(16)}
        for r in range(3):
            lengths = rng.integers(0, 20, 400)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(i32)
            inputs[f"offsets{r}"] = offsets
            inputs[f"vals{r}"] = np.append(floats(int(offsets[-1])), np.full(3, f32(1e30)))
    elif task_id == "thrust-sort-by-key":
        inputs = {"cell": ints((3, n), 0, 100), "id": ints((3, n)), "warmup": warmup}
    elif task_id == "thrust-transform-reduce":
        inputs = {"x": floats((3, n), 5.0, 7.0), "warmup": warmup}
    elif task_id == "thrust-unique-count":
        inputs = {"values": padded(ints((3, n), -500, 500), i32(-(2**31) + 12345))}
        inputs["warmup"] = warmup
    elif task_id == "cublas-batched-gemm":
        m, n_, k, batch = 8, 6, 5, 20
        sizes = {"m": i32(m), "n": i32(n_), "k": i32(k), "batch": i32(batch)}
        inputs = {"A": floats(batch * m * k), "B": floats(batch * k * n_), **sizes}
        inputs |= {"iters": i32(3), "warmup": warmup}
    elif task_id == "cublas-gemv-rows":
        rows, cols = 50, 70
        inputs = {"A": floats(rows * cols), "x": floats(cols), "rows": i32(rows)}
        inputs |= {"cols": i32(cols), "iters": i32(4), "warmup": warmup}
    elif task_id == "cublas-sgemm-bias":
        m, n_, k = 40, 30, 20
        inputs = {"A": floats(m * k), "B": floats(k * n_), "bias": floats(m), "m": i32(m)}
        inputs |= {"n": i32(n_), "k": i32(k), "alpha": f32(0.5), "iters": i32(3)}
        inputs["warmup"] = warmup
    else:
        raise KeyError(task_id)
    (folder / "perf").mkdir(parents=True)
    (folder / "manifest.txt").write_text("perf\n")
    for name, value in inputs.items():
        np.save(folder / "perf" / f"{name}.npy", np.asarray(value))
    return folder


# ---------------------------------------------------------------------------------------------

CCCL = sorted(SMALL)
CUBLAS = sorted(MISTAKES)


@pytest.mark.slow  # cuemu builds and runs
@pytest.mark.parametrize("task_id", CCCL)
def test_cccl_baseline_passes_and_nothing_fails(task_id: str, tmp_path: Path) -> None:
    emu = Emulated(task_id, tmp_path)
    baseline = emu.problem.baseline_solution.files[0].content
    ok = emu.test(baseline, "baseline")
    assert ok == {"passed": True, "cases": len(SMALL[task_id]), "failures": []}, ok
    perf = emu.perf(baseline, "baseline-perf")
    assert perf == {"passed": True, "cases": 1, "failures": []}, perf
    nothing = emu.test(_nothing(emu.problem), "nothing")
    assert nothing["passed"] is False and nothing["failures"], nothing


@pytest.mark.slow  # cuemu builds and runs
@pytest.mark.parametrize("task_id", CUBLAS)
def test_cublas_reference_and_baseline_pass_and_mistakes_fail(task_id: str, tmp_path: Path) -> None:
    emu = Emulated(task_id, tmp_path)
    reference = emu.problem.solution.files[0].content
    everything = {"passed": True, "cases": len(emu.run.inputs), "failures": []}
    assert emu.test(reference, "reference") == everything
    if emu.problem.has_benchmark:
        assert emu.perf(reference, "reference-perf") == {"passed": True, "cases": 1, "failures": []}
    if emu.problem.baseline_solution is not None:
        baseline = emu.problem.baseline_solution.files[0].content
        assert emu.test(baseline, "baseline") == everything
    nothing = emu.test(_nothing(emu.problem), "nothing")
    assert nothing["passed"] is False and nothing["failures"], nothing
    original, replacement, failure = MISTAKES[task_id]
    assert original in reference
    wrong = emu.test(reference.replace(original, replacement), "mistake")
    assert wrong["passed"] is False, wrong
    assert any(f.split(": ", 1)[1].startswith(failure) for f in wrong["failures"]), wrong
