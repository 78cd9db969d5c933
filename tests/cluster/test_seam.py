"""The seam between the cluster and grading, for real (local sandboxes, real g++ builds): where
work is routed, the worker's part of a grade, and builds shipped from one node's cache into
another's so the grader restores binaries instead of compiling (no Ray)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.cluster.seam import (
    GradeCall,
    build_stages,
    install_builds,
    route,
    run_exclusive_stages,
)
from cudaenv.grading.build_cache import BuildCache
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem, SourceFile
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem

BUILD = "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp"
BASELINE = CPU_SOLUTION.replace("a + b", "b + a")


def problem(root: Path, task_id: str, *, gpu: bool = False, bench: bool = True) -> Problem:
    spec: dict = {"build_command": BUILD, "metadata": {"requires_gpu": gpu}}
    if bench:
        spec["benchmark_command"] = "./test.out --perf"
    write_problem(
        root,
        task_id,
        spec=spec,
        files={
            "context/include/add.h": CPU_HEADER,
            "test/test_main.cpp": CPU_TEST,
            "solution/solution.cpp": CPU_SOLUTION,
            "baseline/solution.cpp": BASELINE,
        },
    )
    return load_suite(root)[task_id]


def solution(text: str = CPU_SOLUTION) -> list[SourceFile]:
    return [SourceFile(path="solution.cpp", content=text)]


@pytest.fixture
def node_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Switch this process to node ``name``'s cache dir (as each cluster node has its own)."""

    def switch(name: str) -> Path:
        path = tmp_path / f"cache-{name}"
        monkeypatch.setenv("CUDAENV_CACHE_DIR", str(path))
        return path

    return switch


def test_route(tmp_path: Path) -> None:
    cpu = problem(tmp_path / "s", "cpu-bench")
    gpu = problem(tmp_path / "s", "gpu-bench", gpu=True)
    both, cpu_only, gpu_only = {"gpu", "cpu"}, {"cpu"}, {"gpu"}
    assert route(GradeCall(cpu, [], "optimize"), both) == "cpu"
    assert route(GradeCall(cpu, [], "optimize"), gpu_only) == "gpu"  # timed apart all the same
    assert route(GradeCall(cpu, [], "optimize"), set()) is None
    assert route(GradeCall(cpu, [], "solve"), both) is None  # nothing exclusive to run
    assert route(GradeCall(cpu, [], "solve", options={"benchmark": True}), both) == "cpu"
    assert route(GradeCall(gpu, [], "solve"), both) == "gpu"
    assert route(GradeCall(gpu, [], "optimize"), cpu_only) is None  # graded as with no GPU
    plain = problem(tmp_path / "s", "cpu-plain", bench=False)
    assert route(GradeCall(plain, [], "optimize"), both) is None


def test_shipped_builds_restore_on_another_node_without_compiling(
    tmp_path: Path, node_cache
) -> None:
    p = problem(tmp_path / "s", "cpu-ship")
    call = GradeCall(p, solution(), "solve", options={"benchmark": True, "rounds": 1})
    node_cache("worker")
    verdict, builds, _, _ = build_stages(call, "cpu", baseline_known=False)
    assert verdict is None  # passed the worker's part: exclusive work follows
    assert len(builds) == 2 and all(b.files for b in builds)  # the solution's and the baseline's
    assert {b.entry.artifacts[0] for b in builds} == {"test.out"}

    grader = node_cache("grader")
    assert install_builds(builds) == 2
    assert len([d for d in (grader / "builds").iterdir() if (d / "build.json").exists()]) == 2
    v = run_exclusive_stages(call, before_s=1.5)
    assert v.passed is True, v.reason
    assert v.stages["build"].status == "ok" and v.stages["build"].cached  # restored, not built
    assert v.stages["benchmark"].status == "ok" and v.speedup is not None

    node_cache("elsewhere")  # nothing shipped here: the grade compiles for itself
    v = run_exclusive_stages(call)
    assert v.passed is True and not v.stages["build"].cached


def test_worker_part_is_final_when_it_fails_before_any_device(tmp_path: Path, node_cache) -> None:
    node_cache("worker")
    p = problem(tmp_path / "s", "gpu-fail", gpu=True)
    broken = GradeCall(p, solution("int add(int a, int b) { return a + ; }\n"), "optimize")
    verdict, builds, _, checks = build_stages(broken, "gpu")
    assert verdict is not None and verdict.passed is False and verdict.failure == "agent"
    assert verdict.stages["build"].status == "failed" and builds == [] and checks is None

    good = GradeCall(p, solution(), "optimize")
    verdict, builds, _, _ = build_stages(good, "gpu")  # no GPU here: the tests wait for a grader
    assert verdict is None and len(builds) == 1
    assert BuildCache().get(builds[0].key) is not None


def test_work_needing_no_grader_is_graded_in_full_on_the_worker(tmp_path: Path, node_cache) -> None:
    node_cache("worker")
    p = problem(tmp_path / "s", "cpu-solve", bench=False)
    verdict, builds, _, _ = build_stages(GradeCall(p, solution(), "solve"), None)
    assert verdict is not None and verdict.passed is True and builds == []


def test_the_workers_part_is_counted_into_the_grades_seconds() -> None:
    from cudaenv.cluster.seam import with_worker_time
    from cudaenv.grading.verdict import Verdict

    assert with_worker_time(Verdict(task_id="t", seconds=0.25), 1.5).seconds == 1.75
    assert with_worker_time(Verdict(task_id="t", seconds=0.25), 0.0).seconds == 0.25


def _toolchain_checks_run_here(cache: Path) -> int:
    """Toolchain checks this node ran itself (each leaves its outcome in the node's cache)."""
    d = cache / "toolchain-checks"
    return len(list(d.glob("*.json"))) if d.is_dir() else 0


def test_the_grader_takes_the_workers_checks_instead_of_rerunning_them(
    tmp_path: Path, node_cache
) -> None:
    p = problem(tmp_path / "s", "cpu-carry")
    call = GradeCall(p, solution(), "solve", options={"benchmark": True, "rounds": 1})
    worker = node_cache("worker")
    part = build_stages(call, "cpu")
    assert part.verdict is None and part.checks is not None
    assert {"static", "toolchain"} <= set(part.checks.stages)
    assert _toolchain_checks_run_here(worker) == 1

    grader = node_cache("grader")
    install_builds(part.builds)
    v = run_exclusive_stages(call, checks=part.checks)
    assert v.passed is True, v.reason
    for name, stage in part.checks.stages.items():  # the worker's records, carried over
        assert v.stages[name] == stage.model_copy(update={"cached": True}), name
    assert v.stages["test"].status == "ok" and v.stages["benchmark"].status == "ok"
    assert _toolchain_checks_run_here(grader) == 0  # nothing compiled for a check here

    v = run_exclusive_stages(call)  # no carry: the grader checks for itself
    assert v.passed is True and not v.stages["toolchain"].cached
    assert _toolchain_checks_run_here(grader) == 1


def test_carried_checks_never_cover_other_files_or_another_toolchain(
    tmp_path: Path, node_cache
) -> None:
    p = problem(tmp_path / "s", "cpu-carry-guard")
    good = GradeCall(p, solution(), "solve", options={"benchmark": True, "rounds": 1})
    node_cache("worker")
    checks = build_stages(good, "cpu").checks
    assert checks is not None

    grader = node_cache("grader")
    cheat = CPU_SOLUTION.replace("return a + b;", 'return getenv("X") ? a + b : a + b;')
    bad = GradeCall(p, solution("#include <cstdlib>\n" + cheat), "solve", options=good.options)
    v = run_exclusive_stages(bad, checks=checks)  # the good solution's checks, other files
    assert v.passed is False and v.stages["static"].status == "failed"
    assert not v.stages["static"].cached and "getenv" in v.stages["static"].output_tail

    elsewhere = checks.model_copy(update={"toolchain_id": "another-toolkit"})
    v = run_exclusive_stages(good, checks=elsewhere)
    assert v.passed is True, v.reason
    assert v.stages["static"].cached and not v.stages["toolchain"].cached  # checked here
    assert _toolchain_checks_run_here(grader) == 1
