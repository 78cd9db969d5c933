"""py-relu-clip's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; the host input comes back too (it must not change)."""
    x, lo, hi = case.input("x"), float(case.input("lo")), float(case.input("hi"))
    out = poisoned(x.shape, np.float32)
    with case.call(work=x.size > 0):  # on a GPU: kernels must run in it
        solution.relu_clip(x, lo, hi, out)
    case.output("host_out", out)
    case.output("host_x", x)
    dx, dout = device(case.input("x")), device(poisoned(x.shape, np.float32))
    with case.call(work=x.size > 0):
        solution.relu_clip(dx, lo, hi, dout)
    case.output("device_out", dout)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    x, lo, hi = device(case.input("x")), float(case.input("lo")), float(case.input("hi"))
    outs = [device(poisoned(x.shape, np.float32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(x.shape, np.float32))
    bench(lambda out: solution.relu_clip(x, lo, hi, out), outs, warm=warm)
    for k, out in enumerate(outs):
        case.output(f"out{k}", out)
