"""A split cuda-kernels problem tested without a GPU (tests/grading/test_split_*.py).

- :class:`Inputs`: the problem's checker and one run's inputs (``gen``); ``decide`` writes
  outputs a test computed (an independent answer, possibly mutated) and runs ``verify``.
- :func:`build` and :func:`run`: the problem's runner (``test/runner.cpp``, or ``.cu`` with kernels of its own) linked with a
  solution, built for the CPU emulator (tests/families/cuemu) and run on inputs the checker's
  code drew, as the grader would run it (``CUDAENV_IO`` pointing at ``in/`` and ``out/``); the
  checker then decides on what it wrote. The emulator is far slower than a GPU, so such a run
  takes some of the test stage's cases (:func:`some_test_cases`) or a perf case the checker's
  own ``perf_case`` drew at a small size (:func:`small_perf`: the benchmark path end to end,
  warm-up, timed calls, every timed output checked by the same ``check``).

The runner's device helpers (``DeviceArray``, ``sync``) exist only under ``__CUDACC__``: the
build compiles the runner through a one-line unit that defines it first, so neither the runner
nor the emulator needs a change for it.
"""

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
    lay,
    poisoned,
    run_laid,
    small_perf,
    write_outputs,
)

SEED = 20_261_206
#: the unit the emulator compiles instead of the runner: the runner with its CUDA helpers on
RUNNER_UNIT = "cuemu_runner.cu"


class Inputs:
    """A problem's checker and the inputs of one of its runs (stage, seed)."""

    def __init__(self, problem: Problem, root: Path, stage: str = "test", seed: int = SEED):
        self.stage, self.seed = stage, seed
        self.box = CheckerDir(problem, root)
        self.folder = self.box.gen(stage, seed)
        self.cases = cases(self.folder)

    def subset(self, only: list[str] | None) -> Path:
        """A folder of the run's inputs with only the cases ``only`` (all when None), in
        their run order."""
        if only is None:
            return self.folder
        missing = sorted(set(only) - set(self.cases))
        assert not missing, f"no such cases: {missing}"
        folder = self.folder.with_name(
            f"{self.folder.name}-{len(list(self.folder.parent.iterdir()))}"
        )
        folder.mkdir()
        (folder / "manifest.txt").write_text("".join(f"{c}\n" for c in only))
        for c in only:
            shutil.copytree(self.folder / c, folder / c)
        return folder

    def verify(self, outputs: Path, folder: Path | None = None) -> dict:
        """The checker's decision on ``outputs`` for the cases in ``folder`` (default: all)."""
        return self.box.verify(self.stage, self.seed, folder or self.folder, outputs)

    def decide(self, outputs: Outputs, root: Path) -> dict:
        """The checker's decision on arrays a test computed (written under ``root``), for the
        cases they answer (in run order)."""
        only = [c for c in self.cases if c in outputs]
        folder = self.subset(only if len(only) < len(self.cases) else None)
        return self.verify(write_outputs(root, outputs), folder)

    def failures(self, outputs: Outputs, root: Path) -> list[str]:
        """What the checker rejects in ``outputs`` (it must reject something)."""
        report = self.decide(outputs, root)
        assert report["passed"] is False and report["failures"], report
        return report["failures"]


def another_draw(problem: Problem, root: Path) -> dict[str, object]:
    """The test stage's cases as the checker's code draws them from another generator, by
    name (a test compares them with a run's: the values are fresh per run)."""
    module = check_module(problem, root)
    return {c.name: c for c in module.cases("test", np.random.default_rng(1))}


def some_test_cases(problem: Problem, root: Path, names: list[str]) -> Path:
    """The test stage's cases ``names`` as the checker's ``cases`` draws them, laid under
    ``root/in`` (only those are written: the emulator runs the small ones, and the large
    ones would cost seconds of disk for nothing)."""
    module = check_module(problem, root / "module")
    drawn = {c.name: c for c in module.cases("test", np.random.default_rng(SEED))}
    missing = sorted(set(names) - set(drawn))
    assert not missing, f"no such cases: {missing}"
    return lay(root / "in", [drawn[n] for n in names])


def build(problem: Problem, workdir: Path, solution: dict[str, str]) -> Path:
    """The problem's runner linked with ``solution`` (workspace paths), built for the CPU."""
    files = {f.path: f.content for f in problem.context_files + problem.test_files}
    runners = [f.path for f in problem.test_files if f.path.startswith("test/runner.")]
    assert len(runners) == 1, runners
    files[RUNNER_UNIT] = f'#define __CUDACC__ 1\n#include "{runners[0]}"\n'
    sources = [*(p for p in solution if p.endswith(".cu")), RUNNER_UNIT]
    return emulate.build({**files, **solution}, workdir, sources=sources)


def run(binary: Path, inputs: Path, io: Path, *, perf: bool = False, timeout: float = 600) -> Ran:
    """The runner on the inputs in ``inputs`` (copied to ``io/in``), its outputs under
    ``io/out`` (no completion token, no seed: the runner's environment holds only
    ``CUDAENV_IO``)."""
    io.mkdir(parents=True)
    shutil.copytree(inputs, io / "in")
    return run_laid(binary, io, perf=perf, timeout=timeout)


def mutant_failures(
    split: Inputs, outputs: Outputs, mutate: Callable[..., None], root: Path
) -> list[str]:
    """What the checker rejects in ``outputs`` once ``mutate(outputs, split)`` changed them."""
    mutate(outputs, split)
    return split.failures(outputs, root)


class SmallPerf:
    """The checker's own perf case drawn at a small size (``draw(module, rng)``, a generator
    seeded 3), laid as a perf run's inputs under ``root``; ``decide`` is the checker's
    decision on outputs a test computed for it (written under ``root/name``)."""

    def __init__(self, problem: Problem, root: Path, draw: Callable[..., object]) -> None:
        self.case = draw(check_module(problem, root / "module"), np.random.default_rng(3))
        self.folder = small_perf(root / "in", self.case)
        self.box, self.root = CheckerDir(problem, root / "check"), root

    def decide(self, outputs: dict[str, np.ndarray], name: str) -> dict:
        perf = write_outputs(self.root / name, {"perf": outputs})
        return self.box.verify("perf", 1, self.folder, perf)


__all__ = [
    "RUNNER_UNIT",
    "SEED",
    "Inputs",
    "Outputs",
    "Ran",
    "SmallPerf",
    "another_draw",
    "build",
    "check_module",
    "guarded",
    "lay",
    "mutant_failures",
    "poisoned",
    "run",
    "small_perf",
    "some_test_cases",
]
