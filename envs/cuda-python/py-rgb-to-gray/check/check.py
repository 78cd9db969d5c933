"""py-rgb-to-gray's checker: draws the cases and decides on the outputs (trusted: it never
imports solution code). gray = (77 R + 150 G + 29 B + 128) >> 8 in integers: exact."""

import numpy as np
from cudaenv_check import Case, exact, main, simulator

SIM = simulator()  # numba-cuda's simulator (no GPU): small sizes

# (H, W): empty, tiny, odd, thin and (on a GPU) large images
TESTS = [(0, 5), (4, 0), (1, 1), (7, 13), (33, 65), (9, 300), (70, 2)]
LARGE = [(1080, 1920), (4321, 777), (1, 100_003), (200_000, 3)]


def image(rng, h, w):
    """Random pixels, with white, black, red and cyan in the corners when there are four."""
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if h * w >= 4:
        img[0, 0] = (255, 255, 255)
        img[-1, -1] = (0, 0, 0)
        img[0, -1] = (255, 0, 0)
        img[-1, 0] = (0, 255, 255)
    return img


def perf_cases(rng):
    h, w = (24, 40) if SIM else (4320, 7680)
    iters = 2 if SIM else 10
    return [Case("perf", {"rgb": image(rng, h, w), "iters": np.int64(iters)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    shapes = TESTS + ([] if SIM else LARGE)
    return [Case(f"h{h}-w{w}", {"rgb": image(rng, h, w)}) for h, w in shapes]


def luma(rgb):
    c = rgb.astype(np.int32)
    return ((77 * c[..., 0] + 150 * c[..., 1] + 29 * c[..., 2] + 128) >> 8).astype(np.uint8)


def check(case, out):
    rgb = case["rgb"]
    ref, shape = luma(rgb), rgb.shape[:2]
    if case.name == "perf":
        outs = [f"gray{k}" for k in range(int(case["iters"]))]
    else:
        outs = ["host_gray", "device_gray"]
    found = [m for name in outs for m in exact(out.array(name, np.uint8, shape), ref, name)]
    if case.name != "perf":  # the host input must come back unchanged
        got = out.array("host_rgb", np.uint8, rgb.shape)
        found += exact(got, rgb, "rgb (modified by the call)")
    return found


if __name__ == "__main__":
    main(cases, check)
