"""box-blur-tiled's checker: draws every run's images and decides on the blurred images the
runner wrote (trusted: it never sees solution code). out = 5 x 5 box mean, clamp-to-edge."""

import numpy as np
from cudaenv_check import Case, close, guard, main

GUARD = 64  # poisoned floats after each output: the solution must not write them
# Inputs are in [0, 1): a float sum of the 25 taps in any order is within 24 * 2^-24 * 25 <
# 3.6e-5 of the exact sum, i.e. < 1.5e-6 after dividing by 25, plus about one ulp (< 6e-8)
# for the division or a multiplication by 1/25. 5e-6 absolute covers that; a single wrong tap
# moves an output by up to 0.04.
ATOL = 5e-6
# width, height: empty, 1- to 3-pixel wide or tall, not multiples of any block size
SHAPES = [
    (0, 0), (0, 7), (7, 0), (1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (5, 3), (5, 5), (16, 16),
    (33, 17), (17, 33), (1000, 3), (3, 1000), (257, 255), (1920, 1080), (4097, 31), (31, 4097),
    (2048, 2048),
]  # fmt: skip


def image(rng, w, h):
    """A (height, width) image of floats in [0, 1) (24-bit fractions, as float32 holds)."""
    return (rng.integers(0, 1 << 24, (h, w)) / float(1 << 24)).astype(np.float32)


def scalars(w, h):
    return {"width": np.int32(w), "height": np.int32(h), "guard": np.int32(GUARD)}


def perf_case(rng, w, h, timed):
    inputs = {"image": image(rng, w, h), "timed": np.int32(timed)}
    return Case("perf", {**inputs, **scalars(w, h)})


def perf_cases(rng):
    w = 4096
    h = 4096
    timed = 5  # timed calls on the same image, each writing its own output
    return [perf_case(rng, w, h, timed)]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [Case(f"{w}x{h}", {"image": image(rng, w, h), **scalars(w, h)}) for w, h in SHAPES]


def blurred(img):
    """The exact box mean in float64: clamped (edge-padded) rows, then columns, of 5 taps."""
    h, w = img.shape
    if h == 0 or w == 0:
        return np.zeros((h, w))
    pad = np.pad(img.astype(np.float64), 2, mode="edge")
    rows = sum(pad[:, dx : dx + w] for dx in range(5))
    return sum(rows[dy : dy + h, :] for dy in range(5)) / 25.0


def expect(got, want, pad, what):
    n = want.size
    return close(got[:n], want.reshape(-1), what, atol=ATOL) + guard(
        got[n:], f"{what} past the end"
    )


def check(case, out):
    want, pad = blurred(case["image"]), int(case["guard"])
    shape = (want.size + pad,)
    if case.name == "perf":
        names = [f"out{t}" for t in range(int(case["timed"]))]
    else:
        names = ["out"]
    return [m for k in names for m in expect(out.array(k, np.float32, shape), want, pad, k)]


if __name__ == "__main__":
    main(cases, check)
