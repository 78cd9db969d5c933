"""Hidden harness for py-rgb-to-gray: integer luma of an (H, W, 3) uint8 image."""

import contextlib
import os
import sys
import warnings

TOKEN = os.environ.pop("CUDAENV_COMPLETION_TOKEN", "")

import numpy as np
from numba import config as numba_config
from numba import cuda
from numba.core.errors import NumbaPerformanceWarning

try:
    import nvtx

    def bench_region():
        return nvtx.annotate("bench_region")
except ImportError:  # simulator-only environments may lack nvtx

    def bench_region():
        return contextlib.nullcontext()


warnings.simplefilter("ignore", NumbaPerformanceWarning)
sys.path.insert(0, os.getcwd())
import solution  # noqa: E402

SIM = bool(numba_config.ENABLE_CUDASIM)
PERF = "--perf" in sys.argv[1:]
failures = []


def image(h, w, seed):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if h * w >= 4:  # make sure the extremes appear
        img[0, 0] = (255, 255, 255)
        img[-1, -1] = (0, 0, 0)
        img[0, -1] = (255, 0, 0)
        img[-1, 0] = (0, 255, 255)
    return img


def reference(img):
    c = img.astype(np.int32)
    return ((77 * c[..., 0] + 150 * c[..., 1] + 29 * c[..., 2] + 128) >> 8).astype(np.uint8)


def check(tag, got, ref):
    # Pure integer arithmetic: exact comparison.
    if got.shape != ref.shape or not np.array_equal(got, ref):
        if got.shape == ref.shape:
            r, c = np.argwhere(got != ref)[0]
            failures.append(f"{tag}: gray[{r},{c}] = {got[r, c]}, expected {ref[r, c]}")
        else:
            failures.append(f"{tag}: output shape {got.shape}")
        return False
    return True


def run_tests():
    shapes = [(0, 5), (4, 0), (1, 1), (7, 13), (33, 65), (9, 300), (70, 2)]
    if not SIM:
        shapes += [(1080, 1920), (4321, 777), (1, 100_003), (200_000, 3)]
    for idx, (h, w) in enumerate(shapes):
        img = image(h, w, 900 + idx)
        ref = reference(img)
        img0 = img.copy()
        tag = f"{h}x{w}"
        gray = np.full((h, w), 0xA5, dtype=np.uint8)
        solution.rgb_to_gray(img, gray)
        ok = check(f"host {tag}", gray, ref)
        if not np.array_equal(img, img0):
            failures.append(f"host {tag}: input image was modified")
            ok = False
        dimg = cuda.to_device(img0)
        dgray = cuda.to_device(np.full((h, w), 0x5A, dtype=np.uint8))
        solution.rgb_to_gray(dimg, dgray)
        cuda.synchronize()
        ok = check(f"device {tag}", dgray.copy_to_host(), ref) and ok
        print(("ok  " if ok else "BAD ") + tag)


def run_perf():
    h, w = (24, 40) if SIM else (4320, 7680)
    iters = 2 if SIM else 10
    img = image(h, w, 4)
    ref = reference(img)
    dimg = cuda.to_device(img)
    garbage = np.full((h, w), 0xA5, dtype=np.uint8)
    outs = [cuda.to_device(garbage) for _ in range(iters)]
    warm = cuda.device_array((h, w), dtype=np.uint8)
    for _ in range(3):
        solution.rgb_to_gray(dimg, warm)
    cuda.synchronize()
    with bench_region():
        for o in outs:
            solution.rgb_to_gray(dimg, o)
        cuda.synchronize()
    for k, o in enumerate(outs):
        check(f"perf call {k}", o.copy_to_host(), ref)
    print(f"perf {h}x{w} x{iters} done")


if PERF:
    run_perf()
else:
    run_tests()
if failures:
    for f in failures:
        print("FAIL", f)
    sys.exit(1)
print("all checks passed")
print(f"CUDAENV_COMPLETE {TOKEN}")
