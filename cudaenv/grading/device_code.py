"""Checks on a solution's device code, read from the PTX its compile kept (``nvcc -keep``).

Why: the host object shows what the host calls, not what the GPU computes. Two rules need the
device code itself:

- **Reduced precision where the problem fixes it.** A problem whose work is fp32 (or fp64)
  asks for that precision; a kernel that converts to half, bfloat16, TF32 or FP8 and
  computes there can run several times faster and still pass a tolerance written
  for rounding noise. Any PTX instruction or register of a narrower floating type fails;
  ``metadata.precision: any`` (or a narrower ``precision``) lets a problem allow it.
- **Library device code** when the problem forbids libraries: a kernel or device function of
  CUB, Thrust, CUTLASS or CuTe in the PTX, however the source spelled the namespace.

The PTX lines come filtered from the toolchain script (:mod:`cudaenv.grading.static_cpp_script`,
``ptx_lines``): every line naming a narrow float type and every declaration naming a library,
each read from the whole file (a bound on the number of lines read once let an fp16 kernel
hide behind 500 empty ones).
"""

from __future__ import annotations

import re
from typing import Any

#: types narrower than fp32, as PTX spells them
_NARROW = r"f16|f16x2|bf16|bf16x2|tf32|e4m3|e4m3x2|e5m2|e5m2x2|e2m1x2|e3m2x2|e2m3x2"
#: PTX lines naming a narrow float type (instructions, registers, parameters)
PTX_NARROW_FILTER = rf"\.({_NARROW})\b"
#: kernel and device-function declarations whose mangled name holds a library's namespace
PTX_LIBRARY_FILTER = (
    r"^\s*(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b.*"
    r"(3cub|6thrust|7cutlass|4cute)"
)
_NARROW_TYPE = re.compile(rf"\.({_NARROW})\b")
_DECL = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_HALF_IO = ("cuda_fp16.h", "cuda_bf16.h", "__half", "__nv_bfloat16")
_LIBRARY = re.compile(r"(?:^_Z|[0-9A-Z_])(3cub|6thrust|7cutlass|4cute)(?=[0-9A-Z_])")


def fixed_precision(problem: Any) -> str | None:
    """The floating-point precision a problem's solutions must compute in: its
    ``metadata.precision``, else the dtype of its declared work when that is fp32 or fp64;
    None (no rule) for ``any``, narrower work, integer work, no declared work, or an interface
    (its headers or harness) that passes half or bfloat16 values."""
    from cudaenv.grading.speed_of_light import work_of

    declared = getattr(problem.metadata, "precision", None)
    if declared is not None:
        return None if declared == "any" else str(declared)
    if any(m in f.content for f in (*problem.context_files, *problem.test_files) for m in _HALF_IO):
        return None  # the interface itself passes narrow floats (half in, float accumulate)
    work = work_of(problem)
    return work.dtype if work is not None and work.dtype in ("fp32", "fp64") else None


def ptx_violations(
    path: str, lines: list[str], *, precision: str | None, libraries: bool
) -> list[str]:
    """Violations in the (filtered) PTX of solution source ``path``."""
    out: list[str] = []
    code = [ln.split("//", 1)[0].strip() for ln in lines]
    if precision in ("fp32", "fp64"):
        narrow = next((ln for ln in code if _NARROW_TYPE.search(ln)), None)
        if narrow is not None:
            kind = _NARROW_TYPE.search(narrow).group(1)  # type: ignore[union-attr]
            out.append(
                f"{path}: device code uses .{kind} ({narrow[:60]!r}), narrower than the "
                f"{precision} this problem fixes (reduced precision)"
            )
    if libraries:
        for ln in code:
            m = _DECL.search(ln)
            if m and _LIBRARY.search(m.group(2)):
                out.append(
                    f"{path}: device code holds {m.group(2)[:80]!r}, a library this problem forbids"
                )
                break
    return out


#: Python names of float types narrower than fp32 (numba kernels, NumPy)
_PY_NARROW = [
    "numpy.float16", "numpy.half", "numba.float16", "numba.types.float16",
    "numba.core.types.float16", "numba.cuda.fp16", "numba.cuda.bf16", "numba.bfloat16",
]  # fmt: skip


def narrow_python_names(precision: str | None) -> list[str]:
    """Forbidden references that keep a Python solution at ``precision`` (the static rules
    resolve aliases and every imported name, so ``from numba import float16`` is caught).
    fp64 work forbids the same narrow types, not float32: kernels name float32 for indices'
    neighbours and shared scratch too often for the name to mean reduced precision."""
    return list(_PY_NARROW) if precision in ("fp32", "fp64") else []
