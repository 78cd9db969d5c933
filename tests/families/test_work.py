"""Every generated problem's ``metadata.work`` and ``bench_sizes`` are what its checker's
benchmark times (tests/grading/test_bench_work.py for generated problems): the sizes are read
back out of ``check/check.py``'s ``perf_cases`` (as the bundled suite's are), and for a sample
of every family the benchmark case the checker actually draws is measured: its timed calls,
their shapes, and the bytes they must move (docs/AUTHORING.md's counting: each input a call
reads and each output it writes, once per call; a gather reads the rows it picks, a
scatter-add reads and writes its whole output, a pitched matrix's padding is not read)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cudaenv.families import default_set, family_names, generate
from cudaenv.problems.model import Problem
from tests.grading.bench_work import perf_constants

SEED = 99


def test_declared_sizes_are_the_checkers_perf_cases() -> None:
    for p in default_set():
        check = {f.path: f.content for f in p.check_files}["check/check.py"]
        sizes = dict(p.metadata.bench_sizes)  # type: ignore[attr-defined]
        assert perf_constants("check/check.py", check) == sizes, p.task_id


def _perf_case(problem: Problem, root: Path) -> dict[str, np.ndarray]:
    """The benchmark case the problem's checker draws (off the simulator), in-process."""
    for f in problem.check_files:
        (root / f.path).parent.mkdir(parents=True, exist_ok=True)
        (root / f.path).write_text(f.content)
    sys.path.insert(0, str(root / "check"))
    try:
        for name in ("check", "reference", "family_check", "cudaenv_check"):
            sys.modules.pop(name, None)
        module = importlib.import_module("check")
        (case,) = module.perf_cases(np.random.default_rng(SEED))
        return case.inputs
    finally:
        sys.path.remove(str(root / "check"))
        for name in ("check", "reference", "family_check", "cudaenv_check"):
            sys.modules.pop(name, None)


def _moved(problem: Problem, case: dict[str, np.ndarray]) -> int:
    """The bytes the timed calls must move, measured on the case's arrays."""
    p, calls = problem.metadata.params, int(case["calls"])
    ref = importlib.import_module(
        "cudaenv.families.refs."
        + str(problem.metadata.family).removeprefix("py-").replace("-", "_")
    )
    sizes = {k: int(v) for k, v in case.items() if v.ndim == 0 and v.dtype == np.int32}
    outs = {k: int(np.prod(case[f"{k}.shape"])) * np.dtype(dt).itemsize
            for k, (_, dt) in ref.outputs(p, sizes).items()}  # fmt: skip
    total = 0
    for r in range(calls):
        for name in ref.inputs(p, sizes):
            shared = f"{name}.stride" in case
            arr = case[name] if shared else case[f"{name}.{r}"]
            if shared:  # a window of the shared input: the logical matrix, not the padding
                shape = tuple(int(d) for d in case[f"{name}.shape"])
                cols = sizes["cols"]
                read = int(np.prod(shape[:-1])) * cols * arr.itemsize
            elif p.get("op") == "gather" and name == "table":
                read = int(case[f"idx.{r}"].size) * p["width"] * arr.itemsize
            elif p.get("op") == "scatter_add" and name == "out":
                read = 0  # counted with the output, read and written
            else:
                read = arr.nbytes
            total += read
        for nbytes in outs.values():
            total += nbytes * (2 if p.get("op") == "scatter_add" else 1)
    return total


@pytest.mark.parametrize("family", family_names())
def test_declared_work_is_what_the_checkers_benchmark_times(family: str, tmp_path: Path) -> None:
    for k, problem in enumerate(generate([family], count=2, seed=21)):
        case = _perf_case(problem, tmp_path / str(k))
        sizes = dict(problem.metadata.bench_sizes)  # type: ignore[attr-defined]
        assert int(case["calls"]) == sizes.pop("R"), problem.task_id
        assert {k: int(case[k]) for k in sizes} == sizes, problem.task_id
        work = problem.metadata.work  # type: ignore[attr-defined]
        assert _moved(problem, case) == work["bytes"], (problem.task_id, work)
