"""CUDA sources of the scan family: the reference (tiles of 1024 elements, 4 per thread, scanned
with warp shuffles; every row by one block with a carry, or one long array by
reduce-then-scan over tile sums), the naive baseline and the mutants' bugs."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Params
from cudaenv.families.scan_ops import fn


def signature(p: Params, ct: cpp.CType) -> str:
    flags = "const int* flags, " if p["segmented"] else ""
    dims = "int rows, int cols" if p["layout"] == "rows" else "int n"
    return f"void {fn(p)}(const {ct.dev}* x, {flags}{ct.dev}* out, {dims})"


def _ops(p: Params, ct: cpp.CType, acc: str) -> str:
    integer = ct.key == "i32"
    ident = {
        "add": "0",
        "max": "INT_MIN" if integer else "-INFINITY",
        "min": "INT_MAX" if integer else "INFINITY",
    }[p["op"]]
    fnc = {"add": "a + b", "max": ("a > b ? a : b") if integer else "fmax(a, b)",
           "min": ("a < b ? a : b") if integer else "fmin(a, b)"}[p["op"]]  # fmt: skip
    return f"""typedef {acc} A;
#define ID ((A)({ident}))
__device__ __forceinline__ A op(A a, A b) {{ return {fnc}; }}
struct P {{ int f; A v; }};  // f: a segment head is inside; v: the running value
__device__ __forceinline__ P join(P a, P b) {{ return {{a.f | b.f, b.f ? b.v : op(a.v, b.v)}}; }}
"""


BLOCK_SCAN = """
constexpr int kThreads = 256, kItems = 4, kTile = kThreads * kItems, kWarps = kThreads / 32;

// The exclusive prefix of this thread's pair within the block; *total: the block's total.
__device__ P block_exclusive(P mine, P* total) {
    __shared__ P warp_total[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    P incl = mine;
    for (int off = 1; off < 32; off <<= 1) {
        P o;
        o.f = __shfl_up_sync(0xffffffffu, incl.f, off);
        o.v = __shfl_up_sync(0xffffffffu, incl.v, off);
        if (lane >= off) incl = join(o, incl);
    }
    if (lane == 31) warp_total[warp] = incl;
@SYNC@    P before = {0, ID}, all = {0, ID};
    for (int w = 0; w < kWarps; ++w) {
        if (w < warp) before = join(before, warp_total[w]);
        all = join(all, warp_total[w]);
    }
    P prev;
    prev.f = __shfl_up_sync(0xffffffffu, incl.f, 1);
    prev.v = __shfl_up_sync(0xffffffffu, incl.v, 1);
    *total = all;
    __syncthreads();  // warp_total is reused by the next call
    return lane == 0 ? before : join(before, prev);
}

// Scans elements [t0, t0 + kTile) of a sequence of length len after the prefix `carry`
// (writing them if out != nullptr); returns the prefix after the tile.
__device__ P scan_tile(const T* x, const int* flags, T* out, long long t0, long long len, P carry) {
    A v[kItems];
    int h[kItems];
    P local = {0, ID};
    for (int k = 0; k < kItems; ++k) {
        const long long i = t0 + threadIdx.x * kItems + k;
        const bool in = i < @END@;
        v[k] = in ? (A)LD(x[i]) : ID;
        h[k] = in && @HEAD@;
        local = join(local, P{h[k], v[k]});
    }
    P total;
    P run = join(carry, block_exclusive(local, &total));
    if (out) {
        for (int k = 0; k < kItems; ++k) {
            const long long i = t0 + threadIdx.x * kItems + k;
            if (i < @END@) {
                const A before = h[k] ? ID : run.v;
                run = join(run, P{h[k], v[k]});
                out[i] = ST(@RESULT@);
            }
        }
    }
    return join(carry, total);
}
"""

ROWS = """
// One block per row, its tiles in order, the prefix carried from tile to tile.
__global__ void __launch_bounds__(kThreads) scan_rows(const T* __restrict__ x, const int* __restrict__ flags, T* __restrict__ out, int rows, int cols) {
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t base = (size_t)r * cols;
        P carry = {0, ID};
        for (long long t0 = 0; t0 < cols; t0 += kTile)
            carry = scan_tile(x + base, flags ? flags + base : nullptr, out + base, t0, cols, @CARRY@);
    }
}
"""

ONE_D = """
// Reduce-then-scan: tile sums, their exclusive prefix (one block), then every tile again.
__global__ void __launch_bounds__(kThreads) tile_sums(const T* __restrict__ x, const int* __restrict__ flags, long long n, P* __restrict__ sums) {
    const long long tiles = (n + kTile - 1) / kTile;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const P s = scan_tile(x, flags, nullptr, t * kTile, n, P{0, ID});
        if (threadIdx.x == 0) sums[t] = s;
    }
}

__global__ void __launch_bounds__(kThreads) prefix_sums(P* sums, long long tiles) {
    P carry = {0, ID};
    for (long long t0 = 0; t0 < tiles; t0 += kThreads) {
        const long long t = t0 + threadIdx.x;
        const P mine = t < tiles ? sums[t] : P{0, ID};
        P total;
        const P excl = join(carry, block_exclusive(mine, &total));
        if (t < tiles) sums[t] = excl;
        carry = join(carry, total);
    }
}

__global__ void __launch_bounds__(kThreads) scan_tiles(const T* __restrict__ x, const int* __restrict__ flags, T* __restrict__ out, long long n, const P* __restrict__ pre) {
    const long long tiles = (n + kTile - 1) / kTile;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) scan_tile(x, flags, out, t * kTile, n, @PRE@);
}

static P* scratch(size_t count) {
    static P* buf = nullptr;
    static size_t cap = 0;
    if (count > cap) {
        if (buf) cudaFree(buf);
        cudaMalloc((void**)&buf, count * sizeof(P));
        cap = count;
    }
    return buf;
}
"""


def reference(p: Params, ct: cpp.CType, bug: str | None = None) -> str:
    acc = {"f32": "float", "f64": "double", "i32": "int"}[ct.key]
    if bug == "narrow":
        acc = {"f32": "int", "f64": "float", "i32": "short"}[ct.key]
    kind = (
        p["kind"]
        if bug != "operator"
        else ("exclusive" if p["kind"] == "inclusive" else "inclusive")
    )
    head = "(i == 0 || flags[i] != 0)" if p["segmented"] and bug != "boundary" else "(i == 0)"
    flags = "flags" if p["segmented"] else "nullptr"
    src = (
        BLOCK_SCAN.replace("@END@", "(len & ~31LL)" if bug == "tail" else "len")
        .replace("@HEAD@", head)
        .replace("@RESULT@", "run.v" if kind == "inclusive" else "before")
        .replace("@SYNC@", "" if bug == "no-sync" else "    __syncthreads();\n")
    )
    restart = bug == "tile-restart"
    if p["layout"] == "rows":
        body = ROWS.replace("@CARRY@", "P{0, ID}" if restart else "carry")
        entry = f"""    if (rows <= 0 || cols <= 0) return;
    const int blocks = rows < 65535 ? rows : 65535;
    scan_rows<<<blocks, kThreads>>>(x, {flags}, out, rows, cols);"""
    else:
        body = ONE_D.replace("@PRE@", "P{0, ID}" if restart else "pre[t]")
        entry = f"""    if (n <= 0) return;
    const long long tiles = ((long long)n + kTile - 1) / kTile;
    P* sums = scratch((size_t)tiles);
    const int blocks = tiles < 4096 ? (int)tiles : 4096;
    tile_sums<<<blocks, kThreads>>>(x, {flags}, n, sums);
    prefix_sums<<<1, kThreads>>>(sums, tiles);
    scan_tiles<<<blocks, kThreads>>>(x, {flags}, out, n, sums);"""
    return f"""#include <climits>
#include <cmath>
#include <cuda_runtime.h>
#include "{fn(p)}.h"

typedef {ct.dev} T;
#define LD(v) (v)
#define ST(v) ((T)(v))
{_ops(p, ct, acc)}{src}{body}
{signature(p, ct)} {{
{entry}
}}
"""


def baseline(p: Params, ct: cpp.CType) -> str:
    integer = ct.key == "i32"
    acc = "long long" if integer else "double"
    ident = {"add": "0", "max": "(long long)INT_MIN" if integer else "-INFINITY",
             "min": "(long long)INT_MAX" if integer else "INFINITY"}[p["op"]]  # fmt: skip
    step = {"add": "run + v", "max": "(v > run ? v : run)", "min": "(v < run ? v : run)"}[p["op"]]
    head = "(i == 0 || flags[base + i] != 0)" if p["segmented"] else "(i == 0)"
    res = "run" if p["kind"] == "inclusive" else "before"
    flags = "const int* flags, " if p["segmented"] else ""
    fargs = "flags, " if p["segmented"] else ""
    rows, cols = ("rows", "cols") if p["layout"] == "rows" else ("1", "n")
    return f"""#include <climits>
#include <cmath>
#include <cuda_runtime.h>
#include "{fn(p)}.h"

// Naive baseline: one thread scans a whole row (or the whole array) serially, in {acc}.
typedef {ct.dev} T;

__global__ void naive(const T* x, {flags}T* out, int rows, int cols) {{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const size_t base = (size_t)r * cols;
    {acc} run = {ident};
    for (int i = 0; i < cols; ++i) {{
        const {acc} v = ({acc})x[base + i];
        const bool head = {head};
        const {acc} before = head ? ({acc})({ident}) : run;
        run = head ? v : {step};
        out[base + i] = (T)({res});
    }}
}}

{signature(p, ct)} {{
    const int rows_ = {rows}, cols_ = {cols};
    if (rows_ <= 0 || cols_ <= 0) return;
    naive<<<(rows_ + 127) / 128, 128>>>(x, {fargs}out, rows_, cols_);
}}
"""
