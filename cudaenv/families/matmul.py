"""matmul (cuda_cpp): C = op(A) op(B) with either operand transposed and a fused epilogue
(bias, bias + ReLU, bias + GELU, residual, scaled residual), sizes that are not tile
multiples; float, double, or half with float accumulation."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Listed, Mutant, Params, Parts
from cudaenv.families.checks import Cases, tests
from cudaenv.families.matmul_src import EPILOGUES, baseline, extra_input, fn, reference, signature
from cudaenv.families.parts import cpp_parts
from cudaenv.families.runners import Arg, Io

DTYPES = ("f32", "f64", "f16")
SHAPES = {"square": (2048, 2048, 2048), "tall": (8192, 128, 1024), "deep": (512, 512, 8192)}
TESTS = [(1, 1, 1), (3, 5, 7), (1, 100, 513), (100, 1, 37), (33, 65, 17), (64, 64, 64),
         (129, 257, 300), (257, 129, 1024), (500, 70, 3)]  # fmt: skip
SIZES = ("M", "N", "K")
CALLS = 3  # timed calls, each on its own inputs and output
SAMPLE = 4096  # entries of each timed call's C compared (drawn by the checker after the run)
EPI_TEXT = {
    "none": "`C = op(A) * op(B)`",
    "bias": "`C[m][n] = (op(A) * op(B))[m][n] + bias[n]`",
    "bias_relu": "`C[m][n] = relu((op(A) * op(B))[m][n] + bias[n])`, `relu(t) = max(t, 0)`",
    "bias_gelu": "`C[m][n] = gelu((op(A) * op(B))[m][n] + bias[n])` with the tanh form "
    "`gelu(t) = 0.5 t (1 + tanh(0.7978845608028654 (t + 0.044715 t^3)))`",
    "residual": "`C = op(A) * op(B) + D`",
    "scale_residual": "`C = 0.5 * op(A) * op(B) - 1.5 * D`",
}


def _space() -> list[Params]:
    return [
        {"trans_a": ta, "trans_b": tb, "epilogue": e, "dtype": d, "shape": s}
        for ta in (False, True)
        for tb in (False, True)
        for e in EPILOGUES
        for d in DTYPES
        for s in SHAPES
    ]


def label(p: Params) -> str:
    return f"{fn(p)[5:].replace('_', '-')}-{p['shape']}-{p['dtype']}"


SPACE = Listed(_space, label)


def io(p: Params) -> Io:
    ex = extra_input(p)
    args = [Arg("A", p["dtype"]), Arg("B", p["dtype"])] + ([Arg(ex, p["dtype"])] if ex else [])
    arg = f"@{ex}@, " if ex else ""
    call = f"{fn(p)}(@A@, @B@, {arg}@C@, M, N, K)"
    return Io(fn(p), (*args, Arg("C", p["dtype"], "out")), SIZES, call)


def cases(p: Params) -> Cases:
    perf = dict(zip(SIZES, SHAPES[p["shape"]], strict=True))
    return Cases(tests(TESTS, SIZES, ("uniform",)), perf, CALLS, "uniform", sample=SAMPLE)


def prompt(p: Params, ct: cpp.CType) -> str:
    header = f"include/{fn(p)}.h"
    acc = "double" if ct.key == "f64" else "float"
    a = (
        "`A` is stored `K x M` (row-major) and `op(A) = A^T`"
        if p["trans_a"]
        else "`A` is `M x K` (row-major) and `op(A) = A`"
    )
    b = (
        "`B` is stored `N x K` (row-major) and `op(B) = B^T`"
        if p["trans_b"]
        else "`B` is `K x N` (row-major) and `op(B) = B`"
    )
    ex = extra_input(p)
    extra = {"bias": " `bias` has `N` elements.", "D": " `D` is `M x N` (row-major)."}.get(
        ex or "", ""
    )
    m, n, k = SHAPES[p["shape"]]
    tf32 = " (TF32 tensor-core math is not accurate enough)" if ct.key == "f32" else ""
    half = (
        " Tensor cores with half inputs and float accumulation are fine." if ct.key == "f16" else ""
    )
    return f"""Implement a matrix multiplication with a fused epilogue on the GPU. The interface is
declared in `{header}`:

```c++
{signature(p, ct)};
```

- {a}; {b}; `C` is `M x N` (row-major).{extra} All are {ct.label} device arrays; `C` does not
  overlap the inputs. Compute {EPI_TEXT[p["epilogue"]]}.
- Accumulate the dot products in {acc}{tf32}.{half}
- Sizes: `M, N >= 0` (nothing to do when either is 0), `K >= 1`, every matrix under 2^31
  elements; the tests use sizes that are not multiples of any tile (1, 3, 5, 7, 17, 33, 65,
  129, ...) and inputs uniform in [-1, 1]. The benchmark times {CALLS} calls with
  `M = {m}, N = {n}, K = {k}`, each with its own inputs (every output is checked: all of it
  written and finite, and a sample the checker draws after the run against the reference).
- `C`'s previous contents are garbage (NaN). Do not write outside it and do not modify the
  inputs.

Checking: `|C - exact| <= 2 * (2 K u sum_k |a_mk b_kn| + e)` per element, where `u` is the unit
roundoff of {acc}, `exact` is computed in double on the CPU and `e` is the epilogue's rounding
(plus the final rounding to half for half outputs): any order of {acc} accumulation passes,
accumulating in a narrower type does not.

{cpp.closing(header)}
"""


def difficulty(p: Params) -> str:
    score = 1 + (p["trans_a"] or p["trans_b"]) + (p["epilogue"] != "none") + (p["dtype"] == "f16")
    return "easy" if score <= 1 else "medium" if score <= 2 else "hard"


class Matmul(Family):
    name = "matmul"
    slug = "mm"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, p: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[p["dtype"]]
        m, n, k = SHAPES[p["shape"]]
        ex = extra_input(p)
        extra = {"bias": n, "D": m * n}.get(ex or "", 0)
        epi_flops = {"none": 0, "bias": 1, "bias_relu": 1, "bias_gelu": 9, "residual": 1,
                     "scale_residual": 3}[p["epilogue"]]  # fmt: skip
        return cpp_parts(self.name, p, task_id, header=f"{fn(p)}.h", declaration=signature(p, ct),
                         comment=f"C = {EPI_TEXT[p['epilogue']]} (see the task statement).",
                         includes=[ct.include], io=io(p), module="matmul", cases=cases(p),
                         prompt=prompt(p, ct), reference=reference(p, ct), baseline=baseline(p, ct),
                         difficulty=difficulty(p),  # type: ignore[arg-type]
                         tags=["matmul", "gemm", "shared-memory", p["epilogue"], p["dtype"], "compute-bound"]
                         + (["transpose"] if p["trans_a"] or p["trans_b"] else []),
                         work={"flops": CALLS * (2 * m * n * k + epi_flops * m * n),
                               "bytes": CALLS * (m * k + k * n + extra + m * n) * ct.size,
                               "dtype": {"f32": "fp32", "f64": "fp64", "f16": "fp16"}[ct.key]},
                         timeout_s=300)  # fmt: skip

    def mutants(self, p: Params) -> list[Mutant]:
        ct = cpp.CTYPES[p["dtype"]]

        def m(name: str, kind: str, why: str, bug: str, det: bool = True) -> Mutant:
            return Mutant(name, kind, why, {"solution.cu": reference(p, ct, bug)}, det)  # type: ignore[arg-type]

        out = [
            m("tail", "tail", "skips the last N mod 32 columns of C", "tail"),
            m("k-tail", "tail", "drops the last K mod 16 terms of every dot product", "k-tail"),
            m("axis", "axis", "reads A with the other transpose", "axis"),
        ]
        if p["epilogue"] != "none":
            out.append(m("no-epilogue", "operator", "forgets the epilogue", "no-epilogue"))
        if ct.key == "f64":
            out.append(m("precision", "accumulation", "accumulates in float", "precision"))
        out.append(m("no-sync", "sync", "loads the next K tile while others still read the last",
                     "no-sync", False))  # fmt: skip
        return out
