"""py-prefix-sum's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; both inputs come back too (they must not change)."""
    x = case.input("x")
    out = poisoned(x.shape, np.int32)
    with case.call(work=x.size > 0):  # on a GPU: kernels must run in it
        solution.inclusive_scan(x, out)
    case.output("host_out", out)
    case.output("host_x", x)
    dx, dout = device(case.input("x")), device(poisoned(x.shape, np.int32))
    with case.call(work=x.size > 0):
        solution.inclusive_scan(dx, dout)
    case.output("device_out", dout)
    case.output("device_x", dx)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    x = device(case.input("x"))
    outs = [device(poisoned(x.shape, np.int32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(x.shape, np.int32))
    bench(lambda out: solution.inclusive_scan(x, out), outs, warm=warm)
    for k, out in enumerate(outs):
        case.output(f"out{k}", out)
