"""box-blur-tiled's checker without a GPU: its cases are the old harness's shapes (1 x 1 to
2048 x 2048, 1- to 3-pixel wide or tall, empty images), drawn fresh per seed; blurs computed
independently (float32, 25 clamped taps, as a kernel would) pass; a zero-padded edge, an
unwritten pixel, a write past the end, a missing or mistyped image fail, naming case and
array. The runner runs on the CPU emulator in test_split_kernels_emulated.py."""

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

PROBLEM = load_suite("builtin")["box-blur-tiled"]
SMALL = ["0x7", "1x1", "3x5", "16x16", "33x17", "1000x3"]


def _blur(img: np.ndarray, *, clamp: bool = True) -> np.ndarray:
    """25 taps summed in float32 at clamped (or, wrongly, zero-padded) indices, / 25."""
    h, w = img.shape
    out = np.zeros((h, w), np.float32)
    if h == 0 or w == 0:
        return out
    ys, xs = np.arange(h), np.arange(w)
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            y, x = ys + dy, xs + dx
            tap = img[np.clip(y, 0, h - 1)][:, np.clip(x, 0, w - 1)]
            if not clamp:
                tap = tap * ((y >= 0) & (y < h))[:, None] * ((x >= 0) & (x < w))[None, :]
            out += tap
    return out / np.float32(25)


def _answer(case: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"out": guarded(_blur(case["image"]), int(case["guard"]))}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> SplitRun:
    return SplitRun(PROBLEM, tmp_path_factory.mktemp("blur"))


def test_the_cases_are_the_old_harness_s_drawn_fresh_per_seed(split: SplitRun) -> None:
    inputs = split.inputs
    assert len(inputs) == 20
    for name, c in inputs.items():
        w, h = (int(v) for v in name.split("x"))
        assert c["image"].shape == (h, w) and (int(c["width"]), int(c["height"])) == (w, h)
        assert c["image"].size == 0 or (c["image"].min() >= 0 and c["image"].max() < 1)
    assert {"0x0", "0x7", "7x0", "1x9", "9x1", "4097x31", "31x4097", "2048x2048"} <= set(inputs)
    again, other = split.redrawn()
    assert np.array_equal(again["33x17"]["image"], inputs["33x17"]["image"])
    assert not np.array_equal(other["33x17"]["image"], inputs["33x17"]["image"])


def test_independent_blurs_pass(split: SplitRun, tmp_path: Path) -> None:
    report = split.decide({n: _answer(c) for n, c in split.inputs.items()}, tmp_path)
    assert report == {"passed": True, "cases": 20, "failures": []}


def _small(split: SplitRun) -> dict[str, dict[str, np.ndarray]]:
    return {n: _answer(split.inputs[n]) for n in SMALL}


def _zero_padded(out: dict, inputs: dict) -> None:
    img = inputs["33x17"]["image"]
    out["33x17"]["out"][: img.size] = _blur(img, clamp=False).reshape(-1)


MUTATIONS = {
    "zero padding": (_zero_padded, "33x17: out: "),  # every border pixel
    "a pixel off by one tap": (
        lambda out, inputs: out["16x16"]["out"].__setitem__(17, out["16x16"]["out"][17] + 0.02),
        "16x16: out: 1 of 256 elements wrong; first at index 17",
    ),
    "a pixel not written": (
        lambda out, _: out["1000x3"]["out"].__setitem__(2999, np.nan),
        "1000x3: out: 1 of 3000 elements wrong; first at index 2999: got nan",
    ),
    "guard overwritten": (
        lambda out, _: out["0x7"]["out"].__setitem__(0, 0.0),
        "0x7: out past the end: 1 of 64 elements wrong; first at index 0",
    ),
    "missing": (lambda out, _: out["1x1"].pop("out"), "1x1: out.npy is missing"),
    "wrong dtype": (
        lambda out, _: out["3x5"].__setitem__("out", out["3x5"]["out"].astype(np.float64)),
        "3x5: out: dtype <f8, expected <f4",
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_wrong_image_fails_naming_case_and_array(
    split: SplitRun, tmp_path: Path, name: str
) -> None:
    mutate, expected = MUTATIONS[name]
    assert mutant_rejected(split, _small(split), mutate, tmp_path, SMALL).startswith(expected)


def test_the_tolerance_is_the_prompt_s(split: SplitRun, tmp_path: Path) -> None:
    """5e-6 absolute: 4e-6 off passes, 6e-6 off fails."""
    exact = np.pad(split.inputs["16x16"]["image"].astype(np.float64), 2, mode="edge")
    want = sum(exact[dy : dy + 16, dx : dx + 16] for dy in range(5) for dx in range(5)) / 25
    for delta, ok in ((4e-6, True), (6e-6, False)):
        got = (want + delta).astype(np.float32)
        report = split.decide({"16x16": {"out": guarded(got, 64)}}, tmp_path / str(ok), ["16x16"])
        assert report["passed"] is ok, report


def test_every_timed_call_is_checked(tmp_path: Path) -> None:
    """The benchmark's timed calls, each its own output (the checker's perf case, small)."""
    perf = SmallPerf(PROBLEM, tmp_path, lambda m, rng: m.perf_case(rng, 67, 45, 3))
    want = guarded(_blur(perf.inputs["image"]), int(perf.inputs["guard"]))
    outs = {f"out{t}": want.copy() for t in range(3)}
    assert perf.decide(outs, "ok")["passed"] is True
    outs["out2"][67 * 45 - 1] = np.nan  # the last pixel of the last call, never written
    report = perf.decide(outs, "bad")
    assert report["passed"] is False and report["failures"][0].startswith("perf: out2: 1 of")
