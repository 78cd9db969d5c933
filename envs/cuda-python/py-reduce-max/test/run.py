"""py-reduce-max's runner adapter: how one case calls the solution (test/cudaenv_pyrunner.py
imports it, and the solution, in one untrusted process; check/check.py decides)."""

import numpy as np
from cudaenv_pyrunner import bench, device


def value(result):
    """The returned maximum as a float64 output (a Python or NumPy float, nothing else)."""
    if isinstance(result, bool) or not isinstance(result, (float, np.floating)):
        raise TypeError(f"reduce_max returned {type(result).__name__}, not a float")
    return np.float64(result)


def test(case, solution):
    """A host array, then a device array; both come back too (they must not change)."""
    x = case.input("x")
    with case.call(work=x.size > 0):  # on a GPU: kernels must run in it
        result = solution.reduce_max(x)
    case.output("host_max", value(result))
    case.output("host_x", x)
    dx = device(case.input("x"))
    with case.call(work=x.size > 0):
        result = solution.reduce_max(dx)
    case.output("device_max", value(result))
    case.output("device_x", dx)


def perf(case, solution):
    """Timed call k reduces the base array with value[k] planted at pos[k]; every result
    comes back."""
    base = case.input("base")
    arrays = []
    for p, v in zip(case.input("pos").tolist(), case.input("value")):
        saved, base[p] = base[p], v
        arrays.append(device(base))
        base[p] = saved
    results = []
    bench(lambda x: results.append(solution.reduce_max(x)), arrays, warm=device(base))
    for k, result in enumerate(results[-len(arrays) :]):
        case.output(f"max{k}", value(result))
