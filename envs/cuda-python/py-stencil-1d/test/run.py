"""py-stencil-1d's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; the host inputs come back too (they must not change)."""
    x, w = case.input("x"), case.input("weights")
    out = poisoned(x.shape, np.float32)
    with case.call(work=x.size > 0):  # on a GPU: kernels must run in it
        solution.stencil_1d(x, w, out)
    case.output("host_out", out)
    case.output("host_x", x)
    case.output("host_weights", w)
    dx, dw = device(case.input("x")), device(case.input("weights"))
    dout = device(poisoned(x.shape, np.float32))
    with case.call(work=x.size > 0):
        solution.stencil_1d(dx, dw, dout)
    case.output("device_out", dout)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    x, w = device(case.input("x")), device(case.input("weights"))
    outs = [device(poisoned(x.shape, np.float32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(x.shape, np.float32))
    bench(lambda out: solution.stencil_1d(x, w, out), outs, warm=warm)
    for k, out in enumerate(outs):
        case.output(f"out{k}", out)
