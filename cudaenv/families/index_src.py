"""CUDA sources of the indexing family (gather rows, scatter-add rows, histogram): the
references, the naive baselines and the mutants' bugs."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Params


def hist_type(p: Params) -> str:
    return "float" if p["weighted"] else "int"


def fn(p: Params) -> str:
    if p["op"] == "gather":
        return f"gather_rows_d{p['width']}"
    if p["op"] == "scatter_add":
        return f"scatter_add_d{p['width']}" + ("_weighted" if p["weighted"] else "")
    return f"histogram_b{p['width']}" + ("_weighted" if p["weighted"] else "") + f"_{p['policy']}"


def signature(p: Params, ct: cpp.CType) -> str:
    t = ct.dev
    if p["op"] == "gather":
        return f"void {fn(p)}(const {t}* table, const int* idx, {t}* out, int n, int rows)"
    if p["op"] == "scatter_add":
        w = f"const {t}* w, " if p["weighted"] else ""
        return f"void {fn(p)}(const {t}* x, const int* idx, {w}{t}* out, int n, int rows)"
    w = "const float* w, " if p["weighted"] else ""
    return f"void {fn(p)}(const float* x, {w}{hist_type(p)}* hist, int n)"


def _head(p: Params, ct: cpp.CType) -> str:
    half = "#include <cuda_fp16.h>\n" if ct.key == "f16" else ""
    return f'#include <cmath>\n#include <cuda_runtime.h>\n{half}#include "{fn(p)}.h"\n\ntypedef {ct.dev} T;\n'


def _bin(p: Params, bug: str | None) -> str:
    """Device lines setting ``b`` for ``v`` (``continue`` when it is dropped)."""
    q = "floorf(v * 4.0f + 0.5f)" if bug == "operator" else "floorf(v * 4.0f)"
    policy = p["policy"] if bug != "boundary" else ("clamp" if p["policy"] == "drop" else "drop")
    keep = (f"if (b < 0) b = 0;\n            if (b >= {p['width']}) b = {p['width'] - 1};"
            if policy == "clamp" else f"if (b < 0 || b >= {p['width']}) continue;")  # fmt: skip
    return f"int b = (int){q};\n            {keep}"


def reference(p: Params, ct: cpp.CType, bug: str | None = None) -> str:
    d, op = p["width"], p["op"]
    n_end = "(n & ~31)" if bug == "tail" else "n"
    if op == "gather":
        src = "(size_t)(i % rows)" if bug == "operator" else "(size_t)idx[i]"
        j_end = f"{d - 1}" if bug == "boundary" else f"{d}"
        return (
            _head(p, ct)
            + f"""constexpr int D = {d};

// One thread per output element (rows copied with coalesced loads and stores).
__global__ void __launch_bounds__(256) gather_kernel(const T* __restrict__ table, const int* __restrict__ idx, T* __restrict__ out, int n, int rows) {{
    const size_t total = (size_t){n_end} * D;
    for (size_t e = blockIdx.x * (size_t)256 + threadIdx.x; e < total; e += (size_t)gridDim.x * 256) {{
        const size_t i = e / D, j = e % D;
        (void)rows;
        if (j < {j_end}) out[e] = table[{src} * D + j];
    }}
}}

{signature(p, ct)} {{
    if (n <= 0) return;
    const size_t total = (size_t)n * D;
    const size_t blocks = (total + 255) / 256;
    gather_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256>>>(table, idx, out, n, rows);
}}
"""
        )
    if op == "scatter_add":
        val = "w[i] * x[e]" if p["weighted"] and bug != "no-weights" else "x[e]"
        skip0 = "if (k == 0) continue;\n        " if bug == "boundary" else ""
        store = {"operator": "out[k * D + j] = v;", "no-sync": "out[k * D + j] += v;"}.get(
            bug or "", "atomicAdd(&out[k * D + j], v);"
        )
        wp = "const T* __restrict__ w, " if p["weighted"] else ""
        wa = "w, " if p["weighted"] else ""
        return (
            _head(p, ct)
            + f"""constexpr int D = {d};

// One thread per input element; atomics resolve the rows several inputs go to.
__global__ void __launch_bounds__(256) scatter_kernel(const T* __restrict__ x, const int* __restrict__ idx, {wp}T* __restrict__ out, int n) {{
    const size_t total = (size_t){n_end} * D;
    for (size_t e = blockIdx.x * (size_t)256 + threadIdx.x; e < total; e += (size_t)gridDim.x * 256) {{
        const size_t i = e / D, j = e % D;
        const size_t k = (size_t)idx[i];
        {skip0}const T v = {val};
        {store}
    }}
}}

{signature(p, ct)} {{
    (void)rows;
    if (n <= 0) return;
    const size_t blocks = ((size_t)n * D + 255) / 256;
    scatter_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256>>>(x, idx, {wa}out, n);
}}
"""
        )
    h = hist_type(p)
    inc = "w[i]" if p["weighted"] else "1"
    sync1 = "" if bug == "no-sync" else "    __syncthreads();\n"
    wp = "const float* __restrict__ w, " if p["weighted"] else ""
    wa = "w, " if p["weighted"] else ""
    return (
        _head(p, ct)
        + f"""constexpr int B = {p["width"]};
typedef {h} H;

// A private histogram per block in shared memory, flushed with one atomic per bin.
__global__ void __launch_bounds__(256) hist_kernel(const float* __restrict__ x, {wp}H* __restrict__ hist, int n) {{
    __shared__ H s[B];
    for (int k = threadIdx.x; k < B; k += 256) s[k] = 0;
{sync1}    for (int i = blockIdx.x * 256 + threadIdx.x; i < {n_end}; i += gridDim.x * 256) {{
        const float v = x[i];
        {_bin(p, bug)}
        atomicAdd(&s[b], (H){inc});
    }}
    __syncthreads();
    for (int k = threadIdx.x; k < B; k += 256)
        if (s[k] != 0) atomicAdd(&hist[k], s[k]);
}}

{signature(p, ct)} {{
    cudaMemsetAsync(hist, 0, B * sizeof(H));
    if (n <= 0) return;
    int blocks = (n + 255) / 256;
    if (blocks > 1024) blocks = 1024;
    hist_kernel<<<blocks, 256>>>(x, {wa}hist, n);
}}
"""
    )


def baseline(p: Params, ct: cpp.CType) -> str:
    d, op = p["width"], p["op"]
    if op == "gather":
        body = f"for (int j = 0; j < {d}; ++j) out[(size_t)i * {d} + j] = table[(size_t)idx[i] * {d} + j];"
        params, args = "const T* table, const int* idx, T* out, int n", "table, idx, out, n"
        note = "one thread per output row copies it serially (rows a width apart per thread)"
    elif op == "scatter_add":
        v = "w[i] * x[(size_t)i * D + j]" if p["weighted"] else "x[(size_t)i * D + j]"
        body = f"const int D = {d};\n    for (int j = 0; j < D; ++j) atomicAdd(&out[(size_t)idx[i] * D + j], {v});"
        wp, wa = ("const T* w, ", "w, ") if p["weighted"] else ("", "")
        params, args = f"const T* x, const int* idx, {wp}T* out, int n", f"x, idx, {wa}out, n"
        note = "one thread per input row adds it element by element"
    else:
        h = hist_type(p)
        keep = (f"if (b < 0) b = 0; if (b >= {d}) b = {d - 1};" if p["policy"] == "clamp"
                else f"if (b < 0 || b >= {d}) return;")  # fmt: skip
        inc = "w[i]" if p["weighted"] else "1"
        body = (
            f"int b = (int)floorf(x[i] * 4.0f);\n    {keep}\n    atomicAdd(&hist[b], ({h}){inc});"
        )
        wp, wa = ("const float* w, ", "w, ") if p["weighted"] else ("", "")
        params, args = f"const float* x, {wp}{h}* hist, int n", f"x, {wa}hist, n"
        note = "one global atomic per input element"
    pre = (
        f"    cudaMemsetAsync(hist, 0, {d} * sizeof({hist_type(p)}));\n"
        if op == "histogram"
        else ""
    )
    return (
        _head(p, ct)
        + f"""
// Naive baseline: {note}.
__global__ void naive({params}) {{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    {body}
}}

{signature(p, ct)} {{
{pre}    {"(void)rows;" if op != "histogram" else ""}
    if (n <= 0) return;
    naive<<<(n + 127) / 128, 128>>>({args});
}}
"""
    )
