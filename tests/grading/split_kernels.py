"""The split cuda-kernels problems tested without a GPU (tests/grading/test_split_*.py).

- :class:`SplitRun`: a problem's checker and one run's inputs (``gen``); ``decide`` writes
  outputs the test computed (an independent answer, possibly mutated) and runs ``verify``.
- :func:`build` and :func:`run`: the problem's runner linked with a solution, built for the
  CPU emulator (tests/families/cuemu) and run on a run's inputs, as the grader would run it.
  A run may keep only some of the checker's cases (the emulator is far slower than a GPU), and
  :func:`check_module` draws a perf case at a small size through the checker's own
  ``perf_case`` (the benchmark path end to end, timed calls and all)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cudaenv.problems.model import Problem
from tests.families.cuemu import emulate
from tests.grading.split_harness import (
    CheckerDir,
    Outputs,
    Ran,
    cases,
    check_module,
    guarded,
    poisoned,
    run_laid,
    small_perf,
    write_outputs,
)

SEED = 20_261_205
#: a run's inputs, by case name, as :func:`cases` reads them
Drawn = dict[str, dict[str, np.ndarray]]


class SplitRun:
    """One problem's checker and the inputs of one of its runs (stage, seed)."""

    def __init__(self, problem: Problem, root: Path, stage: str = "test", seed: int = SEED):
        self.problem, self.stage, self.seed = problem, stage, seed
        self.box = CheckerDir(problem, root)
        self.folder = self.box.gen(stage, seed)
        self.inputs = cases(self.folder)

    def subset(self, only: list[str] | None) -> Path:
        """A folder of the run's inputs holding only the cases ``only`` (all when None)."""
        if only is None:
            return self.folder
        missing = sorted(set(only) - set(self.inputs))
        assert not missing, f"no such cases: {missing}"
        folder = self.folder.with_name(f"{self.folder.name}-{'-'.join(only)}"[:200])
        folder.mkdir(exist_ok=True)
        (folder / "manifest.txt").write_text("".join(f"{c}\n" for c in only))
        for c in only:
            if not (folder / c).exists():
                shutil.copytree(self.folder / c, folder / c)
        return folder

    def verify(self, outputs: Path, only: list[str] | None = None) -> dict:
        """The checker's decision on ``outputs`` for the cases ``only`` (all when None)."""
        return self.box.verify(self.stage, self.seed, self.subset(only), outputs)

    def decide(self, outputs: Outputs, root: Path, only: list[str] | None = None) -> dict:
        """The checker's decision on arrays the test computed (written under ``root``)."""
        return self.verify(write_outputs(root, outputs), only)

    def redrawn(self) -> tuple[Drawn, Drawn]:
        """The stage's inputs drawn again: with the run's seed, and with the next one."""
        again = cases(self.box.gen(self.stage, self.seed))
        other = cases(self.box.gen(self.stage, self.seed + 1))
        return again, other

    def failures(self, outputs: Outputs, root: Path, only: list[str] | None = None) -> list[str]:
        """What the checker rejects in ``outputs`` (it must reject something)."""
        report = self.decide(outputs, root, only)
        assert report["passed"] is False and report["failures"], report
        return report["failures"]


def build(problem: Problem, workdir: Path, solution: dict[str, str]) -> Path:
    """The problem's runner linked with ``solution`` (workspace paths), built for the CPU."""
    files = {f.path: f.content for f in problem.context_files + problem.test_files}
    runner = [f.path for f in problem.test_files if f.path.endswith((".cu", ".cpp"))]
    sources = [*(p for p in solution if p.endswith(".cu")), *runner]
    return emulate.build({**files, **solution}, workdir, sources=sources, flags=("-D__CUDACC__",))


def run(binary: Path, inputs: Path, io: Path, *, perf: bool = False, timeout: float = 600) -> Ran:
    """Run the runner on the inputs in ``inputs`` (``io`` gets ``in`` and ``out``)."""
    io.mkdir(parents=True)
    (io / "in").symlink_to(inputs.resolve(), target_is_directory=True)
    return run_laid(binary, io, perf=perf, timeout=timeout)


class SmallPerf:
    """A perf case drawn by the checker's own ``perf_case`` at a small size, and its checker:
    the benchmark's outputs checked in seconds (every timed call's, as at full size)."""

    def __init__(self, problem: Problem, root: Path, draw) -> None:
        case = draw(check_module(problem, root / "module"), np.random.default_rng(11))
        self.inputs: dict[str, np.ndarray] = dict(case.inputs)
        self.folder = small_perf(root / "perf-in", case)
        self.box, self.root = CheckerDir(problem, root / "check"), root

    def decide(self, outputs: dict[str, np.ndarray], name: str) -> dict:
        return self.box.verify(
            "perf", SEED, self.folder, write_outputs(self.root / name, {"perf": outputs})
        )


def rejected(split: SplitRun, outputs: Outputs, root: Path, only: list[str]) -> str:
    """The one failure the checker reports for ``outputs`` (exactly one is expected)."""
    failures = split.failures(outputs, root, only)
    assert len(failures) == 1, failures
    return failures[0]


def mutant_rejected(
    split: SplitRun, outputs: Outputs, mutate: Callable[..., None], root: Path, only: list[str]
) -> str:
    """The one failure the checker reports for ``outputs`` once ``mutate(outputs,
    split.inputs)`` changed them."""
    mutate(outputs, split.inputs)
    return rejected(split, outputs, root, only)


__all__ = [
    "SEED",
    "Outputs",
    "Ran",
    "SmallPerf",
    "SplitRun",
    "build",
    "check_module",
    "guarded",
    "mutant_rejected",
    "poisoned",
    "rejected",
    "run",
    "small_perf",
]
