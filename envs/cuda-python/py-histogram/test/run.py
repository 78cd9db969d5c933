"""py-histogram's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned


def test(case, solution):
    """Host arrays, then device arrays; counts start as garbage (the poison), the host input
    comes back too (it must not change)."""
    values, nbins = case.input("values"), int(case.input("nbins"))
    counts = poisoned(nbins, np.int32)
    with case.call(work=values.size > 0):  # on a GPU: kernels must run in it
        solution.histogram(values, counts)
    case.output("host_counts", counts)
    case.output("host_values", values)
    dvalues, dcounts = device(case.input("values")), device(poisoned(nbins, np.int32))
    with case.call(work=values.size > 0):
        solution.histogram(dvalues, dcounts)
    case.output("device_counts", dcounts)


def perf(case, solution):
    """Every timed call writes its own (garbage-filled) counts; all of them come back."""
    values, nbins = device(case.input("values")), int(case.input("nbins"))
    outs = [device(poisoned(nbins, np.int32)) for _ in range(int(case.input("iters")))]
    warm = device(poisoned(nbins, np.int32))
    bench(lambda counts: solution.histogram(values, counts), outs, warm=warm)
    for k, counts in enumerate(outs):
        case.output(f"counts{k}", counts)
