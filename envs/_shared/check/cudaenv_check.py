"""cudaenv_check: the library of a split harness's trusted CHECKER (numpy only).

A split harness has two halves. The RUNNER (``test/``, built or imported with the solution)
only turns inputs into outputs; it is untrusted, like the solution. The CHECKER (``check/``,
never linked with or importing solution code, in a sandbox of its own) draws fresh inputs for
every run and alone decides, after every process of the run is dead, from the outputs the
runner wrote. A problem's ``check/check.py`` is two functions and a call::

    import numpy as np
    from cudaenv_check import Case, exact, main

    def cases(stage, rng):                  # stage: "test" or "perf"; rng: numpy Generator
        a = rng.standard_normal(1000).astype(np.float32)
        return [Case("small", {"a": a, "scale": np.float32(2.0)})]

    def check(case, out):                   # -> list of failure messages ([] = passed)
        got = out.array("b", np.float32, case["a"].shape)
        return exact(got, case["a"] * case["scale"], "b")

    if __name__ == "__main__":
        main(cases, check)

The grader runs ``<checker.command> gen --stage S --seed N --dir D``, which writes
``D/manifest.txt`` (case names in run order) and ``D/<case>/<input>.npy``; after the runner's
run it runs ``<checker.command> verify --stage S --seed N --dir D --outputs O``, whose last
stdout line is ``{"passed": ..., "cases": ..., "failures": [...]}``. ``verify`` reads the cases
back from ``D`` (the checker's own folder: the runner got a copy), so ``check`` sees exactly
what the runner was given; ``cases`` draws everything from ``rng``, so a seed reproduces a run.
Checker-only data (a tolerance, a secret constant) are constants of ``check.py``. An exception
in ``cases`` or ``check`` is the checker's bug: a non-zero exit, which the grader reports as
an infrastructure fault, never as the solution's failure.

Outputs are untrusted files: :class:`Outputs` opens them without following links, only
regular files, size-capped, with the dtype and shape checked from the header before any data
is read, never unpickling. The comparison helpers return readable failure messages (counts,
the first bad index, got and expected values).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")  # case and array names (no "." or "..")
#: the dtypes both runner libraries read and write (numpy's ``dtype.str`` spellings)
DTYPES = frozenset(
    {"<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"}
)
#: the bit pattern runners fill output buffers with (by item size; a NaN for floats), so an
#: element the solution never wrote, or a write past the end, shows (same in cudaenv_runner.h)
POISON_BITS = {1: 0xA5, 2: 0x7E5D, 4: 0x7FC0DEAD, 8: 0x7FF8DEADDEADDEAD}
MAX_OUTPUT_BYTES = 1 << 30
MAX_FAILURES = 20
MAX_MESSAGE = 400


class OutputError(Exception):
    """An output is missing, not a regular file, too large, or of the wrong dtype/shape."""


def stream(seed: int, name: str) -> np.random.Generator:
    """A generator determined by (seed, name): one independent stream per name."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))


def simulator() -> bool:
    """Whether this grading runs cuda_python on numba-cuda's simulator (no GPU): a checker
    then draws smaller inputs (the grader gives the checker the same variable as the runner)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0")


def poison_of(dtype: Any) -> np.ndarray:
    """The poison value of ``dtype`` as a 0-d array of that dtype."""
    dt = np.dtype(dtype)
    bits = np.array(POISON_BITS[dt.itemsize], dtype=f"<u{dt.itemsize}")
    return bits.view(dt.newbyteorder("<")).reshape(())


def is_poison(arr: np.ndarray) -> np.ndarray:
    """Elementwise: does ``arr`` hold the poison bit pattern (bitwise, so NaNs compare)?"""
    size = arr.dtype.itemsize
    return _contiguous(arr).view(f"<u{size}") == POISON_BITS[size]


def _contiguous(value: Any) -> np.ndarray:
    """A C-contiguous array of ``value``, 0-d kept 0-d (``np.ascontiguousarray`` makes it 1-d)."""
    arr = np.asarray(value)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _as_input(name: str, value: Any) -> np.ndarray:
    arr = _contiguous(value)
    if not NAME.match(name):
        raise ValueError(f"input name {name!r} is not [A-Za-z0-9_.-]+")
    if arr.dtype.newbyteorder("<").str not in DTYPES:
        raise ValueError(f"input {name!r} has dtype {arr.dtype}, which runners cannot read")
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False)


@dataclass
class Case:
    """One case: its name and the inputs the runner gets (arrays; Python or numpy scalars
    become 0-d arrays: give numpy scalars such as ``np.float32(2)`` to fix the dtype)."""

    name: str
    inputs: dict[str, Any]

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"case name {self.name!r} is not [A-Za-z0-9_.-]+")
        self.inputs = {k: _as_input(k, v) for k, v in self.inputs.items()}

    def __getitem__(self, key: str) -> np.ndarray:
        return self.inputs[key]


def _open_nofollow(parent: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise OutputError(f"{name} is missing") from None
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OutputError(f"{name} is a link or not what it should be") from None
        raise OutputError(f"{name} cannot be opened ({os.strerror(exc.errno or 0)})") from None


class Outputs:
    """The runner's outputs of one case (``<outputs>/<case>/``), read defensively."""

    def __init__(self, root: str, case: str, max_bytes: int = MAX_OUTPUT_BYTES) -> None:
        self.root, self.case, self.max_bytes = root, case, max_bytes

    def _open(self, filename: str) -> tuple[int, int]:
        """An fd of the regular file ``<case>/<filename>`` and its size."""
        top = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            case = _open_nofollow(top, self.case, os.O_RDONLY | os.O_DIRECTORY)
        except OutputError:
            raise OutputError(f"{filename} is missing (no outputs at all for the case)") from None
        finally:
            os.close(top)
        try:
            fd = _open_nofollow(case, filename, os.O_RDONLY | os.O_NONBLOCK)
        finally:
            os.close(case)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OutputError(f"{filename} is not a regular file")
        if info.st_size > self.max_bytes:
            os.close(fd)
            raise OutputError(f"{filename} is {info.st_size} bytes (limit {self.max_bytes})")
        return fd, info.st_size

    def error(self) -> str | None:
        """The runner's ``error.txt`` for this case (a short message), if it wrote one."""
        try:
            fd, _ = self._open("error.txt")
        except OutputError:
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read(2000).decode("utf-8", "replace").strip() or "(empty error.txt)"

    def array(
        self, name: str, dtype: Any = None, shape: tuple[int, ...] | None = None
    ) -> np.ndarray:
        """The output ``name`` (``<name>.npy``); ``dtype`` and ``shape``, when given, must
        match exactly (checked from the header, before the data is read)."""
        fd, size = self._open(f"{name}.npy")
        with os.fdopen(fd, "rb") as fh:
            try:
                version = np.lib.format.read_magic(fh)
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                got_shape, fortran, got_dtype = read_header(fh)
            except (ValueError, OSError, SyntaxError) as exc:
                raise OutputError(f"{name}: not a .npy file ({exc})") from None
            if fortran or got_dtype.hasobject or got_dtype.str not in DTYPES:
                raise OutputError(f"{name}: unsupported array layout or dtype {got_dtype.str}")
            if dtype is not None and got_dtype != np.dtype(dtype).newbyteorder("<"):
                want = np.dtype(dtype).newbyteorder("<").str
                raise OutputError(f"{name}: dtype {got_dtype.str}, expected {want}")
            if shape is not None and tuple(got_shape) != tuple(shape):
                raise OutputError(f"{name}: shape {tuple(got_shape)}, expected {tuple(shape)}")
            nbytes = int(np.prod(got_shape, dtype=np.int64)) * got_dtype.itemsize
            if fh.tell() + nbytes != size:
                raise OutputError(f"{name}: file size does not match its header")
            data = fh.read(nbytes)
        return np.frombuffer(data, dtype=got_dtype).reshape(got_shape)


def _where(index: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(index)
    return str(tuple(int(i) for i in np.unravel_index(index, shape)))


def mismatch(
    what: str, bad: np.ndarray, got: np.ndarray, want: np.ndarray, why: str = ""
) -> list[str]:
    """One message for the elements where ``bad`` is set ([] when none is)."""
    flat = np.flatnonzero(bad)
    if flat.size == 0:
        return []
    i = int(flat[0])
    g, w = got.reshape(-1)[i], np.broadcast_to(want, got.shape).reshape(-1)[i]
    return [
        f"{what}: {flat.size} of {bad.size} elements wrong; first at index {_where(i, got.shape)}: "
        f"got {g.item()!r}, expected {w.item()!r}{why}"
    ]


def _same_shape(got: np.ndarray, want: np.ndarray, what: str) -> list[str]:
    if got.shape != np.shape(want):
        return [f"{what}: shape {got.shape}, expected {np.shape(want)}"]
    return []


def exact(got: np.ndarray, want: Any, what: str) -> list[str]:
    """Every element equal (NaN where ``want`` has NaN; -0.0 equals 0.0)."""
    want = np.asarray(want)
    if bad := _same_shape(got, want, what):
        return bad
    equal = got == want
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        equal |= np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    return mismatch(what, ~equal, got, want)


def close(
    got: np.ndarray,
    want: Any,
    what: str,
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    tol: Any = None,
) -> list[str]:
    """|got - want| <= atol + rtol * |want| (+ ``tol``, an elementwise bound), in float64.
    A NaN or infinity in ``want`` must be matched exactly; a NaN in ``got`` elsewhere fails."""
    want = np.asarray(want)
    if bad := _same_shape(got, want, what):
        return bad
    g, w = got.astype(np.float64), want.astype(np.float64)
    bound = atol + rtol * np.abs(w) + (0.0 if tol is None else np.asarray(tol, dtype=np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(g - w) <= bound
    special = ~np.isfinite(w)
    ok = np.where(special, (g == w) | (np.isnan(g) & np.isnan(w)), ok)
    return mismatch(what, ~ok, got, want, f" (tolerance atol={atol:g}, rtol={rtol:g})")


def ulps(got: np.ndarray, want: Any, what: str, max_ulps: int) -> list[str]:
    """At most ``max_ulps`` units in the last place apart (same float dtype; NaN matches NaN)."""
    want = np.asarray(want, dtype=got.dtype)
    if bad := _same_shape(got, want, what):
        return bad
    if got.dtype.kind != "f":
        return [f"{what}: ulps() needs a float array, got {got.dtype}"]
    ints = f"<i{got.dtype.itemsize}"

    def ordered(x: np.ndarray) -> np.ndarray:  # monotone integer image of the floats
        i = _contiguous(x).view(ints).astype(np.int64)
        return np.where(i < 0, np.iinfo(ints).min - i, i)

    a, b = ordered(got), ordered(want)
    same_sign = (a >= 0) == (b >= 0)  # exact integers there; across zero the sum of distances
    across = np.abs(a).astype(np.float64) + np.abs(b).astype(np.float64)  # no overflow
    near = np.where(same_sign, np.abs(a - b) <= max_ulps, across <= max_ulps)
    nan = np.isnan(got) | np.isnan(want)
    ok = np.where(nan, np.isnan(got) & np.isnan(want), near)
    return mismatch(what, ~ok, got, want, f" (at most {max_ulps} ulps)")


def guard(arr: np.ndarray, what: str) -> list[str]:
    """Every element still holds the poison (a guard zone after an output: nothing written)."""
    return mismatch(what, ~is_poison(arr), arr, poison_of(arr.dtype), " (guard zone overwritten)")


CasesFn = Callable[[str, np.random.Generator], list[Case]]
CheckFn = Callable[[Case, Outputs], list[str]]


def _write_inputs(made: list[Case], directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for case in made:
        os.makedirs(os.path.join(directory, case.name), exist_ok=False)
        for name, arr in case.inputs.items():
            np.save(os.path.join(directory, case.name, f"{name}.npy"), arr, allow_pickle=False)
    with open(os.path.join(directory, "manifest.txt"), "w") as fh:
        fh.write("".join(f"{c.name}\n" for c in made))


def _read_inputs(directory: str) -> list[Case]:
    """The cases ``gen`` wrote to ``directory`` (trusted: only gen ever wrote there)."""
    with open(os.path.join(directory, "manifest.txt")) as fh:
        names = [line.strip() for line in fh if line.strip()]
    made = []
    for name in names:
        folder = os.path.join(directory, name)
        arrays = {
            f[: -len(".npy")]: np.load(os.path.join(folder, f), allow_pickle=False)
            for f in sorted(os.listdir(folder))
            if f.endswith(".npy")
        }
        made.append(Case(name, arrays))
    return made


def _verify(made: list[Case], check: CheckFn, outputs: str) -> list[str]:
    failures: list[str] = []
    for case in made:
        out = Outputs(outputs, case.name)
        found: list[str] = []
        if (err := out.error()) is not None:
            found.append(f"the runner reported an error: {err}")
        try:
            found += check(case, out)
        except OutputError as exc:
            found.append(str(exc))
        failures += [f"{case.name}: {m}"[:MAX_MESSAGE] for m in found]
    return failures


def main(cases: CasesFn, check: CheckFn, argv: list[str] | None = None) -> None:
    """The checker's command line: ``gen`` or ``verify`` (module docstring)."""
    parser = argparse.ArgumentParser(description="a split harness's checker")
    parser.add_argument("command", choices=("gen", "verify"))
    parser.add_argument("--stage", choices=("test", "perf"), required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--outputs")
    args = parser.parse_args(argv)
    if args.command == "gen":
        made = cases(args.stage, stream(args.seed, args.stage))
        names = [c.name for c in made]
        if len(set(names)) != len(names) or not made:
            raise ValueError(f"cases() must return uniquely named cases, got {names}")
        _write_inputs(made, args.dir)
        print(json.dumps({"cases": len(made)}))
        return
    if args.outputs is None:
        parser.error("verify needs --outputs")
    made = _read_inputs(args.dir)
    failures = _verify(made, check, args.outputs)
    report = {"passed": not failures, "cases": len(made), "failures": failures[:MAX_FAILURES]}
    if len(failures) > MAX_FAILURES:
        report["failures"].append(f"... and {len(failures) - MAX_FAILURES} more")
    sys.stdout.write(json.dumps(report) + "\n")


__all__ = [
    "Case",
    "OutputError",
    "Outputs",
    "close",
    "exact",
    "guard",
    "is_poison",
    "main",
    "mismatch",
    "poison_of",
    "simulator",
    "stream",
    "ulps",
]
