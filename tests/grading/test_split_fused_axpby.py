"""fused-axpby's split harness without a GPU: its checker's cases, answered by an independent
NumPy expression, pass ``verify``; every way a runner's outputs can be wrong fails it, naming
the case and the array (a wrong value, a NaN, a write past the end, a missing file, a wrong
dtype or shape, a link, a pickle, the runner's own error). The runner itself only builds here
(test_split_grading.py); on a GPU, tests/grading/test_grader_gpu.py runs it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_harness import CheckerDir, cases, write_outputs

PROBLEM = load_suite("builtin")["fused-axpby"]
SEED = 8_675_309


def _answer(case: dict[str, np.ndarray], r: int | None = None) -> np.ndarray:
    """z the float32 way (alpha * x + beta * y, then the guard's poison), from the inputs."""
    g = int(case["guard"])
    if r is None:
        n = int(case["n"])
        x = case["x"][int(case["x_offset"]) :][:n]
        y = case["y"][int(case["y_offset"]) :][:n]
        alpha, beta = case["alpha"], case["beta"]
    else:
        n = int(case["n"][r])
        x, y, alpha, beta = case["x"][:n], case["y"][:n], case["alpha"][r], case["beta"][r]
    z = np.float32(alpha) * x + np.float32(beta) * y
    poison = np.full(g, 0x7FC0DEAD, dtype="<u4").view(np.float32)
    return np.concatenate([z.astype(np.float32), poison])


class Run:
    """The checker of a module's tests, and one test-stage run's inputs."""

    def __init__(self, root: Path) -> None:
        self.box = CheckerDir(PROBLEM, root)
        self.folder = self.box.gen("test", SEED)
        self.inputs = cases(self.folder)

    def verify(self, outputs: Path, only: list[str] | None = None) -> dict:
        """The decision on ``outputs``; with ``only``, for those cases alone (a manifest of
        them, so a test of one case's mistakes does not pay for the large cases)."""
        folder = self.folder
        if only is not None:
            folder = self.folder.with_name(f"{self.folder.name}-{'-'.join(only)}")
            folder.mkdir(exist_ok=True)
            (folder / "manifest.txt").write_text("".join(f"{c}\n" for c in only))
            for c in only:
                if not (folder / c).exists():
                    shutil.copytree(self.folder / c, folder / c)
        return self.box.verify("test", SEED, folder, outputs)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(tmp_path_factory.mktemp("axpby"))


def _outputs(inputs: dict, only: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    return {n: {"z": _answer(c)} for n, c in inputs.items() if only is None or n in only}


def test_the_cases_are_fresh_per_seed_and_cover_the_edges(run: Run) -> None:
    inputs = run.inputs
    assert list(inputs)[:3] == ["empty", "single", "tiny"]
    assert {int(c["n"]) for c in inputs.values()} >= {0, 1, 257, (1 << 24) + 13}
    assert any(int(c["x_offset"]) % 4 for c in inputs.values())  # misaligned pointers
    again = cases(run.box.gen("test", SEED))
    other = cases(run.box.gen("test", SEED + 1))
    assert np.array_equal(again["tiny"]["x"], inputs["tiny"]["x"])  # reproducible from the seed
    assert not np.array_equal(other["tiny"]["x"], inputs["tiny"]["x"])  # fresh per run


def test_an_independent_answer_passes(run: Run, tmp_path: Path) -> None:
    report = run.verify(write_outputs(tmp_path, _outputs(run.inputs)))
    assert report == {"passed": True, "cases": len(run.inputs), "failures": []}


def _wrong_value(out: dict, root: Path) -> None:
    out["odd-size"]["z"][17] += 0.5


def _nan(out: dict, root: Path) -> None:
    out["tiny"]["z"][0] = np.nan


def _guard(out: dict, root: Path) -> None:
    n = int(np.flatnonzero(np.isnan(out["block-plus-one"]["z"]))[0])
    out["block-plus-one"]["z"][n] = 0.0  # the first element past the end


def _dtype(out: dict, root: Path) -> None:
    out["single"]["z"] = out["single"]["z"].astype(np.float64)


def _shape(out: dict, root: Path) -> None:
    out["tiny"]["z"] = out["tiny"]["z"][:-1]


MUTATIONS = {
    "wrong value": (_wrong_value, "odd-size: z: 1 of 100003 elements wrong; first at index 17"),
    "NaN": (_nan, "tiny: z: 1 of 7 elements wrong; first at index 0: got nan"),
    "guard overwritten": (_guard, "block-plus-one: z past the end: 1 of 64 elements wrong"),
    "wrong dtype": (_dtype, "single: z: dtype <f8, expected <f4"),
    "wrong shape": (_shape, "tiny: z: shape (70,), expected (71,)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_output_fails_naming_case_and_array(run: Run, tmp_path: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    only = ["empty", "single", "tiny", "block-plus-one", "odd-size"]
    out = _outputs(run.inputs, only)
    mutate(out, tmp_path)
    report = run.verify(write_outputs(tmp_path, out), only)
    assert report["passed"] is False
    assert len(report["failures"]) == 1 and report["failures"][0].startswith(expected), report


def test_files_that_are_missing_linked_pickled_or_errors_fail(run: Run, tmp_path: Path) -> None:
    only = ["empty", "single", "tiny", "beta-zero"]
    root = write_outputs(tmp_path / "out", _outputs(run.inputs, only))
    (root / "single" / "z.npy").unlink()  # missing
    good = tmp_path / "elsewhere.npy"
    (root / "tiny" / "z.npy").rename(good)
    os.symlink(good, root / "tiny" / "z.npy")  # a link to a right answer
    np.save(root / "empty" / "z.npy", np.array([object()], dtype=object), allow_pickle=True)
    (root / "beta-zero" / "error.txt").write_text("CUDA error: an illegal memory access\n")
    report = run.verify(root, only)
    failures = report["failures"]
    assert report["passed"] is False and len(failures) == 4, failures
    assert failures[0].startswith("empty: z: unsupported array layout or dtype")
    assert failures[1] == "single: z.npy is missing"
    assert failures[2] == "tiny: z.npy is a link or not what it should be"
    assert (
        failures[3]
        == "beta-zero: the runner reported an error: CUDA error: an illegal memory access"
    )


@pytest.mark.slow  # 2^24-element vectors
def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The perf stage's four timed calls, each its own z: all pass, one wrong element fails."""
    box = CheckerDir(PROBLEM, tmp_path)
    folder = box.gen("perf", SEED)
    (perf,) = cases(folder).values()
    outs = {f"z{r}": _answer(perf, r) for r in range(len(perf["n"]))}
    assert len(outs) == 4
    ok = box.verify("perf", SEED, folder, write_outputs(tmp_path / "ok", {"perf": outs}))
    assert ok["passed"], ok
    outs["z3"][int(perf["n"][3]) - 1] *= -1.0  # the last element of the last call
    report = box.verify("perf", SEED, folder, write_outputs(tmp_path / "bad", {"perf": outs}))
    assert report["passed"] is False and report["failures"][0].startswith("perf: z3: 1 of")
