"""py-rgb-to-gray's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; the host image comes back too (it must not change)."""
    rgb = case.input("rgb")
    shape = rgb.shape[:2]
    gray = poisoned(shape, np.uint8)
    with case.call(work=gray.size > 0):  # on a GPU: kernels must run in it
        solution.rgb_to_gray(rgb, gray)
    case.output("host_gray", gray)
    case.output("host_rgb", rgb)
    drgb, dgray = device(case.input("rgb")), device(poisoned(shape, np.uint8))
    with case.call(work=gray.size > 0):
        solution.rgb_to_gray(drgb, dgray)
    case.output("device_gray", dgray)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    rgb = device(case.input("rgb"))
    shape = rgb.shape[:2]
    outs = [device(poisoned(shape, np.uint8)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(shape, np.uint8))
    bench(lambda gray: solution.rgb_to_gray(rgb, gray), outs, warm=warm)
    for k, gray in enumerate(outs):
        case.output(f"gray{k}", gray)
