"""A problem's checker judging answers written by a test: right ones, and mutants of them.

A test computes each case's outputs from the inputs ``gen`` drew, independently of the
checker (its own NumPy), and lets ``verify`` judge them; :meth:`Checked.mutants` judges many
wrong versions in one ``verify``, each on its own copy of a case named ``<case>.<kind>``, so
the test sees which mistake each failure names. Only test-stage cases are copied (a checker may
tell its perf case by name).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cudaenv.problems.model import Problem, SourceFile
from tests.grading.split_harness import CheckerDir, cases

Outputs = dict[str, np.ndarray | str]  # an output array, or the text of "error.txt"
Inputs = dict[str, np.ndarray]
Mutation = Callable[[Outputs, Inputs], None]  # changes a case's right outputs in place


def poison(dtype: object, count: int) -> np.ndarray:
    """``count`` elements of the runners' poison pattern (cudaenv_check.POISON_BITS)."""
    size = np.dtype(dtype).itemsize
    bits = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}[size]
    return np.full(count, bits, dtype=f"<u{size}").view(dtype)


def fake_device_query(path: Path, devices: list[tuple[str, list[int]]]) -> None:
    """A stand-in for device-query's trusted query (``check/query.out``, the format of
    check/query.cu) printing ``devices``: (name, [cc_major, cc_minor, sm_count, warp_size,
    max_threads_per_block, max_threads_per_sm, shared_mem_per_block, shared_mem_per_block_optin,
    total_global_mem, l2_cache_bytes])."""
    lines = [f"devices {len(devices)}"]
    for d, (name, values) in enumerate(devices):
        lines.append(f"{d} x{name.encode().hex()} {' '.join(map(str, values))}")
    path.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def write(root: Path, outputs: dict[str, Outputs]) -> Path:
    """``root/<case>/<name>.npy`` (or ``root/<case>/error.txt``) for every output."""
    for case, out in outputs.items():
        (root / case).mkdir(parents=True, exist_ok=True)
        for name, value in out.items():
            if isinstance(value, str):
                (root / case / name).write_text(value)
            else:
                np.save(root / case / f"{name}.npy", value)
    return root


class Checked:
    """A problem's checker in ``root`` and one run's inputs (``gen`` of ``stage`` and ``seed``);
    ``env`` reaches the checker (``NUMBA_ENABLE_CUDASIM=1``: the simulator's sizes)."""

    def __init__(
        self,
        problem: Problem,
        root: Path,
        seed: int,
        stage: str = "test",
        env: dict[str, str] | None = None,
    ) -> None:
        self.root, self.seed, self.stage = root, seed, stage
        self.box = CheckerDir(problem, root / "checker", env)
        self.folder = self.box.gen(stage, seed)
        self.inputs = cases(self.folder)
        self._runs = 0

    def _next(self, what: str) -> Path:
        self._runs += 1
        return self.root / f"{what}-{self._runs}"

    def subset(self, names: list[str]) -> Path:
        """A folder of the run's inputs holding only the cases ``names`` (a manifest of them)."""
        folder = self._next("in")
        folder.mkdir()
        (folder / "manifest.txt").write_text("".join(f"{case}\n" for case in names))
        for case in names:
            shutil.copytree(self.folder / case, folder / case)
        return folder

    def verify(self, outputs: dict[str, Outputs], only: bool = False) -> dict:
        """The decision on ``outputs``: for every case of the run, or (``only``) for the cases
        ``outputs`` has, alone."""
        folder = self.subset(list(outputs)) if only else self.folder
        return self.box.verify(self.stage, self.seed, folder, write(self._next("out"), outputs))

    def mutants(
        self, answer: Callable[[Inputs], Outputs], plan: list[tuple[str, str, Mutation]]
    ) -> dict[str, list[str]]:
        """The failures of each ``(kind, case, mutation)`` of the plan applied to the right
        outputs of its case (``answer(inputs)``), all judged in one ``verify``."""
        assert len(plan) < 20, "verify reports 20 failures at most"
        folder = self._next("in")
        folder.mkdir()
        (folder / "manifest.txt").write_text("".join(f"{case}.{kind}\n" for kind, case, _ in plan))
        outputs: dict[str, Outputs] = {}
        for kind, case, mutate in plan:
            shutil.copytree(self.folder / case, folder / f"{case}.{kind}")
            out = answer(self.inputs[case])
            mutate(out, self.inputs[case])
            outputs[f"{case}.{kind}"] = out
        report = self.box.verify(self.stage, self.seed, folder, write(self._next("out"), outputs))
        found: dict[str, list[str]] = {kind: [] for kind, _, _ in plan}
        for failure in report["failures"]:
            name = failure.split(":", 1)[0]
            found[name.split(".", 1)[1]].append(failure.split(": ", 1)[1])
        return found


def run_python(
    problem: Problem,
    solution: list[SourceFile],
    run: Checked,
    work: Path,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """A cuda_python problem's runner (its stage's command) on numba-cuda's simulator, in a
    workspace of its test files and ``solution`` with the run's inputs laid as the grader lays
    them; the runner's process and the checker's decision on what it wrote."""
    for f in [*problem.test_files, *solution]:
        (work / f.path).parent.mkdir(parents=True, exist_ok=True)
        (work / f.path).write_text(f.content)
    io = work / ".cudaenv-io"
    shutil.rmtree(io, ignore_errors=True)
    shutil.copytree(run.folder, io / "in")
    command = problem.benchmark_command if run.stage == "perf" else problem.test_command
    assert command is not None and command.split()[0] == "python"
    full = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "CUDAENV_IO": ".cudaenv-io", **(env or {})}
    ran = subprocess.run(
        [sys.executable, *command.split()[1:]],
        cwd=work,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return ran, run.box.verify(run.stage, run.seed, run.folder, io / "out")


# --- mutations of a right answer, and the assertion on what each one's failures say ---


def scalar(value: object, dtype: object) -> np.ndarray:
    return np.array(value, dtype=dtype)


def setting(name: str, value: object) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        out[name] = np.array(value, dtype=out[name].dtype).reshape(out[name].shape)  # type: ignore[union-attr]

    return mutate


def changing(name: str, change: Callable[[np.ndarray], None]) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        change(out[name])  # type: ignore[arg-type]

    return mutate


def drop(name: str) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        del out[name]

    return mutate


def retype(name: str, dtype: object) -> Mutation:
    def mutate(out: Outputs, _: Inputs) -> None:
        out[name] = out[name].astype(dtype)  # type: ignore[union-attr]

    return mutate


def judged(
    run: Checked,
    answer: Callable[[Inputs], Outputs],
    plan: list[tuple[str, str, Mutation, str | tuple[str, ...]]],
) -> None:
    """Every mutant of the plan fails with exactly the failures the plan says (one string, or
    a tuple of them in order), nothing else."""
    found = run.mutants(answer, [(k, c, m) for k, c, m, _ in plan])
    for kind, _, _, says in plan:
        want = says if isinstance(says, tuple) else (says,)
        got = found[kind]
        assert len(got) == len(want) and all(w in g for w, g in zip(want, got, strict=True)), (
            kind,
            got,
        )
