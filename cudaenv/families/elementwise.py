"""elementwise (cuda_cpp): a fused element-wise expression of one to three inputs over a
``rows x cols`` matrix, inputs broadcast as full matrices, row vectors or column vectors;
float, double, or half with float math. The tolerance is twice a forward error bound the host
reference computes node by node (see :mod:`cudaenv.families.expr`)."""

from __future__ import annotations

from cudaenv.families import cpp, expr
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.elementwise_ops import (
    CALLS,
    FN,
    PERF,
    SIZES,
    SPACE,
    compute_type,
    cpp_cases,
    difficulty,
    work,
)
from cudaenv.families.parts import cpp_parts
from cudaenv.families.runners import Arg, Io


def index(kind: str) -> str:
    # the axis mutant indexes a broadcast vector by the other coordinate (wrapped)
    return {"full": "i", "row": "c", "col": "r", "row-wrong": "r % cols", "col-wrong": "c % rows"}[
        kind
    ]


def _signature(params: Params, ct: cpp.CType) -> str:
    ins = "".join(f"const {ct.dev}* x{i}, " for i in range(len(params["bcast"])))
    return f"void {FN}({ins}{ct.dev}* out, int rows, int cols)"


def _kernel(params: Params, ct: cpp.CType, *, tree: object = None, bug: str | None = None) -> str:
    tree = tree if tree is not None else params["expr"]
    comp, _ = compute_type(params["dtype"])
    wrap = ""
    pre = ""
    if bug == "precision":
        if params["dtype"] == "f64":
            comp = "float"
        else:
            wrap, pre = (
                "rnd",
                "__device__ __forceinline__ float rnd(float v) { return __half2float(__float2half_rn(v)); }\n",
            )
    bc = list(params["bcast"])
    if bug == "axis":
        k = next(i for i, b in enumerate(bc) if b != "full")
        bc[k] = bc[k] + "-wrong"
    loads = "".join(
        f"            const C v{i} = (C){ct.to_acc(f'x{i}[{index(b)}]')};\n"
        for i, b in enumerate(bc)
    )
    params_list = "".join(f"const T* __restrict__ x{i}, " for i in range(len(bc)))
    args = "".join(f"x{i}, " for i in range(len(bc)))
    end = "(cols & ~31)" if bug == "tail" else "cols"
    rows_end = "rows - 1" if bug == "boundary" else "rows"
    half = ct.key == "f16" or wrap
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if half else ""}
#include "{FN}.h"

// out = {expr.math_text(params["expr"])}, evaluated in {comp}.
typedef {ct.dev} T;
typedef {comp} C;
constexpr int kThreads = 256;
{pre}
// Blocks of 256 adjacent columns; blockIdx.y (grid-strided) walks the rows.
__global__ void __launch_bounds__(kThreads)
ew_kernel({params_list}T* __restrict__ out, int rows, int cols) {{
    for (int r = blockIdx.y; r < {rows_end}; r += gridDim.y) {{
        for (int c = blockIdx.x * kThreads + threadIdx.x; c < {end}; c += gridDim.x * kThreads) {{
            const size_t i = (size_t)r * cols + c;
            (void)i;
{loads}            out[i] = {ct.from_acc("(" + ct.acc + ")(" + expr.device(tree, "C", wrap) + ")")};
        }}
    }}
}}

{_signature(params, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    int gx = (cols + kThreads - 1) / kThreads;
    if (gx > 1024) gx = 1024;
    const int gy = rows < 65535 ? rows : 65535;
    ew_kernel<<<dim3(gx, gy), kThreads>>>({args}out, rows, cols);
}}
"""


def _baseline(params: Params, ct: cpp.CType) -> str:
    comp, _ = compute_type(params["dtype"])
    bc = params["bcast"]
    loads = "".join(
        f"        const C v{i} = (C){ct.to_acc(f'x{i}[{index(b)}]')};\n" for i, b in enumerate(bc)
    )
    params_list = "".join(f"const T* x{i}, " for i in range(len(bc)))
    args = "".join(f"x{i}, " for i in range(len(bc)))
    return f"""#include <cmath>
#include <cuda_runtime.h>
{"#include <cuda_fp16.h>" if ct.key == "f16" else ""}
#include "{FN}.h"

// Naive baseline: one thread per row walks its columns (neighbouring threads touch addresses
// a row apart, so no load is coalesced).
typedef {ct.dev} T;
typedef {comp} C;

__global__ void naive({params_list}T* out, int rows, int cols) {{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) {{
        const size_t i = (size_t)r * cols + c;
        (void)i;
{loads}        out[i] = {ct.from_acc("(" + ct.acc + ")(" + expr.device(params["expr"], "C") + ")")};
    }}
}}

{_signature(params, ct)} {{
    if (rows <= 0 || cols <= 0) return;
    naive<<<(rows + 127) / 128, 128>>>({args}out, rows, cols);
}}
"""


def io(params: Params, ct: cpp.CType) -> Io:
    n = len(params["bcast"])
    args = (*(Arg(f"x{i}", ct.key) for i in range(n)), Arg("out", ct.key, "out"))
    ins = "".join(f"@x{i}@, " for i in range(n))
    return Io(FN, args, SIZES, f"{FN}({ins}@out@, rows, cols)")


def bcast_text(bc: list[str]) -> str:
    out = []
    for i, b in enumerate(bc):
        out.append({
            "full": f"`x{i}` is a full `rows x cols` matrix (element `(r, c)` at `x{i}[r * cols + c]`)",
            "row": f"`x{i}` is a row vector of `cols` elements, the same for every row (`x{i}[c]`)",
            "col": f"`x{i}` is a column vector of `rows` elements, the same for every column (`x{i}[r]`)",
        }[b])  # fmt: skip
    return "; ".join(out)


def tolerance_text(params: Params) -> str:
    comp, _ = compute_type(params["dtype"])
    half = " plus the final rounding to half" if params["dtype"] == "f16" else ""
    return (
        f"Checking: every element must be within twice the forward error bound of evaluating "
        f"the formula as written in {comp}{half} (the host reference carries a bound node by "
        "node: each operation's own rounding plus what its operands' errors can become), "
        f"around the exact value computed in double on the CPU. Evaluating in {comp} in any "
        "order of the written operations (fused multiply-adds included) with the standard "
        f"`{'tanhf`/`expf' if comp == 'float' else 'tanh`/`exp'}` passes"
        + ("." if params["dtype"] == "f16" else "; evaluating in a narrower type does not.")
    )


def prompt(params: Params, ct: cpp.CType) -> str:
    comp, _ = compute_type(params["dtype"])
    header = f"include/{FN}.h"
    return f"""Implement a fused element-wise kernel on the GPU. The interface is declared in `{header}`:

```c++
{_signature(params, ct)};
```

- For every `0 <= r < rows` and `0 <= c < cols`, write `out[r * cols + c] = f(...)` with
  `f = {expr.math_text(params["expr"])}`, where {bcast_text(params["bcast"])}. Here
  `relu(t) = max(t, 0)`, `sigmoid(t) = 1 / (1 + exp(-t))`, `(t)^2 = t * t`.
- Element type: {ct.label}{"; read the inputs as float, evaluate in float and round the result to half" if ct.key == "f16" else f"; evaluate in {comp}"}.
- All pointers are device pointers; `out` does not overlap any input, and its previous
  contents are garbage (NaN). Do not write outside `out[0 .. rows*cols - 1]` and do not modify
  the inputs.
- Sizes: `rows >= 0`, `cols >= 0` (nothing to do when either is 0), `rows * cols < 2^31`. The
  tests cover single elements, sizes that are not multiples of 32 or of any block size, very
  tall and very wide shapes and about a million elements; inputs are uniform in [-2, 2]. The
  benchmark times {CALLS} calls on {PERF[0]} x {PERF[1]} matrices, each with its own inputs.

{tolerance_text(params)}

{cpp.closing(header)}
"""


class Elementwise(Family):
    name = "elementwise"
    slug = "ew"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, params: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[params["dtype"]]
        return cpp_parts(self.name, params, task_id, header=f"{FN}.h",
                         declaration=_signature(params, ct),
                         comment=f"out = {expr.math_text(params['expr'])} (see the task statement).",
                         includes=[ct.include], io=io(params, ct), module="elementwise",
                         cases=cpp_cases(params), prompt=prompt(params, ct),
                         reference=_kernel(params, ct), baseline=_baseline(params, ct),
                         difficulty=difficulty(params),  # type: ignore[arg-type]
                         tags=["elementwise", "fusion", params["dtype"], "memory-bound"]
                         + (["broadcast"] if any(b != "full" for b in params["bcast"]) else []),
                         work=work(params, ct.size))  # fmt: skip

    def mutants(self, params: Params) -> list[Mutant]:
        ct = cpp.CTYPES[params["dtype"]]
        tree = params["expr"]
        swapped = expr.swap_root(tree)
        out = [
            Mutant("tail", "tail", "skips the last cols mod 32 columns",
                   {"solution.cu": _kernel(params, ct, bug="tail")}),
            Mutant("operator", "operator", f"the outermost {tree[0]} is a {swapped[0]}",
                   {"solution.cu": _kernel(params, ct, tree=swapped)}),
        ]  # fmt: skip
        if any(b != "full" for b in params["bcast"]):
            out.append(Mutant("axis", "axis", "indexes a broadcast vector along the wrong axis",
                              {"solution.cu": _kernel(params, ct, bug="axis")}))  # fmt: skip
        elif params["dtype"] != "f16":  # (half outputs tolerate about what half math loses)
            out.append(Mutant("precision", "accumulation", "evaluates in a narrower type",
                              {"solution.cu": _kernel(params, ct, bug="precision")}))  # fmt: skip
        out.append(Mutant("last-row", "boundary", "skips the last row",
                          {"solution.cu": _kernel(params, ct, bug="boundary")}))  # fmt: skip
        return out
