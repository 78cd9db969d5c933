"""family_check: the checker glue every generated problem shares (trusted; NumPy only).

Copied verbatim into each generated problem's ``check/`` folder, beside the family's reference
semantics (``reference.py``, one module per family shared by its C++ and Python renderings)
and the problem's ``check.py``, which lists its parameters and cases and calls :func:`main`.
The checker never sees solution code: it draws every run's inputs from the run's seed, lays
them out the way the problem's runner reads them, and decides on the outputs it wrote.

A reference module ``ref`` says, for the family's parameters ``p`` and a case's sizes:
``ref.inputs(p, sizes)`` and ``ref.outputs(p, sizes)`` (name -> (shape, numpy dtype), in the
call's order; an output that is also an input starts from that input's values),
``ref.draw(p, sizes, kind, rng)`` (the input arrays) and ``ref.expected(p, sizes, arrays)``
(output name -> (want, tol): ``tol`` None for exact results, else an elementwise bound on
``|got - want|``, computed in float64). Optional: ``ref.expected_at(p, sizes, arrays, name,
flat_indices)`` (a sample of an output whose full reference is costly) and
``ref.shifted(p, sizes, kind, calls, rng)`` (a benchmark whose calls read windows of one
shared input: name -> (flat array, stride), call ``r`` reading the window at ``r * stride``).

Layouts. C++ (``rendering == "cpp"``): the sizes are int32 scalars, arrays are flat, every
output and every input comes back with ``GUARD`` poisoned elements after it (an output must
fill its part and leave the guard alone; an input must come back unchanged, guard included).
Python: arrays keep their shapes; a test case is run with device arrays and, when its
``host`` flag is set, first with host arrays too, each variant's outputs and inputs coming
back as ``<name>.device`` / ``<name>.host``. Benchmark: ``calls`` timed calls, call ``r``
reading ``<input>.<r>`` (or its window of the shared input) and writing ``<output>.<r>``;
every one of them is checked, in full, or for a costly reference on ``sample`` elements
drawn here, at verify time, from the run's seed (never a fixed stride known in advance)
while every element is still checked to be written and finite.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # beside check.py in a problem's check/ folder; from the package (tests) on a path given
    import cudaenv_check as lib
except ModuleNotFoundError:  # pragma: no cover - only the package's own import
    lib = None

GUARD = 64  # poisoned elements after each C++ array

Sizes = dict[str, int]
Test = tuple[str, Sizes, str, bool]  # case name, sizes, input kind, also with host arrays


def _shape_input(shape: tuple[int, ...]) -> np.ndarray:
    return np.array(shape, dtype=np.int64).reshape(len(shape))


class Checker:
    """The cases and the verdict of one generated problem (see the module docstring)."""

    def __init__(
        self,
        ref: Any,
        params: dict[str, Any],
        rendering: str,
        tests: list[Test],
        perf: Callable[[Any], list[Any]],
        perf_kind: str,
        sample: int = 0,
    ) -> None:
        assert rendering in ("cpp", "py"), rendering
        self.ref, self.params, self.rendering = ref, params, rendering
        self.tests, self.perf, self.perf_kind, self.sample = tests, perf, perf_kind, sample
        self.seed: int | None = None  # the run's seed, known at verify (the sample's source)

    # ---------------------------------------------------------------- gen
    def _scalars(self, sizes: Sizes) -> dict[str, Any]:
        """The sizes, and what the runner needs besides: ``work`` (every array of the call is
        non-empty: on a GPU its call must then run kernels) and the guard's length."""
        shapes = {**self.ref.inputs(self.params, sizes), **self.ref.outputs(self.params, sizes)}
        work = all(int(np.prod(s, dtype=np.int64)) > 0 for s, _ in shapes.values())
        out: dict[str, Any] = {k: np.int32(v) for k, v in sizes.items()}
        return {**out, "work": np.int32(work), "guard": np.int32(GUARD)}

    def _lay(self, arr: np.ndarray) -> np.ndarray:
        """C++ runners read flat arrays; Python ones the shapes."""
        return arr.reshape(-1) if self.rendering == "cpp" else arr

    def test_case(self, name: str, sizes: Sizes, kind: str, host: bool, rng: Any) -> Any:
        arrays = self.ref.draw(self.params, sizes, kind, rng)
        inputs = self._scalars(sizes) | {"host": np.int32(host)}
        inputs |= {k: self._lay(a) for k, a in arrays.items()}
        for out, (shape, _) in self.ref.outputs(self.params, sizes).items():
            inputs[f"{out}.shape"] = _shape_input(shape)
        return lib.Case(name, inputs)

    def perf_case(self, rng: Any, sizes: Sizes, calls: int) -> Any:
        """The benchmark's one case: ``calls`` timed calls of ``sizes``."""
        inputs = self._scalars(sizes) | {"calls": np.int32(calls)}
        shifted = getattr(self.ref, "shifted", None)
        if shifted is not None:
            for name, (flat, stride) in shifted(
                self.params, sizes, self.perf_kind, calls, rng
            ).items():
                inputs[name] = flat.reshape(-1)
                inputs[f"{name}.stride"] = np.int64(stride)
        else:
            for r in range(calls):
                for name, arr in self.ref.draw(self.params, sizes, self.perf_kind, rng).items():
                    inputs[f"{name}.{r}"] = self._lay(arr)
        for name, (shape, _) in {
            **self.ref.inputs(self.params, sizes),
            **self.ref.outputs(self.params, sizes),
        }.items():
            inputs[f"{name}.shape"] = _shape_input(shape)
        return lib.Case("perf", inputs)

    def cases(self, stage: str, rng: Any) -> list[Any]:
        if stage == "perf":
            return self.perf(rng)
        return [self.test_case(n, s, k, h, rng) for n, s, k, h in self.tests]

    # ---------------------------------------------------------------- verify
    def _sizes(self, case: Any) -> Sizes:
        skip = {"work", "guard", "host", "calls"}
        return {
            k: int(v)
            for k, v in case.inputs.items()
            if v.ndim == 0 and "." not in k and k not in skip and v.dtype == np.int32
        }

    def _arrays(self, case: Any, sizes: Sizes, suffix: str = "") -> dict[str, np.ndarray]:
        """The inputs of one call, in their shapes (a benchmark call's by its suffix)."""
        out = {}
        for name, (shape, _) in self.ref.inputs(self.params, sizes).items():
            if f"{name}.stride" in case.inputs:  # a window of the shared benchmark input
                r, stride = int(suffix[1:]), int(case[f"{name}.stride"])
                count = int(np.prod(shape, dtype=np.int64))
                out[name] = case[name][r * stride : r * stride + count].reshape(shape)
            else:
                out[name] = case[name + suffix].reshape(shape)
        return out

    def _compare(self, got: np.ndarray, want: np.ndarray, tol: Any, what: str) -> list[str]:
        if tol is None:
            return lib.exact(got, want, what)
        return lib.close(got, want, what, tol=tol)

    def _unchanged(self, got: np.ndarray, given: np.ndarray, what: str) -> list[str]:
        """An input after the call: bit for bit what was given (and, C++, its guard intact)."""
        n = given.size
        if self.rendering == "cpp":
            if got.shape != (n + GUARD,):
                return [f"{what}: shape {got.shape}, expected {(n + GUARD,)}"]
            found = lib.guard(got[n:], f"{what} past the end")
            got = got[:n]
        else:
            found = [] if got.shape == given.shape else [f"{what}: shape {got.shape}"]
            if found:
                return found
        size = given.dtype.itemsize
        flat_got = np.ascontiguousarray(got).reshape(-1).view(f"<u{size}")
        flat_given = np.ascontiguousarray(given).reshape(-1).view(f"<u{size}")
        bad = flat_got != flat_given
        return found + lib.mismatch(
            f"{what} (modified by the call)", bad, got.reshape(-1), given.reshape(-1)
        )

    def _output(self, out: Any, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An output as the runner wrote it, checked for shape, dtype and (C++) its guard."""
        count = int(np.prod(shape, dtype=np.int64))
        if self.rendering == "cpp":
            return out.array(name, dtype, (count + GUARD,))
        return out.array(name, dtype, tuple(shape))

    def _judge(
        self, out: Any, sizes: Sizes, arrays: dict[str, np.ndarray], names: dict[str, str]
    ) -> list[str]:
        """The outputs of one call (``names``: output -> the file it was written as)."""
        found: list[str] = []
        outputs = self.ref.outputs(self.params, sizes)
        sample = self.sample and hasattr(self.ref, "expected_at")
        want = None if sample else self.ref.expected(self.params, sizes, arrays)
        for name, (shape, dtype) in outputs.items():
            file = names[name]
            got = self._output(out, file, shape, dtype)
            count = int(np.prod(shape, dtype=np.int64))
            if self.rendering == "cpp":
                found += lib.guard(got[count:], f"{file} past the end")
                got = got[:count]
            got = got.reshape(-1)
            if want is not None:
                w, tol = want[name]
                t = None if tol is None else np.broadcast_to(tol, w.shape).reshape(-1)
                found += self._compare(got, np.asarray(w).reshape(-1), t, file)
                continue
            # a costly reference: every element written and finite, a sample compared
            found += lib.mismatch(
                f"{file} (never written)", lib.is_poison(got), got, lib.poison_of(got.dtype)
            )
            with np.errstate(invalid="ignore"):
                finite = np.isfinite(got.astype(np.float64))
            found += lib.mismatch(f"{file} (not finite)", ~finite, got, np.zeros(1))
            rng = lib.stream(self.seed or 0, f"sample/{file}")
            picked = np.sort(rng.choice(count, size=min(self.sample, count), replace=False))
            w, tol = self.ref.expected_at(self.params, sizes, arrays, name, picked)
            found += self._compare(
                got[picked], w, tol, f"{file} (sampled elements, flat indices {picked[:3]}...)"
            )
        return found

    def check(self, case: Any, out: Any) -> list[str]:
        sizes = self._sizes(case)
        if case.name == "perf":
            found: list[str] = []
            for r in range(int(case["calls"])):
                arrays = self._arrays(case, sizes, f".{r}")
                names = {o: f"{o}.{r}" for o in self.ref.outputs(self.params, sizes)}
                found += self._judge(out, sizes, arrays, names)
            return found
        arrays = self._arrays(case, sizes)
        outs = self.ref.outputs(self.params, sizes)
        variants = [""] if self.rendering == "cpp" else ["host", "device"]
        if self.rendering == "py" and not int(case["host"]):
            variants = ["device"]
        found = []
        for v in variants:
            dot = f".{v}" if v else ""
            found += self._judge(out, sizes, arrays, {o: o + dot for o in outs})
            for name, given in arrays.items():
                if name in outs:  # an in-out array: its output is judged above
                    continue
                file = f"{name}.after" if not v else f"{name}{dot}"
                _, dtype = self.ref.inputs(self.params, sizes)[name]
                length = given.size + (GUARD if self.rendering == "cpp" else 0)
                shape = (length,) if self.rendering == "cpp" else given.shape
                got = out.array(file, dtype, shape)
                found += self._unchanged(got, case[name], file)
        return found


def main(checker: Checker, argv: list[str] | None = None) -> None:
    """The command line (``gen``/``verify``, cudaenv_check's); verify knows the run's seed,
    from which a costly reference's sample is drawn after the run."""
    args = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--seed", type=int)
    known, _ = parser.parse_known_args(args)
    checker.seed = known.seed
    lib.main(checker.cases, checker.check, args)


__all__ = ["GUARD", "Checker", "main"]
