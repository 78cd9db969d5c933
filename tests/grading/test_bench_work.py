"""Every bundled benchmarked problem declares the work of its timed region, and the declared
work is what its benchmark's sizes imply: the sizes in ``metadata.bench_sizes`` are read back
out of the benchmark source's ``run_perf`` (a split harness's ``check/check.py``:
``perf_cases``), and ``metadata.work`` is recomputed from them by
the counting rules of docs/AUTHORING.md (tests/grading/bench_work.py)."""

from __future__ import annotations

import pytest

from cudaenv.grading.speed_of_light import BUILTIN_DEVICES, Work, floor_ms, sol_ms, work_of
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem, SourceFile
from tests.grading.bench_work import (
    FORMULAS,
    calls,
    floor_expected_ms,
    perf_constants,
    roofline_ms,
    segmented_values,
)

SUITE = load_suite("builtin")
BENCHMARKED = sorted(p.task_id for p in SUITE if p.has_benchmark)


def _source(problem: Problem) -> SourceFile:
    """The file holding the benchmark's ``run_perf``: the script the benchmark command runs,
    or the harness source that defines it; for a split harness, its checker (``perf_cases``
    draws the benchmark's inputs)."""
    if problem.split:
        return {f.path: f for f in problem.check_files}["check/check.py"]
    cmd = (problem.benchmark_command or "").split()
    files = {f.path: f for f in problem.test_files}
    if cmd and cmd[0] == "python":
        return files[cmd[1]]
    found = [f for f in problem.test_files if "run_perf" in f.content]
    assert len(found) == 1, [f.path for f in found]
    return found[0]


def test_every_benchmarked_problem_has_a_formula() -> None:
    assert len(BENCHMARKED) == 36
    assert set(BENCHMARKED) == set(FORMULAS)
    for p in SUITE:
        assert p.has_benchmark or work_of(p) is None, p.task_id


@pytest.mark.parametrize("task_id", BENCHMARKED)
def test_declared_sizes_are_the_benchmarks_constants(task_id: str) -> None:
    problem = SUITE[task_id]
    sizes = getattr(problem.metadata, "bench_sizes", None)
    assert isinstance(sizes, dict) and sizes, "metadata.bench_sizes missing"
    source = _source(problem)
    constants = perf_constants(source.path, source.content)
    assert {k: constants.get(k) for k in sizes} == sizes


@pytest.mark.parametrize("task_id", BENCHMARKED)
def test_declared_work_is_what_the_sizes_imply(task_id: str) -> None:
    problem = SUITE[task_id]
    work = work_of(problem)
    assert work is not None, "metadata.work missing"
    expected = Work.model_validate(FORMULAS[task_id](problem.metadata.bench_sizes))  # type: ignore[attr-defined]
    assert work == expected
    for device in BUILTIN_DEVICES:
        assert sol_ms(work, device) == pytest.approx(roofline_ms(work, device))
        assert floor_ms(work, device) == pytest.approx(floor_expected_ms(work, device))


def test_the_size_reader_follows_the_source() -> None:
    """The reader evaluates what the source says (a changed size reads as changed)."""
    cpp = (
        "static bool run_perf(cudaStream_t s)\n{\n"
        "    const int n = 1 << 22, warmup = 3, timed = 5;\n"
        "    const size_t bytes = static_cast<size_t>(n) * sizeof(int), segs = n / 32;\n"
        '    nvtxRangePushA("bench_region");\n'
        "    const int later = 7;\n}\n"
    )
    assert perf_constants("t.cu", cpp) == {"n": 1 << 22, "warmup": 3, "timed": 5, "segs": 1 << 17}
    assert perf_constants("t.cu", cpp.replace("1 << 22", "(size_t)1 << 23"))["n"] == 1 << 23
    assert perf_constants("t.cu", cpp.replace("timed = 5", "timed = 6U"))["timed"] == 6
    py = (
        "def run_perf(sol):\n"
        "    n = 500 if SIM else 1 << 25\n"
        "    h, w = (24, 40) if SIM else (4320, 7680)\n"
        "    M = K = 32 if SIM else 2048\n"
        "    x = inputs(n)\n"
    )
    assert perf_constants("t.py", py) == {"n": 1 << 25, "h": 4320, "w": 7680, "M": 2048, "K": 2048}
    with pytest.raises(ValueError, match="run_perf"):
        perf_constants("t.py", "def main():\n    n = 3\n")


def test_counting_rules() -> None:
    """Data shared by every call counts per call; it is reuse only when a call fits 128 MiB."""
    assert calls(5, 100, shared=60) == {"bytes": 500, "reuse_bytes": 240}
    assert calls(5, 200 << 20, shared=100 << 20) == {"bytes": 5 * (200 << 20), "reuse_bytes": 0}
    assert segmented_values(0, 61) == 0
    # the perf problems hold "about 18 million values" each, as the prompt says
    assert 15_000_000 < segmented_values(100_000, 61) < 22_000_000
