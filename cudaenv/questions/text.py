"""How questions write code and data: listings (numbered where an answer names a line),
the call of an interface with its inputs (NumPy for Python, host arrays for C++), numbers, and
the sentence that says how to write an answer."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from cudaenv.questions.adapter import Rendered
from cudaenv.questions.cases import Case, dtype_of

FENCE = {"cuda_cpp": "c++", "cuda_python": "python"}
C_TYPES = {"float32": "float", "float64": "double", "float16": "__half", "int32": "int"}
INFINITIES = "Write infinities as Infinity and -Infinity."


def num(v: Any) -> str:
    """A number as the questions write it: integers plainly, others by their shortest repr."""
    f = float(v)
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if f.is_integer() and abs(f) < 2**53:
        return str(int(f))
    return repr(f)


def py_num(v: Any, dtype: str) -> str:
    f = float(v)
    if math.isinf(f):
        return "np.inf" if f > 0 else "-np.inf"
    return str(int(f)) if dtype == "int32" else (f"{f:.1f}" if f.is_integer() else repr(f))


def nested(a: np.ndarray, fmt: Any = num) -> str:
    """An array as nested brackets, written with ``fmt``."""
    if a.ndim == 0:
        return fmt(a.item())
    if a.ndim == 1:
        return "[" + ", ".join(fmt(v) for v in a.tolist()) + "]"
    return "[" + ", ".join(nested(sub, fmt) for sub in a) + "]"


def to_json(a: np.ndarray) -> list[Any]:
    """An output array as the JSON answer: nested lists of ints or floats (infinities kept)."""

    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(x) for x in v]
        f = float(v)
        return int(f) if f.is_integer() and not math.isinf(f) else f

    return conv(np.asarray(a).tolist())  # type: ignore[no-any-return]


def listing(source: str, language: str, *, numbered: bool = False) -> str:
    """A fenced listing; numbered lines read ``  12 | code`` (answers name those numbers)."""
    lines = source.rstrip("\n").split("\n")
    if numbered:
        width = len(str(len(lines)))
        lines = [f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1)]
    return f"```{FENCE.get(language, '')}\n" + "\n".join(lines) + "\n```"


def call_text(r: Rendered, case: Case) -> str:
    """The call of ``r``'s interface on ``case``, as a listing a model can read."""
    if r.language == "cuda_python":
        lines = ["import numpy as np", ""]
        for p in r.interface.params:
            a = case.arrays[p.name]
            dt = dtype_of(r, p.name)
            if p.name == case.output and np.all(a == a.reshape(-1)[0]):
                fill = py_num(a.reshape(-1)[0], dt)
                lines.append(f"{p.name} = np.full({tuple(a.shape)!r}, {fill}, dtype=np.{dt})")
            else:
                body = nested(a, lambda v, dt=dt: py_num(v, dt))
                lines.append(f"{p.name} = np.array({body}, dtype=np.{dt})")
        lines.append(f"{r.interface.function}({', '.join(p.name for p in r.interface.params)})")
        return listing("\n".join(lines), r.language)
    lines = ["// host arrays (row-major); d_<name> is a device copy of <name> made before the call"]
    for p in r.interface.params:
        if not p.pointer:
            continue
        a = case.arrays[p.name]
        const = "const " if p.const else ""
        shape = " x ".join(str(s) for s in a.shape)
        note = f"  // {shape}" if a.ndim > 1 else ""
        if p.name == case.output:
            note = "  // its contents before the call" + (f" ({shape})" if a.ndim > 1 else "")
        lines.append(
            f"{const}{p.ctype} {p.name}[{a.size}] = {{{', '.join(num(v) for v in a.reshape(-1))}}};{note}"
        )
    args = [f"d_{p.name}" if p.pointer else str(case.scalars[p.name]) for p in r.interface.params]
    lines.append(f"{r.interface.function}({', '.join(args)});")
    lines.append(
        f"cudaDeviceSynchronize();  // then d_{case.output} is copied back to {case.output}"
    )
    return listing("\n".join(lines), r.language)


def call_expression(r: Rendered, case: Case) -> str:
    """The call alone (what a lazy answer would copy)."""
    if r.language == "cuda_python":
        return f"{r.interface.function}({', '.join(p.name for p in r.interface.params)})"
    args = [f"d_{p.name}" if p.pointer else str(case.scalars[p.name]) for p in r.interface.params]
    return f"{r.interface.function}({', '.join(args)})"


def array_format(r: Rendered, case: Case, values: np.ndarray) -> str:
    """How to write an output array as the answer."""
    n = values.size
    inf = f" {INFINITIES}" if values.dtype.kind == "f" else ""
    if r.language == "cuda_cpp":
        return f"a JSON array of the {n} values of `{case.output}` in memory order.{inf}"
    shape = list(values.shape)
    return (f"a JSON array of the values of `{case.output}`, nested as its shape {shape} "
            f"(a flat list in row-major order is accepted too).{inf}")  # fmt: skip


def short_hash(*parts: Any) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12]


__all__ = [
    "array_format",
    "call_expression",
    "call_text",
    "listing",
    "nested",
    "num",
    "short_hash",
    "to_json",
]
