"""CUDA sources of the reduce-axis family: the reference (a warp per row, or 32x8 column
tiles split over the rows), the naive baseline (a thread per output) and the mutants, each
the reference with one bug."""

from __future__ import annotations

from cudaenv.families.cpp import CType
from cudaenv.families.reduce_ops import OPS

# the one-line bugs a mutant can carry (None: the reference)
TAIL, NARROW, IDENTITY0, SIGNED, LAST_INDEX, NO_SYNC = (
    "tail",
    "narrow",
    "identity0",
    "signed",
    "last-index",
    "no-sync",
)


def out_type(op_key: str, ct: CType) -> str:
    kind = OPS[op_key].kind if op_key in OPS else "value"
    return {"value": ct.acc, "extreme": ct.dev, "arg": "int"}[kind]


def _narrow(ct: CType, expr: str, bug: str | None) -> str:
    if bug != NARROW:
        return expr
    if ct.key == "f64":
        return f"(double)(float)({expr})"
    return f"__half2float(__float2half_rn({expr}))"


def acc_helpers(op: str, ct: CType, bug: str | None = None) -> str:
    """Device code of the accumulator for ``op`` ("sumsq": the norm without its root)."""
    acc, out = ct.acc, out_type(op if op != "sumsq" else "norm2", ct)
    load = ct.to_acc("x")
    if op in ("sum", "mean", "norm2", "sumsq"):
        sq = op in ("norm2", "sumsq")
        fin = {"sum": "a.v", "mean": "a.v / (ACC)len", "norm2": "sqrt(a.v)", "sumsq": "a.v"}[op]
        return f"""typedef {acc} ACC;
struct Acc {{ ACC v; }};
__device__ __forceinline__ Acc acc_init() {{ return {{(ACC)0}}; }}
__device__ __forceinline__ Acc acc_load(T x, int) {{
    ACC v = {load};
    return {{{_narrow(ct, "v * v" if sq else "v", bug)}}};
}}
__device__ __forceinline__ Acc acc_join(Acc a, Acc b) {{ return {{{_narrow(ct, "a.v + b.v", bug)}}}; }}
__device__ __forceinline__ Acc acc_shfl(Acc a, int off) {{
    return {{__shfl_down_sync(0xffffffffu, a.v, off)}};
}}
__device__ __forceinline__ {out} acc_out(Acc a, int len) {{ (void)len; return {fin}; }}
"""
    if op in ("max", "min", "absmax"):
        if bug == SIGNED:  # keeps the signed element of largest magnitude
            return f"""typedef {acc} ACC;
struct Acc {{ ACC v; }};
__device__ __forceinline__ Acc acc_init() {{ return {{(ACC)0}}; }}
__device__ __forceinline__ Acc acc_load(T x, int) {{ return {{{load}}}; }}
__device__ __forceinline__ Acc acc_join(Acc a, Acc b) {{ return fabs(b.v) > fabs(a.v) ? b : a; }}
__device__ __forceinline__ Acc acc_shfl(Acc a, int off) {{
    return {{__shfl_down_sync(0xffffffffu, a.v, off)}};
}}
__device__ __forceinline__ {out} acc_out(Acc a, int) {{ return {ct.from_acc("a.v")}; }}
"""
        init = {"max": "-INFINITY", "min": "INFINITY", "absmax": "0"}[op]
        if bug == IDENTITY0:
            init = "0"
        fn = "fmin" if op == "min" else "fmax"
        val = f"fabs({load})" if op == "absmax" else load
        return f"""typedef {acc} ACC;
struct Acc {{ ACC v; }};
__device__ __forceinline__ Acc acc_init() {{ return {{(ACC)({init})}}; }}
__device__ __forceinline__ Acc acc_load(T x, int) {{ return {{{val}}}; }}
__device__ __forceinline__ Acc acc_join(Acc a, Acc b) {{ return {{{fn}(a.v, b.v)}}; }}
__device__ __forceinline__ Acc acc_shfl(Acc a, int off) {{
    return {{__shfl_down_sync(0xffffffffu, a.v, off)}};
}}
__device__ __forceinline__ {out} acc_out(Acc a, int) {{ return {ct.from_acc("a.v")}; }}
"""
    better = ">" if op == "argmax" else "<"
    init = "-INFINITY" if op == "argmax" else "INFINITY"
    tie, start = ("b.i > a.i", "-1") if bug == LAST_INDEX else ("b.i < a.i", "0x7fffffff")
    return f"""typedef {acc} ACC;
struct Acc {{ ACC v; int i; }};  // the extreme value and its index (the first one on ties)
__device__ __forceinline__ Acc acc_init() {{ return {{(ACC)({init}), {start}}}; }}
__device__ __forceinline__ Acc acc_load(T x, int t) {{ return {{{load}, t}}; }}
__device__ __forceinline__ Acc acc_join(Acc a, Acc b) {{
    return (b.v {better} a.v || (b.v == a.v && {tie})) ? b : a;
}}
__device__ __forceinline__ Acc acc_shfl(Acc a, int off) {{
    return {{__shfl_down_sync(0xffffffffu, a.v, off), __shfl_down_sync(0xffffffffu, a.i, off)}};
}}
__device__ __forceinline__ int acc_out(Acc a, int) {{ return a.i; }}
"""


ROW_KERNEL = """
constexpr int kThreads = 256, kWarps = kThreads / 32;

// One warp per row: the lanes stride over the row, then combine with shuffles.
__global__ void __launch_bounds__(kThreads)
reduce_rows(const T* __restrict__ x, int rows, int cols, int ld, OUT* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    for (int r = blockIdx.x * kWarps + (threadIdx.x >> 5); r < rows; r += gridDim.x * kWarps) {
        const T* p = x + (size_t)r * ld;
        Acc a = acc_init();
        for (int j = lane; j < @END@; j += 32) a = acc_join(a, acc_load(p[j], j));
        for (int off = 16; off > 0; off >>= 1) a = acc_join(a, acc_shfl(a, off));
        if (lane == 0) out[r] = acc_out(a, cols);
    }
}

static void launch_rows(const T* x, int rows, int cols, int ld, OUT* out) {
    if (rows <= 0 || cols <= 0) return;
    int blocks = (rows + kWarps - 1) / kWarps;
    if (blocks > 8192) blocks = 8192;
    reduce_rows<<<blocks, kThreads>>>(x, rows, cols, ld, out);
}
"""

COL_KERNEL = """
constexpr int kTx = 32, kTy = 8;

// Blocks of 32 adjacent columns x 8 row lanes; blockIdx.y splits the rows (partials go to
// scratch and a second kernel combines them), blockIdx.z walks the batches.
__global__ void __launch_bounds__(kTx * kTy)
reduce_cols(const T* __restrict__ x, int batch, int rows, int cols, int ld, int splits,
            Acc* __restrict__ part, OUT* __restrict__ out) {
    __shared__ Acc tile[kTy][kTx + 1];
    const int c = blockIdx.x * kTx + threadIdx.x;
    for (int b = blockIdx.z; b < batch; b += gridDim.z) {
        Acc a = acc_init();
        if (c < cols) {
            const T* p = x + (size_t)b * rows * ld + c;
            for (int r = blockIdx.y * kTy + threadIdx.y; r < @END@; r += splits * kTy)
                a = acc_join(a, acc_load(p[(size_t)r * ld], r));
        }
        tile[threadIdx.y][threadIdx.x] = a;
@SYNC@        if (threadIdx.y == 0 && c < cols) {
            for (int k = 1; k < kTy; ++k) a = acc_join(a, tile[k][threadIdx.x]);
            const size_t o = (size_t)b * cols + c;
            if (splits == 1) out[o] = acc_out(a, rows);
            else part[(size_t)blockIdx.y * batch * cols + o] = a;
        }
        __syncthreads();  // the tile is reused by the next batch
    }
}

__global__ void finish_cols(const Acc* __restrict__ part, int splits, size_t n_out, int rows,
                            OUT* __restrict__ out) {
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < n_out;
         o += (size_t)gridDim.x * blockDim.x) {
        Acc a = part[o];
        for (int s = 1; s < splits; ++s) a = acc_join(a, part[(size_t)s * n_out + o]);
        out[o] = acc_out(a, rows);
    }
}

// Scratch for the row splits' partials, allocated once and grown when needed.
static Acc* scratch(size_t n) {
    static Acc* buf = nullptr;
    static size_t cap = 0;
    if (n > cap) {
        if (buf) cudaFree(buf);
        cudaMalloc((void**)&buf, n * sizeof(Acc));
        cap = n;
    }
    return buf;
}

static void launch_cols(const T* x, int batch, int rows, int cols, int ld, OUT* out) {
    if (batch <= 0 || rows <= 0 || cols <= 0) return;
    const int tiles = (cols + kTx - 1) / kTx, zs = batch < 65535 ? batch : 65535;
    // enough blocks to fill the GPU, each walking at least 32 rows
    long long want = (2048 + (long long)tiles * zs - 1) / ((long long)tiles * zs);
    long long most = (rows + 4 * kTy - 1) / (4 * kTy);
    int splits = (int)(want < most ? want : most);
    if (splits > 64) splits = 64;
    if (splits < 1) splits = 1;
    const size_t n_out = (size_t)batch * cols;
    Acc* part = splits > 1 ? scratch((size_t)splits * n_out) : nullptr;
    reduce_cols<<<dim3(tiles, splits, zs), dim3(kTx, kTy)>>>(x, batch, rows, cols, ld, splits,
                                                             part, out);
    if (splits > 1) {
        size_t blocks = (n_out + 255) / 256;
        finish_cols<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256>>>(part, splits, n_out,
                                                                        rows, out);
    }
}
"""


def signature(params: dict, ct: CType) -> str:
    axis, op = params["axis"], params["op"]
    out = out_type(op, ct)
    name = f"{axis}_{op}"
    if axis == "mid":
        return f"void {name}(const {ct.dev}* x, int batch, int rows, int cols, {out}* out)"
    ld = ", int ld" if params["pitched"] else ""
    return f"void {name}(const {ct.dev}* x, int rows, int cols{ld}, {out}* out)"


def _entry(params: dict, ct: CType) -> str:
    axis, ld = params["axis"], ("ld" if params["pitched"] else "cols")
    call = {
        "row": f"launch_rows(x, rows, cols, {ld}, out);",
        "col": f"launch_cols(x, 1, rows, cols, {ld}, out);",
        "mid": "launch_cols(x, batch, rows, cols, cols, out);",
    }[axis]
    return f"{signature(params, ct)} {{\n    {call}\n}}\n"


def includes(params: dict, ct: CType, bug: str | None) -> str:
    half = ct.key == "f16" or (bug == NARROW and ct.key == "f32")
    inc = "#include <cmath>\n#include <cuda_runtime.h>\n" + (
        "#include <cuda_fp16.h>\n" if half else ""
    )
    return inc + f'#include "{params["axis"]}_{params["op"]}.h"\n'


def reference(params: dict, ct: CType, *, op: str | None = None, bug: str | None = None) -> str:
    """solution.cu: the reference, or (``op``/``bug`` given) one of its mutants."""
    op = op or params["op"]
    kernel = ROW_KERNEL if params["axis"] == "row" else COL_KERNEL
    end = "cols" if params["axis"] == "row" else "rows"
    if bug == TAIL:
        end = "(cols & ~31)" if params["axis"] == "row" else "(rows & ~(kTy - 1))"
    sync = "" if bug == NO_SYNC else "        __syncthreads();\n"
    kernel = kernel.replace("@END@", end).replace("@SYNC@", sync)
    note = f"// {params['axis']}-wise {params['op']} of {ct.dev} values."
    return (
        includes(params, ct, bug)
        + f"\n{note}\ntypedef {ct.dev} T;\ntypedef {out_type(params['op'], ct)} OUT;\n"
        + acc_helpers(op, ct, bug)
        + kernel
        + "\n"
        + _entry(params, ct)
    )


def _at(axis: str) -> str:
    return {
        "row": "(size_t)o * ld + t",
        "col": "(size_t)t * ld + o",
        "mid": "((size_t)(o / cols) * rows + t) * cols + (o % cols)",
    }[axis]


def baseline(params: dict, ct: CType) -> str:
    """solution.cu of the naive baseline: one thread per output, a serial loop (sums in double)."""
    axis, op = params["axis"], OPS[params["op"]]
    if op.kind == "value":
        term = "v * v" if op.key == "norm2" else "v"
        fin = {"sum": "s", "mean": "s / len", "norm2": "sqrt(s)"}[op.key]
        body = f"""double s = 0.0;
    for (int t = 0; t < len; ++t) {{
        const double v = (double)elem(x, o, t, rows, cols, ld);
        s += {term};
    }}
    out[o] = (OUT)({fin});"""
    else:
        get = (
            "fabs(elem(x, o, {t}, rows, cols, ld))"
            if op.key == "absmax"
            else "elem(x, o, {t}, rows, cols, ld)"
        )
        cmp = "<" if op.key in ("min", "argmin") else ">"
        res = "best" if op.kind == "arg" else ct.from_acc("m")
        body = f"""ACC m = {get.format(t="0")};
    int best = 0;
    for (int t = 1; t < len; ++t) {{
        const ACC v = {get.format(t="t")};
        if (v {cmp} m) {{ m = v; best = t; }}
    }}
    (void)best;
    out[o] = {res};"""
    n_out, length = {
        "row": ("(long long)rows", "cols"),
        "col": ("(long long)cols", "rows"),
        "mid": ("(long long)batch * cols", "rows"),
    }[axis]
    ld = "ld" if params["pitched"] else "cols"
    return (
        includes(params, ct, None)
        + f"""
// Naive baseline: one thread per output walks the reduced axis serially.
typedef {ct.dev} T;
typedef {ct.acc} ACC;
typedef {out_type(params["op"], ct)} OUT;

__device__ __forceinline__ ACC elem(const T* x, long long o, int t, int rows, int cols, int ld) {{
    (void)rows; (void)cols; (void)ld;
    return {ct.to_acc("x[" + _at(axis) + "]")};
}}

__global__ void naive(const T* x, long long n_out, int len, int rows, int cols, int ld, OUT* out) {{
    const long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (o >= n_out) return;
    {body}
}}

{signature(params, ct)} {{
    const long long n_out = {n_out};
    const int len = {length};
    if (n_out <= 0 || len <= 0) return;
    naive<<<(unsigned)((n_out + 127) / 128), 128>>>(x, n_out, len, rows, cols, {ld}, out);
}}
"""
    )
