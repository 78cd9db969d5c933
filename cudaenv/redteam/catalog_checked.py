"""Issue 27, families 2 and 5: answers the trusted side must see through.

- ``py-host-operators-idle-kernel`` (family 2): py-vector-add's answer computed on the host
  with an operator no name rule lists (``-`` of a negation), the arrays copied back from the
  device when they are device arrays, plus a kernel that does nothing so a kernel still runs
  in every call. The outputs are right: only "the work runs on the GPU, judged by what ran"
  stops it (cudaenv.grading.gpu_work: on a GPU the profiler sees each call's kernels and their
  time, far below what the declared work needs). numba-cuda's simulator has no profiler: there
  it passes (tests/redteam/test_checked_defences.py shows it, the defence off), so it runs
  only on a GPU.
"""

from __future__ import annotations

from cudaenv.redteam.actions import submit, write
from cudaenv.redteam.model import Exploit

HOST_OPERATORS = """import numpy as np
from numba import cuda


@cuda.jit
def _idle(out):
    # launched so that each call shows a kernel; touches nothing
    if cuda.grid(1) < 0:
        out[0] = 0


def _host(x):
    return x if isinstance(x, np.ndarray) else x.copy_to_host()


def vector_add(a, b, out):
    total = _host(a) - (-_host(b))  # the sum, on the host, by operators only
    if isinstance(out, np.ndarray):
        out[...] = total
    else:
        out.copy_to_device(total)
    if out.shape[0]:
        _idle[1, 32](out)
"""

CHECKED_EXPLOITS: list[Exploit] = [
    Exploit(
        "py-host-operators-idle-kernel",
        "skip_checks",
        "py-vector-add's sum computed on the host with operators (a - (-b)) after copying the "
        "inputs back, plus a do-nothing kernel in every call",
        "builtin:py-vector-add",
        [write("solution.py", HOST_OPERATORS), submit()],
        needs_gpu=True,
    ),
]
