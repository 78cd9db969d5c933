"""histogram-256's checker without a GPU: its cases are the old harness's (0 to 2^28 + 3 bytes,
misaligned starts, one value, text-like bytes), drawn fresh per seed; histograms counted
independently pass; a count off by one, bins of the misaligned buffer's start instead of the
data, a write past bins[255], a missing or mistyped histogram fail, naming case and array.
The runner runs on the CPU emulator in test_split_kernels_emulated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_kernels import (
    SmallPerf,
    SplitRun,
    guarded,
    mutant_rejected,
)

PROBLEM = load_suite("builtin")["histogram-256"]
SMALL = ["empty", "single", "random-257", "misaligned-7", "all-0xff", "cycle"]


def _bins(data: np.ndarray, pad: int) -> np.ndarray:
    counts, _ = np.histogram(data, bins=256, range=(0, 256))
    return guarded(counts.astype(np.uint32), pad)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("hist"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    assert len(inputs) == 2 + 11 + 4 + 1 + 5
    assert len(inputs["huge"]["data"]) == (1 << 28) + 3 and len(inputs["empty"]["data"]) == 0
    offsets = {int(c["offset"]) for c in inputs.values()}
    assert offsets == {0, 1, 2, 3, 5, 7, 15}
    assert len(np.unique(inputs["one-value"]["data"])) == 1
    assert np.unique(inputs["cycle"]["data"]).size == 256
    text = np.bincount(inputs["text-like"]["data"], minlength=256) / len(
        inputs["text-like"]["data"]
    )
    assert text[ord(" ")] > 0.15 and text[ord("a") : ord("z") + 1].sum() > 0.65
    again, other = split.redrawn()
    assert np.array_equal(again["random-1000"]["data"], inputs["random-1000"]["data"])
    assert not np.array_equal(other["random-1000"]["data"], inputs["random-1000"]["data"])


@pytest.mark.slow  # 300 MB of bytes counted
def test_independent_histograms_pass(split: SplitRun, tmp_path: Path) -> None:
    out = {n: {"bins": _bins(c["data"], int(c["guard"]))} for n, c in split.inputs.items()}
    report = split.decide(out, tmp_path)
    assert report == {"passed": True, "cases": 23, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: {"bins": _bins(split.inputs[n]["data"], 64)} for n in SMALL}


def _misread_start(out: dict, inputs: dict) -> None:
    """Counted from the buffer's start instead of the pointer (the filler bytes first)."""
    data = inputs["misaligned-7"]["data"]
    misread = np.concatenate([np.full(7, 0x3C, np.uint8), data[:-7]])
    out["misaligned-7"]["bins"] = _bins(misread, 64)


MUTATIONS = {
    "a count off by one": (
        lambda out, _: out["random-257"]["bins"].__setitem__(
            200, out["random-257"]["bins"][200] + 1
        ),
        "random-257: bins: 1 of 256 elements wrong; first at index 200",
    ),
    "misaligned start": (_misread_start, "misaligned-7: bins: "),
    "n == 0 not zeroed": (
        lambda out, _: out["empty"]["bins"].__setitem__(0, 0x7FC0DEAD),
        "empty: bins: 1 of 256 elements wrong; first at index 0",
    ),
    "written past bins[255]": (
        lambda out, _: out["all-0xff"]["bins"].__setitem__(256, 1),
        "all-0xff: bins past bins[255]: 1 of 64 elements wrong; first at index 0: got 1",
    ),
    "missing": (lambda out, _: out["cycle"].pop("bins"), "cycle: bins.npy is missing"),
    "signed counts": (
        lambda out, _: out["single"].__setitem__("bins", out["single"]["bins"].view(np.int32)),
        "single: bins: dtype <i4, expected <u4",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_histogram_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's 8 timed calls, call r on bytes 16r .. 16r + N - 17r, each its own bins
    (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 100003, 8))
    data, pad = perf.inputs["data"], int(perf.inputs["guard"])
    bins = np.stack([_bins(data[16 * r : 16 * r + len(data) - 17 * r], pad) for r in range(8)])
    assert perf.decide({"bins": bins}, "ok")["passed"] is True
    whole = bins.copy()
    whole[7] = _bins(data, pad)  # the last call counted the whole buffer
    report = perf.decide({"bins": whole}, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: bins of call 7")
