"""Running a split problem's checker (``check/``) by hand, as the grader would, for the tests;
and what the runner side of those tests shares (the poison pattern, a run's inputs laid from
the checker's own cases, the runner run as the grader runs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from cudaenv.problems.model import Problem


class CheckerDir:
    """A problem's check files written into ``root``; ``gen`` and ``verify`` run its command."""

    def __init__(self, problem: Problem, root: Path, env: dict[str, str] | None = None) -> None:
        assert problem.checker is not None
        self.problem, self.root, self.env = problem, root, {**os.environ, **(env or {})}
        self.runs = 0
        for f in problem.check_files:
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            (root / f.path).write_text(f.content)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        words = self.problem.checker.command.split()  # type: ignore[union-attr]
        if words[0] == "python":
            words[0] = sys.executable
        return subprocess.run(
            [*words, *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    def gen(self, stage: str, seed: int) -> Path:
        """The inputs of (stage, seed), in a new folder under ``root``."""
        self.runs += 1
        d = self.root / f"in-{self.runs}"
        res = self._run("gen", "--stage", stage, "--seed", str(seed), "--dir", str(d))
        assert res.returncode == 0, res.stderr
        return d

    def verify(self, stage: str, seed: int, inputs: Path, outputs: Path) -> dict:
        """The checker's decision on ``outputs`` for the run whose inputs are ``inputs``."""
        args = ["--stage", stage, "--seed", str(seed), "--dir", str(inputs)]
        args += ["--outputs", str(outputs)]
        res = self._run("verify", *args)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])


def cases(inputs: Path) -> dict[str, dict[str, np.ndarray]]:
    """Every case's inputs, by case name, in manifest order."""
    names = (inputs / "manifest.txt").read_text().split()
    return {
        name: {p.stem: np.load(p) for p in sorted((inputs / name).glob("*.npy"))} for name in names
    }


def write_outputs(root: Path, outputs: dict[str, dict[str, np.ndarray]]) -> Path:
    for case, arrays in outputs.items():
        (root / case).mkdir(parents=True, exist_ok=True)
        for name, arr in arrays.items():
            np.save(root / case / f"{name}.npy", arr)
    return root


Outputs = dict[str, dict[str, np.ndarray]]


def poisoned(dtype: object, count: int) -> np.ndarray:
    """``count`` elements of the runners' poison pattern (what a guard zone must still hold)."""
    dt = np.dtype(dtype)
    bits = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}[dt.itemsize]
    return np.full(count, bits, dtype=f"<u{dt.itemsize}").view(dt)


def guarded(values: np.ndarray, pad: int) -> np.ndarray:
    """``values`` flattened, then ``pad`` poisoned elements (a runner's guarded output)."""
    flat = np.asarray(values).reshape(-1)
    return np.concatenate([flat, poisoned(flat.dtype, pad)])


def check_module(problem: Problem, root: Path) -> ModuleType:
    """The problem's ``check/check.py`` imported from a copy under ``root`` (its library
    beside it): a test draws a perf case at a small size with the checker's own code."""
    for f in problem.check_files:
        (root / f.path).parent.mkdir(parents=True, exist_ok=True)
        (root / f.path).write_text(f.content)
    folder = str(root / "check")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"check_{root.name}", root / "check/check.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def lay(folder: Path, drawn: list[object]) -> Path:
    """``folder`` laid as a run's inputs holding the cases ``drawn`` (``cudaenv_check.Case``
    objects the checker's own code drew), in that order."""
    for case in drawn:
        name, inputs = case.name, case.inputs  # type: ignore[attr-defined]
        (folder / name).mkdir(parents=True)
        for key, arr in inputs.items():
            np.save(folder / name / f"{key}.npy", arr, allow_pickle=False)
    (folder / "manifest.txt").write_text("".join(f"{c.name}\n" for c in drawn))  # type: ignore[attr-defined]
    return folder


def small_perf(folder: Path, case: object) -> Path:
    """``folder`` laid as a perf run's inputs holding the one case ``case`` (the checker's
    ``perf_case`` drew it at a small size)."""
    return lay(folder, [case])


@dataclass
class Ran:
    rc: int
    output: str
    outputs: Path


def run_laid(binary: Path, io: Path, *, perf: bool, timeout: float) -> Ran:
    """The runner on the inputs already laid in ``io/in``, its outputs under ``io/out`` (no
    completion token, no seed: the runner's environment holds only ``CUDAENV_IO``)."""
    (io / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    env["CUDAENV_IO"] = str(io)
    args = [str(binary), *(["--perf"] if perf else [])]
    try:
        done = subprocess.run(
            args, cwd=binary.parent, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return Ran(124, "timed out", io / "out")
    return Ran(done.returncode, done.stdout + done.stderr, io / "out")


def solutions(problem: Problem, nop: str) -> dict[str, dict[str, str]]:
    """The reference, the baseline and a do-nothing ``solution.cu`` (``nop``), as files."""
    assert problem.solution and problem.baseline_solution
    return {
        "reference": {f.path: f.content for f in problem.solution.files},
        "baseline": {f.path: f.content for f in problem.baseline_solution.files},
        "nop": {"solution.cu": nop},
    }


def decide_each(
    problem: Problem,
    solutions: dict[str, dict[str, str]],
    build: Callable[[Problem, Path, dict[str, str]], Path],
    run: Callable[..., Ran],
    root: Path,
    inputs: Path,
    decide: Callable[[Path], dict],
    *,
    perf: bool,
) -> None:
    """Reference and baseline pass, the NOP fails: each built with ``build``, run with ``run``
    on ``inputs``, decided by ``decide``."""
    for who, files in solutions.items():
        binary = build(problem, root / who, files)
        ran = run(binary, inputs, root / who / ("io-perf" if perf else "io"), perf=perf)
        assert ran.rc == 0, (who, ran.output[-2000:])
        report = decide(ran.outputs)
        if who == "nop":
            assert report["passed"] is False and report["failures"], report
        else:
            assert report["passed"] is True, (who, report)
