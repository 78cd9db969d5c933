"""Run a Python solution in a child process; the harness (the parent) only sees its arrays.

Shared by every bundled cuda_python harness (one copy in ``envs/cuda-python/_shared/test/``,
which the loader gives each problem of the group as its own hidden test file, so it reaches the
grading sandbox like any hidden test file and a solution cannot replace it).
A solution imported into the harness's own process could patch ``numpy.array_equal`` or read
the completion token, so the parent never imports solution code, numba or CUDA: it sends the
inputs to a child (``python pychild.py --child``) as ``.npy`` over a pipe, the child calls the
solution (host arrays, device arrays, or a timed loop inside the NVTX range ``bench_region``)
and sends the arrays back. Comparison, the completion token and the exit status stay here.
The grader's per-round ``CUDAENV_BENCH_SEED`` is taken out of the environment when this module
is imported (in the parent, before any child starts); ``bench_seed`` mixes it into the
benchmark's seeds, so a solution cannot know the benchmark input in advance.

Parent side::

    from pychild import Out, SolutionProcess
    with SolutionProcess("vector_add") as sol:
        a_after, b_after, out = sol.call([a, b, Out(out)], device=True).arrays
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TOKEN_ENV = "CUDAENV_COMPLETION_TOKEN"
TOKEN_PREFIX = "CUDAENV_COMPLETE"
#: what the harness prints when the solution printed a completion line: a token the grader never
#: issued, which it reports as a forged completion line (suspected hack)
FORGERY_MARK = f"{TOKEN_PREFIX} solution-printed-a-completion-line"
#: the grader's fresh seed per benchmark round (``cudaenv.grading.stages.BENCH_SEED_ENV``)
BENCH_SEED_ENV = "CUDAENV_BENCH_SEED"
_SECRET_ENVS = (TOKEN_ENV, BENCH_SEED_ENV)


def simulator() -> bool:
    """Whether numba-cuda's simulator is on (read from the environment, as numba does)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0")


def _take_env(name: str) -> str | None:
    """Remove ``name`` from this process's environment and return its value (None when
    unset). Its bytes in the original environment block are overwritten first:
    ``/proc/<pid>/environ`` shows that block, not the current environment (Linux; elsewhere
    the removal only)."""
    value = os.environ.get(name)
    if value is None:
        return None
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_void_p
        where = libc.getenv(name.encode())
        if where:
            ctypes.memset(where, ord("x"), len(os.fsencode(value)))
    os.environ.pop(name, None)
    return value


def take_token() -> str:
    """Remove the completion token from this process's environment and return it (its bytes
    in the environment block overwritten, see :func:`_take_env`)."""
    return _take_env(TOKEN_ENV) or ""


def _parse_seed(text: str | None) -> int | None:
    """The seed as the C++ harnesses read it: decimal digits only, fitting 64 bits."""
    if text is None or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value < 1 << 64 else None


_BENCH_SEED = _parse_seed(_take_env(BENCH_SEED_ENV))  # once, before any child starts


def bench_seed(default: int) -> int:
    """The seed a benchmark input is drawn from: ``default`` itself without a (well-formed)
    round seed, so a ``--perf`` run by hand stays deterministic; else a mix of both, so every
    round (and every ``default``) gets a different input."""
    if _BENCH_SEED is None:
        return default
    return int(np.random.SeedSequence([default, _BENCH_SEED]).generate_state(1, np.uint64)[0])


def _hide_from_children() -> None:
    """Make this process non-dumpable, so a same-user child cannot read its memory or its
    original environment block through /proc (Linux; elsewhere a no-op)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


@dataclass
class Out:
    """An argument the solution writes: its initial contents (garbage) go to the child."""

    array: np.ndarray


@dataclass
class Result:
    """One call's outcome: every array argument after the call (in argument order) and the
    solution's return value (a float/int/bool, a NumPy scalar, or a :class:`Foreign`)."""

    arrays: list[np.ndarray] = field(default_factory=list)
    value: Any = None


@dataclass(frozen=True)
class Foreign:
    """A return value of a type the child cannot send (only its type name comes back)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class ChildError(RuntimeError):
    """The solution raised, or its process died or sent something malformed."""


class _Pipe:
    """A pipe end that NumPy does not take for a seekable file (``np.fromfile`` needs one)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def read(self, n: int = -1) -> bytes:
        return self.raw.read(n)

    def readline(self, limit: int = -1) -> bytes:
        return self.raw.readline(limit)

    def write(self, data: bytes) -> int:
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def _write_array(stream: Any, arr: np.ndarray) -> None:
    np.lib.format.write_array(_Pipe(stream), np.ascontiguousarray(arr), allow_pickle=False)


def _read_array(stream: Any) -> np.ndarray:
    return np.lib.format.read_array(_Pipe(stream), allow_pickle=False)


def _send(stream: Any, header: dict[str, Any], arrays: list[np.ndarray]) -> None:
    header = {**header, "n_arrays": len(arrays)}
    stream.write(json.dumps(header).encode() + b"\n")
    for arr in arrays:
        _write_array(stream, arr)
    stream.flush()


def _receive_header(stream: Any) -> dict[str, Any]:
    line = stream.readline(1 << 20)
    if not line:
        raise EOFError
    header = json.loads(line)
    if not isinstance(header, dict) or not isinstance(header.get("n_arrays"), int):
        raise ValueError("malformed message header")
    return header


def _receive(stream: Any) -> tuple[dict[str, Any], list[np.ndarray]]:
    header = _receive_header(stream)
    return header, [_read_array(stream) for _ in range(header["n_arrays"])]


def _send_lazily(stream: Any, header: dict[str, Any], arrays: list[Callable[[], Any]]) -> None:
    """Like :func:`_send`, each array made only when it is written."""
    stream.write(json.dumps({**header, "n_arrays": len(arrays)}).encode() + b"\n")
    for make in arrays:
        _write_array(stream, make())
    stream.flush()


def _encode_args(calls: list[list[Any]]) -> tuple[list[list[Any]], list[np.ndarray]]:
    """Arguments as JSON (``{"a": i, "out": bool}`` for array i, or ``{"s": scalar}``) plus the
    array table. An array object travels once however often it is passed; the child gives each
    :class:`Out` argument a buffer of its own, initialised from it."""
    table: list[np.ndarray] = []
    index: dict[int, int] = {}
    specs: list[list[Any]] = []
    for args in calls:
        spec: list[Any] = []
        for arg in args:
            out = isinstance(arg, Out)
            arr = arg.array if out else arg
            if isinstance(arr, np.ndarray):
                if id(arr) not in index:
                    index[id(arr)] = len(table)
                    table.append(arr)
                spec.append({"a": index[id(arr)], "out": out})
            elif isinstance(arr, bool | int | float):
                spec.append({"s": arr})
            else:
                raise TypeError(f"argument of type {type(arr).__name__} cannot be sent")
        specs.append(spec)
    return specs, table


class SolutionProcess:
    """The solution's child process, talking over pipes; a context manager (closing twice is
    fine). ``function``: the solution's entry point, looked up in ``solution.py`` in the
    working directory."""

    def __init__(self, function: str, module: str = "solution") -> None:
        self.function = function
        self.module = module
        self._proc: subprocess.Popen[bytes] | None = None
        self._relay: threading.Thread | None = None
        self._pending: Iterator[Result] = iter(())
        self.forged = False  # the solution printed a completion line

    def __enter__(self) -> SolutionProcess:
        _hide_from_children()
        env = {k: v for k, v in os.environ.items() if k not in _SECRET_ENVS}
        self._proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", self.module, self.function],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=os.getcwd(),
        )
        self._relay = threading.Thread(target=self._forward, args=(self._proc.stderr,), daemon=True)
        self._relay.start()
        return self

    def _forward(self, stream: Any) -> None:
        """The child's output (its stdout and stderr) goes to this process's stderr, never to
        its stdout; a completion line in it is remembered."""
        for line in iter(stream.readline, b""):
            if TOKEN_PREFIX.encode() in line:
                self.forged = True
            sys.stderr.buffer.write(line)
            sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]
            proc.stdout.close()  # type: ignore[union-attr]  # an unread reply: the child stops
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._relay is not None:
            self._relay.join(timeout=30)
        if self.forged:
            print(FORGERY_MARK, flush=True)
            raise ChildError("the solution printed a completion line")

    def _request(
        self, header: dict[str, Any], calls: list[list[Any]], expect: int
    ) -> Iterator[Result]:
        """Send one request; the reply's arrays are read one result at a time, as the caller
        takes them (a benchmark's outputs never need to be in memory together)."""
        if self._proc is None:
            raise ChildError("the solution process is not running")
        for _ in self._pending:  # a reply not read to its end is read now
            pass
        specs, table = _encode_args(calls)
        try:
            _send(self._proc.stdin, {**header, "calls": specs}, table)
            reply = _receive_header(self._proc.stdout)
        except (OSError, EOFError, ValueError) as exc:
            raise self._failed(exc) from None
        if "error" in reply:
            raise ChildError(f"solution raised {str(reply['error'])[:2000]}")
        items = reply.get("results")
        if not isinstance(items, list) or len(items) != expect:
            raise ChildError("the solution process answered a different number of calls")
        self._pending = self._results(items, reply["n_arrays"])
        return self._pending

    def _failed(self, exc: BaseException) -> ChildError:
        code = self._proc.poll() if self._proc else None
        return ChildError(f"solution process failed (exit code {code}): {exc!r}")

    def _results(self, items: list[Any], n_arrays: int) -> Iterator[Result]:
        taken = 0

        def take(index: Any) -> np.ndarray:
            nonlocal taken
            if index != taken or taken >= n_arrays:
                raise ChildError("malformed reply from the solution process (array order)")
            taken += 1
            try:
                return _read_array(self._proc.stdout)  # type: ignore[union-attr]
            except (OSError, EOFError, ValueError) as exc:
                raise self._failed(exc) from None

        for item in items:
            try:
                got = [take(i) for i in item["arrays"]]
                value = self._value(item["value"], take)
            except (KeyError, TypeError) as exc:
                raise ChildError(f"malformed reply from the solution process: {exc!r}") from None
            yield Result(arrays=got, value=value)
        if taken != n_arrays:
            raise ChildError("malformed reply from the solution process (array count)")

    @staticmethod
    def _value(spec: Any, take: Any) -> Any:
        if "array" in spec:
            return take(spec["array"])[()]
        if "foreign" in spec:
            return Foreign(str(spec["foreign"]))
        value = spec["scalar"]
        if value is not None and not isinstance(value, bool | int | float):
            raise TypeError("scalar reply is not a number")
        return value

    def call(self, args: list[Any], *, device: bool) -> Result:
        """Call the solution once; with ``device`` its arrays are CUDA device arrays (copied in
        before and out after, with a synchronize). Returns every array argument afterwards."""
        (result,) = self._request({"op": "call", "device": device}, [args], 1)
        return result

    def bench(self, calls: list[list[Any]], warm: list[Any], warmups: int = 3) -> Iterator[Result]:
        """The benchmark: upload everything, call ``warm`` ``warmups`` times, then every call
        in ``calls`` inside one NVTX ``bench_region`` ending with a synchronize. Yields, per
        timed call, its :class:`Out` arrays and return value (read as they are taken)."""
        return self._request({"op": "bench", "warmups": warmups}, [*calls, warm], len(calls))


# ---------------------------------------------------------------------------------------
# The child: imports the solution; everything it sends back is checked by the parent.


def _bench_region() -> Any:
    try:
        import nvtx

        return nvtx.annotate("bench_region")
    except ImportError:  # simulator-only environments may lack nvtx
        return contextlib.nullcontext()


def _reply_value(value: Any, arrays: list[Callable[[], Any]]) -> dict[str, Any]:
    if isinstance(value, np.generic | np.ndarray) and np.asarray(value).dtype.kind in "biuf":
        host = np.asarray(value)
        arrays.append(lambda: host)
        return {"array": len(arrays) - 1}
    if value is None or isinstance(value, bool | int | float):
        return {"scalar": value}
    return {"foreign": type(value).__name__}


def _child(module: str, function: str) -> None:
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the solution's prints go to the parent's relay, never to its stdout
    sys.stdout = sys.stderr
    import warnings

    from numba import cuda
    from numba.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    if not simulator():
        cuda.current_context()  # the profiler takes its variables at CUDA start-up
    for name in ("CUDAENV_PROFILE_OUT", "CUDAENV_PROFILE_NONCE"):
        os.environ.pop(name, None)
    sys.path.insert(0, os.getcwd())
    import importlib

    fn = getattr(importlib.import_module(module), function)
    while True:
        try:
            header, table = _receive(proto_in)
        except EOFError:
            return
        try:
            results, arrays = _serve(cuda, fn, header, table)
        except Exception as exc:  # the parent reports it as a failure
            _send(proto_out, {"error": f"{type(exc).__name__}: {exc}"}, [])
            continue
        del table
        _send_lazily(proto_out, {"results": results}, arrays)


def _serve(cuda: Any, fn: Any, header: dict[str, Any], table: list[np.ndarray]) -> Any:
    """Run one request; returns the reply's results and, in order, what makes each array."""
    calls = header["calls"]
    bench = header["op"] == "bench"
    device = bench or bool(header.get("device"))
    shared = [cuda.to_device(a) for a in table] if device else table

    def bind(spec: dict[str, Any]) -> Any:
        if "a" not in spec:
            return spec["s"]
        if spec["out"]:  # a fresh buffer per output argument
            return cuda.to_device(table[spec["a"]]) if device else table[spec["a"]].copy()
        return shared[spec["a"]]

    argv = [[bind(s) for s in call] for call in calls]
    if device:
        table.clear()  # uploaded: the host copies are not needed any more
    values = []
    if bench:
        *timed, warm = argv
        for _ in range(int(header["warmups"])):
            fn(*warm)
        cuda.synchronize()
        with _bench_region():
            for args in timed:
                values.append(fn(*args))
            cuda.synchronize()
    else:
        timed = argv
        values.append(fn(*argv[0]))
        if device:
            cuda.synchronize()
    arrays: list[Callable[[], Any]] = []  # copied to the host one at a time, as they are sent
    results = []
    for spec, args, value in zip(calls, timed, values, strict=False):
        idx = []
        for s, arg in zip(spec, args, strict=True):
            if "a" in s and (s["out"] or not bench):
                arrays.append(arg.copy_to_host if device else (lambda a=arg: a))
                idx.append(len(arrays) - 1)
        results.append({"arrays": idx, "value": _reply_value(value, arrays)})
    return results, arrays


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    _child(sys.argv[2], sys.argv[3])
