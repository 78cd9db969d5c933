"""One checker run shared by a module's tests, and mutants of a right answer judged in one
``verify``: each mutation applied to its own copy of a case (``<case>.<kind>``), so a test sees
which mistake each case's failures name (for the split cccl and cuBLAS problems' tests)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cudaenv.problems.model import Problem
from tests.grading.split_harness import CheckerDir, cases, write_outputs

Outputs = dict[str, np.ndarray | str]  # an output array, or "error.txt"'s text
Mutation = Callable[[Outputs, dict[str, np.ndarray]], None]  # (outputs, the case's inputs)


def poison(dtype: type, count: int) -> np.ndarray:
    """``count`` elements of the runners' poison pattern (cudaenv_check.POISON_BITS)."""
    size = np.dtype(dtype).itemsize
    bits = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}[size]
    return np.full(count, bits, dtype=f"<u{size}").view(dtype)


def _write(root: Path, outputs: dict[str, Outputs]) -> Path:
    arrays = {c: {k: v for k, v in o.items() if not isinstance(v, str)} for c, o in outputs.items()}
    write_outputs(root, arrays)
    for case, out in outputs.items():
        (root / case).mkdir(parents=True, exist_ok=True)
        for name, value in out.items():
            if isinstance(value, str):
                (root / case / name).write_text(value)
    return root


class Run:
    """A problem's checker and one test-stage run's inputs (``gen`` once per module)."""

    def __init__(self, problem: Problem, root: Path, seed: int) -> None:
        self.seed, self.root = seed, root
        self.box = CheckerDir(problem, root / "checker")
        self.folder = self.box.gen("test", seed)
        self.inputs = cases(self.folder)
        self.verifies = 0

    def subset(self, names: dict[str, str]) -> Path:
        """An inputs folder whose manifest holds ``names`` (new name -> the case copied)."""
        self.verifies += 1
        folder = self.root / f"subset-{self.verifies}"
        folder.mkdir()
        (folder / "manifest.txt").write_text("".join(f"{n}\n" for n in names))
        for new, old in names.items():
            shutil.copytree(self.folder / old, folder / new)
        return folder

    def verify(self, outputs: dict[str, Outputs]) -> dict:
        """The decision on ``outputs`` (case -> arrays), for those cases alone."""
        folder = self.subset({c: c for c in outputs})
        root = _write(self.root / f"out-{self.verifies}", outputs)
        return self.box.verify("test", self.seed, folder, root)

    def mutants(
        self, case: str, answer: Outputs, mutations: dict[str, Mutation]
    ) -> dict[str, list[str]]:
        """The failures of each mutation of ``answer`` (the right outputs of ``case``), and of
        the unmutated answer under ``"right"``, judged in one ``verify``."""
        assert "right" not in mutations and len(mutations) < 19  # verify reports 20 at most
        outputs: dict[str, Outputs] = {}
        for kind, mutate in {"right": None, **mutations}.items():
            out = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in answer.items()}
            if mutate is not None:
                mutate(out, self.inputs[case])
            outputs[f"{case}.{kind}"] = out
        folder = self.subset({name: case for name in outputs})
        root = _write(self.root / f"out-{self.verifies}", outputs)
        report = self.box.verify("test", self.seed, folder, root)
        found: dict[str, list[str]] = {kind: [] for kind in ("right", *mutations)}
        for failure in report["failures"]:
            name, _, message = failure.partition(": ")
            found[name.removeprefix(f"{case}.")].append(message)
        return found


Answer = Callable[[dict[str, np.ndarray]], Outputs]


def passes(run: Run, answer: Answer) -> None:
    """``answer`` (the right outputs of a case, from its inputs) passes every case."""
    outputs = {name: answer(c) for name, c in run.inputs.items()}
    report = run.verify(outputs)
    assert report == {"passed": True, "cases": len(outputs), "failures": []}


def only(found: dict[str, list[str]], expected: dict[str, str]) -> None:
    """The right answer passes; each mutation fails with one message starting as expected."""
    assert found.pop("right") == []
    assert set(found) == set(expected)
    for kind, messages in found.items():
        assert len(messages) == 1 and messages[0].startswith(expected[kind]), (kind, messages)


def perf_checked(
    problem: Problem,
    tmp_path: Path,
    seed: int,
    answer: Answer,
    mutate: Callable[[Outputs, dict[str, np.ndarray]], str],
) -> None:
    """The benchmark's every timed call is checked: the right outputs pass; after ``mutate``
    (one wrong element; it returns how the failure starts) one failure, naming it."""
    box = CheckerDir(problem, tmp_path)
    folder = box.gen("perf", seed)
    (perf,) = cases(folder).values()
    outs = answer(perf)
    ok = box.verify("perf", seed, folder, _write(tmp_path / "ok", {"perf": outs}))
    assert ok == {"passed": True, "cases": 1, "failures": []}
    expected = mutate(outs, perf)
    bad = box.verify("perf", seed, folder, _write(tmp_path / "bad", {"perf": outs}))
    assert bad["passed"] is False and len(bad["failures"]) == 1, bad
    assert bad["failures"][0].startswith(f"perf: {expected}"), bad


# the cuBLAS runners' handle settings (pointer mode, math mode, 1 if the stream is the default)
DEFAULT_SETTINGS = np.array([0, 0, 1], dtype=np.int32)  # host pointers, default math, null
SETTINGS = "the handle's (pointer mode, math mode, default stream)"  # how a failure names them


def settings() -> dict[str, np.ndarray]:
    """A cuBLAS runner's settings outputs for a call that left the handle as it found it."""
    return {"settings_before": DEFAULT_SETTINGS.copy(), "settings_after": DEFAULT_SETTINGS.copy()}


def settings_changed(out: Outputs, case: dict[str, np.ndarray]) -> None:
    """A mutation: the call left the handle in device pointer mode."""
    out["settings_after"][0] = 1  # type: ignore[index]


def tf32(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to TF32 (10 mantissa bits), as tensor-op math reads float32 operands."""
    bits = a.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def off(want: float, tol: float, by: float) -> np.float32:
    """A float32 ``by`` tolerances from ``want``. Rounding moves it by under 0.25 tol where the
    tolerance is at least four float32 ulps of the value (every cuBLAS bound here is)."""
    return np.float32(want + by * tol)
