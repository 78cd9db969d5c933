"""py-matmul-shared's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; the host inputs come back too (they must not change)."""
    A, B = case.input("A"), case.input("B")
    shape = (A.shape[0], B.shape[1])
    work = A.size > 0 and B.size > 0  # with K = 0, C is zeros: a call may launch nothing
    C = poisoned(shape, np.float32)
    with case.call(work=work):  # on a GPU: kernels must run in it
        solution.matmul(A, B, C)
    case.output("host_C", C)
    case.output("host_A", A)
    case.output("host_B", B)
    dA, dB, dC = (
        device(case.input("A")),
        device(case.input("B")),
        device(poisoned(shape, np.float32)),
    )
    with case.call(work=work):
        solution.matmul(dA, dB, dC)
    case.output("device_C", dC)


def perf(case, solution):
    """Every timed call writes its own output buffer; all of them come back."""
    A, B = device(case.input("A")), device(case.input("B"))
    shape = (A.shape[0], B.shape[1])
    outs = [device(poisoned(shape, np.float32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(shape, np.float32))
    bench(lambda C: solution.matmul(A, B, C), outs, warm=warm)
    for k, C in enumerate(outs):
        case.output(f"C{k}", C)
