"""cudaenv_pyrunner: the RUNNER side of a cudaenv split harness for cuda_python problems.

A split harness has two halves. This runner imports the solution into its own process and
is exactly as untrusted as the solution: it only calls the solution on the inputs the
trusted checker drew and writes the outputs out. The checker (``check/check.py``, in a
sandbox of its own, after every process of this run is dead) compares them and alone decides,
so there is no secret here and no parent process to protect.

A problem's commands::

    test_command:      python test/cudaenv_pyrunner.py
    benchmark_command: python test/cudaenv_pyrunner.py --perf

and its adapter ``test/run.py`` says how one case calls the solution::

    import numpy as np
    from cudaenv_pyrunner import bench, device, poisoned

    def test(case, solution):               # one case of stage "test"
        a = case.input("a")
        out = poisoned(a.shape, np.float32)
        with case.call(work=a.size > 0):    # one solution call (NVTX range, then a sync)
            solution.vector_add(a, out)
        case.output("out", out)             # device arrays are copied back here

    def perf(case, solution):               # stage "perf": the timed loop
        ...
        bench(lambda out: solution.f(x, out), outs, warm=scratch)

The files live under ``$CUDAENV_IO`` (``in/manifest.txt``, ``in/<case>/<input>.npy``,
``out/<case>/<output>.npy``, ``out/<case>/error.txt``): see ``cudaenv_check`` for the checker
side. A case that raises gets ``error.txt`` and the runner goes on; the exit status is 0 once
the manifest was walked (1 when the solution or the adapter cannot even be imported).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

IO_ENV = "CUDAENV_IO"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
#: the NVTX range around each solution call (the grader checks each holds GPU work)
CALL_RANGE = "cudaenv_call"
#: by item size, the bit pattern outputs start as (a NaN for floats; cudaenv_check.POISON_BITS)
POISON_BITS = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}


def simulator() -> bool:
    """Whether numba-cuda's simulator is on (read from the environment, as numba does)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0")


def _cuda() -> Any:
    from numba import cuda

    return cuda


def nvtx_range(name: str) -> Any:
    """An NVTX range (a no-op where the nvtx package is missing, e.g. simulator-only setups)."""
    try:
        import nvtx
    except ImportError:
        return contextlib.nullcontext()
    return nvtx.annotate(name)


def poisoned(shape: Any, dtype: Any) -> np.ndarray:
    """A host array filled with the poison pattern: an element never written shows."""
    dt = np.dtype(dtype)
    bits = np.full(shape, POISON_BITS[dt.itemsize], dtype=f"<u{dt.itemsize}")
    return bits.view(dt)


def device(array: Any) -> Any:
    """A CUDA device copy of a host array."""
    return _cuda().to_device(np.ascontiguousarray(array))


def host(value: Any) -> np.ndarray:
    """A host array of ``value`` (a device array is synchronized and copied back)."""
    if hasattr(value, "copy_to_host"):
        _cuda().synchronize()
        return value.copy_to_host()
    return np.asarray(value)


def bench(call: Callable[[Any], Any], args: Sequence[Any], warm: Any, warmups: int = 3) -> None:
    """The timed loop: ``call(warm)`` ``warmups`` times, a synchronize, then ``call(a)`` for
    every ``a`` in ``args`` inside one NVTX ``bench_region`` that ends with a synchronize."""
    cuda = _cuda()
    for _ in range(warmups):
        call(warm)
    cuda.synchronize()
    with nvtx_range("bench_region"):
        for a in args:
            call(a)
        cuda.synchronize()


class Case:
    """One case of the manifest: its inputs and where its outputs go."""

    def __init__(self, io: str, name: str) -> None:
        self.io, self.name = io, name

    def input(self, name: str) -> np.ndarray:
        """The input ``name`` (0-d for a scalar: ``int(case.input("n"))``)."""
        return np.load(os.path.join(self.io, "in", self.name, f"{name}.npy"), allow_pickle=False)

    def output(self, name: str, value: Any) -> None:
        """Write ``value`` (a host or device array, or a number) as ``out/<case>/<name>.npy``."""
        if not NAME.match(name):
            raise ValueError(f"bad output name {name!r}")
        arr = host(value)
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")  # 0-d stays 0-d
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"output {name!r} is of type {arr.dtype} (numbers only)")
        os.makedirs(self._out(), exist_ok=True)
        np.save(os.path.join(self._out(), f"{name}.npy"), arr, allow_pickle=False)

    def error(self, message: str) -> None:
        os.makedirs(self._out(), exist_ok=True)
        with open(os.path.join(self._out(), "error.txt"), "w") as fh:
            fh.write(message[:1000] + "\n")

    @contextlib.contextmanager
    def call(self, work: bool = True) -> Iterator[None]:
        """One solution call, its work synchronized; inside an NVTX ``CALL_RANGE`` (on a GPU
        the grader checks it ran kernels) unless it has no ``work`` (empty inputs)."""
        with nvtx_range(CALL_RANGE) if work else contextlib.nullcontext():
            yield
            _cuda().synchronize()

    def _out(self) -> str:
        return os.path.join(self.io, "out", self.name)


def _manifest(io: str) -> list[str]:
    with open(os.path.join(io, "in", "manifest.txt")) as fh:
        return [line.strip() for line in fh if line.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    stage = "perf" if "--perf" in argv else "test"
    io = os.environ.get(IO_ENV) or ".cudaenv-io"
    try:
        names = _manifest(io)
    except OSError as exc:
        print(f"cudaenv runner: no manifest ({exc}); the grader lays the inputs", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(io, "out"), exist_ok=True)
    sys.path.append(os.getcwd())  # the solution (after the adapter's folder and site-packages)
    try:
        cuda = _cuda()
        from numba.core.errors import NumbaPerformanceWarning

        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        if not simulator():
            cuda.current_context()  # the profiler (if any) takes its variables at CUDA start-up
        for name in ("CUDAENV_PROFILE_OUT", "CUDAENV_PROFILE_NONCE"):
            os.environ.pop(name, None)  # Python's copy of them (the profiler erased the block's)
        adapter = importlib.import_module("run")
        solution = importlib.import_module(getattr(adapter, "SOLUTION", "solution"))
    except Exception:
        traceback.print_exc()
        return 1
    fn = getattr(adapter, stage, None)
    for name in names:
        if not NAME.match(name):
            continue
        case = Case(io, name)
        try:
            if fn is None:
                raise RuntimeError(f"the adapter has no {stage}() function")
            fn(case, solution)
        except Exception as exc:
            print(f"case {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            with contextlib.suppress(OSError):
                case.error(f"{type(exc).__name__}: {exc}")
    print(f"cudaenv runner: {len(names)} case(s) run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
