"""py-vector-add's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; the host inputs come back too (they must not change)."""
    a, b = case.input("a"), case.input("b")
    out = poisoned(a.shape, np.float32)
    with case.call(work=a.size > 0):  # on a GPU: kernels must run in it
        solution.vector_add(a, b, out)
    case.output("host_out", out)
    case.output("host_a", a)
    case.output("host_b", b)
    da, db, dout = device(a), device(b), device(poisoned(a.shape, np.float32))
    with case.call(work=a.size > 0):  # on a GPU: kernels must run in it
        solution.vector_add(da, db, dout)
    case.output("device_out", dout)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    a, b = device(case.input("a")), device(case.input("b"))
    outs = [device(poisoned(a.shape, np.float32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(a.shape, np.float32))
    bench(lambda out: solution.vector_add(a, b, out), outs, warm=warm)
    for k, out in enumerate(outs):
        case.output(f"out{k}", out)
