"""Running a split problem's checker (``check/``) by hand, as the grader would, for the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
