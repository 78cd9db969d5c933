"""Eight split cuda-kernels problems end to end without a GPU: the runner, linked with the
reference, the baseline or a do-nothing solution, runs on the CPU emulator
(tests/families/cuemu) on inputs the checker drew, and the checker decides: the reference and
the baseline pass, the NOP fails, in the test stage (the cases the emulator runs in seconds)
and in the benchmark path (the checker's own perf case at a small size: warm-up, timed calls,
every timed output checked). The runners also build with nvcc and the problem's flags."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate
from tests.families.gate import compile_directly
from tests.grading.split_harness import CheckerDir, decide_each, solutions
from tests.grading.split_kernels import SEED, SplitRun, build, check_module, run, small_perf

SUITE = load_suite("builtin")


@dataclass(frozen=True)
class Emulated:
    header: str
    nop: str  # the solution's functions, doing nothing
    names: str  # the test-stage cases the emulator runs (all but the largest), by name
    perf: Callable[[ModuleType, np.random.Generator], object]  # a small perf case

    @property
    def cases(self) -> list[str]:
        return self.names.split()


def _conv1d_cases() -> str:
    return (
        " ".join(
            f"r{r}-n{n}{'-int' if (n + r) % 3 == 0 else ''}"
            for r in (0, 1, 2, 5, 16, 31, 32)
            for n in (0, 1, 2, 7, 31, 64, 65, 1000, 4097)
        )
        + " filter-replaced"
    )


PROBLEMS = {
    "atomic-minmax": Emulated(
        "group_minmax.h",
        "void group_minmax(const int*, const int*, int, int, int*, int*) {}",
        (
            "empty-one-group empty-many-groups single one-group seven-groups extreme-values "
            "groups-4194304-mostly-empty"
        ),
        lambda m, rng: m.perf_case(rng, 20000, 37, 3),
    ),
    "bitonic-sort": Emulated(
        "bitonic_sort.h",
        "void bitonic_sort(int*, int) {}",
        " ".join(f"n{1 << lg}-{p}" for lg in range(0, 13, 3) for p in ("random", "extremes"))
        + " n0 n2-reversed n64-few-distinct n128-sorted n1024-all-equal",
        lambda m, rng: m.perf_case(rng, 4096, 3),
    ),
    "box-blur-tiled": Emulated(
        "box_blur.h",
        "void box_blur5(const float*, float*, int, int) {}",
        "0x0 0x7 7x0 1x1 1x9 9x1 2x2 3x5 5x3 5x5 16x16 33x17 17x33 1000x3 3x1000 257x255",
        lambda m, rng: m.perf_case(rng, 67, 45, 3),
    ),
    "compact-positive": Emulated(
        "compact.h",
        "void compact_positive(const float*, int, float*, int*) {}",
        (
            "n0-half n1-all-positive n2-sparse n31-zeros-and-tiny n32-alternating "
            "n33-none-positive n255-half n257-zeros-and-tiny n4097-sparse n65537-half "
            "n12345-half n0-all-positive"
        ),
        lambda m, rng: m.perf_case(rng, 10007, 3),
    ),
    "conv1d-constant": Emulated(
        "conv1d.h",
        "void conv1d_set_filter(const float*, int) {}\n"
        "void conv1d_apply(const float*, float*, int) {}",
        _conv1d_cases(),
        lambda m, rng: m.perf_case(rng, 5003, 16, 3),
    ),
    "histogram-256": Emulated(
        "histogram.h",
        "void histogram256(const unsigned char*, size_t, unsigned int*) {}",
        (
            "empty single random-15 random-16 random-17 random-255 random-257 random-65539 "
            "misaligned-1 misaligned-7 misaligned-short all-0xff cycle"
        ),
        lambda m, rng: m.perf_case(rng, 100003, 8),
    ),
    "layernorm-rows": Emulated(
        "layernorm.h",
        "void layernorm_rows(const float*, const float*, const float*, float*, int, int, float) {}",
        (
            "empty-0x8 centered-1x1 centered-3x7 centered-5x33 centered-100x768 offset-1x2 "
            "offset-8x32 offset-33x1000 offset-7x4097 constant-4x999 eps-0.1-16x300"
        ),
        lambda m, rng: m.perf_case(rng, 37, 300, 3),
    ),
    "reduce-sum": Emulated(
        "reduce_sum.h",
        "void reduce_sum(const float*, int, float*) {}",
        (
            "empty single uniform-2 uniform-33 uniform-1025 uniform-65537 misaligned-1 "
            "misaligned-3 spike"
        ),
        lambda m, rng: m.perf_case(rng, 100003, 8),
    ),
}


def _solutions(problem: Problem) -> dict[str, dict[str, str]]:
    nop = PROBLEMS[problem.task_id]
    return solutions(problem, f'#include <cstddef>\n#include "{nop.header}"\n{nop.nop}\n')


def _decide(problem: Problem, root: Path, inputs: Path, decide, *, perf: bool) -> None:
    """Reference and baseline pass, the NOP fails: each run on ``inputs``, decided by ``decide``."""
    decide_each(problem, _solutions(problem), build, run, root, inputs, decide, perf=perf)


needs_emulator = pytest.mark.skipif(bool(emulate.available()), reason=str(emulate.available()))


@needs_emulator
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_reference_and_baseline_pass_and_the_nop_fails_emulated(
    task_id: str, tmp_path: Path
) -> None:
    problem, only = SUITE[task_id], PROBLEMS[task_id].cases
    split = SplitRun(problem, tmp_path / "check")
    inputs = split.subset(only)
    _decide(problem, tmp_path, inputs, lambda out: split.verify(out, only), perf=False)


@needs_emulator
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_the_benchmark_path_runs_and_every_timed_call_is_checked_emulated(
    task_id: str, tmp_path: Path
) -> None:
    problem = SUITE[task_id]
    module = check_module(problem, tmp_path / "module")
    case = PROBLEMS[task_id].perf(module, np.random.default_rng(7))
    inputs = small_perf(tmp_path / "perf-in", case)
    box = CheckerDir(problem, tmp_path / "check")
    _decide(problem, tmp_path, inputs, lambda out: box.verify("perf", SEED, inputs, out), perf=True)


@pytest.mark.slow  # nvcc: about 20 s a problem here
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("task_id", sorted(PROBLEMS))
def test_the_runner_builds_with_nvcc_with_the_reference_and_the_baseline(
    task_id: str, tmp_path: Path
) -> None:
    """One nvcc with the build command's flags: the runner links with either solution, and
    not without one."""
    compile_directly(SUITE[task_id], tmp_path)
