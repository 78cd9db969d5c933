"""reduce-axis (cuda_cpp): sum, mean, norm, max, min, |max|, arg-max and arg-min of a matrix
along its rows, its columns, or the middle axis of a 3-D array; float, double, or half with
float accumulation; optionally a row pitch whose padding must not be read."""

from __future__ import annotations

import random

from cudaenv.errors import SpecError
from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.reduce_axis_src import (
    IDENTITY0,
    LAST_INDEX,
    NARROW,
    NO_SYNC,
    SIGNED,
    TAIL,
    baseline,
    out_type,
    reference,
    signature,
)
from cudaenv.families.reduce_ops import (
    ATOL,
    KIND_CODE,
    KIND_RANGE,
    KIND_TEXT,
    OPS,
    RTOL,
    difficulty,
    num,
    tolerance_text,
    work,
)

AXES = ("row", "col", "mid")
DTYPES = ("f32", "f64", "f16")

# test shapes (batch, rows, cols): sizes not multiples of 32 or of a block, single elements,
# very tall and very wide, and a few with about a million elements
SHAPES = {
    "row": [(1, 0, 5), (1, 1, 1), (1, 1, 33), (1, 3, 5), (1, 7, 32), (1, 5, 1000), (1, 64, 257),
            (1, 1000, 1), (1, 20000, 7), (1, 3, 100003), (1, 300, 4099), (1, 2, 1 << 20)],
    "col": [(1, 5, 0), (1, 1, 1), (1, 33, 1), (1, 5, 3), (1, 32, 7), (1, 1000, 5), (1, 257, 64),
            (1, 1, 1000), (1, 7, 20000), (1, 100003, 3), (1, 4099, 300), (1, 1 << 20, 2)],
    "mid": [(0, 3, 4), (1, 1, 1), (2, 33, 5), (3, 7, 129), (64, 100, 3), (5, 1000, 65),
            (1, 9, 1), (17, 257, 257), (4, 65536, 3)],
}  # fmt: skip
PERF = {"row": (1, 8192, 2048), "col": (1, 2048, 8192), "mid": (64, 256, 1024)}
CALLS = 5
_PAD = {"f32": ("1e30f", "-1e30f"), "f64": ("1e300", "-1e300"), "f16": ("0x7A98", "0xFA98")}


def _space() -> list[Params]:
    out = []
    for axis in AXES:
        for op in OPS:
            for dtype in DTYPES:
                for pitched in (False, True) if axis != "mid" else (False,):
                    out.append({"axis": axis, "op": op, "dtype": dtype, "pitched": pitched})
    return out


def _host_ref(params: Params, ct: cpp.CType) -> str:
    op, axis = OPS[params["op"]], params["axis"]
    at = {"row": "(size_t)o * ld + t", "col": "(size_t)t * ld + o",
          "mid": "((size_t)(o / cols) * rows + t) * cols + (o % cols)"}[axis]  # fmt: skip
    n_out, length = {"row": ("rows", "cols"), "col": ("cols", "rows"),
                     "mid": ("(long long)batch * cols", "rows")}[axis]  # fmt: skip
    if op.kind == "value":
        step = "s += v * v;" if op.key == "norm2" else "s += v; a += fabs(v);"
        fin = {"sum": "val[o] = s; mag[o] = a;", "mean": "val[o] = s / len; mag[o] = a / len;",
               "norm2": "val[o] = sqrt(s); mag[o] = val[o];"}[op.key]  # fmt: skip
    else:
        cmp = "<" if op.key in ("min", "argmin") else ">"
        absv = "v = fabs(v);" if op.key == "absmax" else ""
        step = f"{absv} if (t == 0 || v {cmp} best) {{ best = v; bi = t; }}"
        fin = "val[o] = best; mag[o] = 0.0;" + (" idx[o] = bi;" if op.kind == "arg" else "")
    body = f"""
// Result o reduces len elements, element t of it at x[{at}]. val: the exact result
// (sums in double), mag: the scale of its tolerance, idx: the arg result (first on ties).
static void host_reduce(const {ct.host}* x, int batch, int rows, int cols, int ld,
                        double* val, double* mag, int* idx) {{
    (void)batch;
    const long long n_out = {n_out};
    const int len = {length};
    for (long long o = 0; o < n_out; ++o) {{
        double s = 0.0, a = 0.0, best = 0.0;
        int bi = -1;
        for (int t = 0; t < len; ++t) {{
            double v = {ct.host_value(f"x[{at}]")};
            {step}
        }}
        (void)s; (void)a; (void)best; (void)bi;
        idx[o] = -1;
        {fin}
    }}
}}
"""
    return cpp.host_ref_header(f"{params['axis']}-wise {op.key}", body, half=ct.key == "f16")


def _call(params: Params, var: str = "dx") -> str:
    name = f"{params['axis']}_{params['op']}"
    if params["axis"] == "mid":
        return f"{name}((const T*){var}, c.batch, c.rows, c.cols, (OUTD*)dout)"
    ld = ", ld" if params["pitched"] else ""
    return f"{name}((const T*){var}, c.rows, c.cols{ld}, (OUTD*)dout)"


def _cases(params: Params) -> str:
    kinds = OPS[params["op"]].kinds
    rows = []
    for i, (b, r, c) in enumerate(SHAPES[params["axis"]]):
        pad = (i * 7) % 37 + 1 if params["pitched"] else 0
        rows.append(f'    {{"case{i}", {b}, {r}, {c}, {pad}, {KIND_CODE[kinds[i % len(kinds)]]}}},')
    for k in kinds[1:]:  # each special kind once more on a mid-size shape
        b, r, c = (3, 129, 70) if params["axis"] == "mid" else (1, 129, 70)
        rows.append(
            f'    {{"{k}", {b}, {r}, {c}, {5 if params["pitched"] else 0}, {KIND_CODE[k]}}},'
        )
    return "\n".join(rows)


def _harness(params: Params, ct: cpp.CType, tid: str) -> str:
    op = OPS[params["op"]]
    out_dev = out_type(params["op"], ct)
    out_host = {"value": ct.acc, "extreme": ct.host, "arg": "int"}[op.kind]
    check = {
        "value": f"fabs((double)got[o] - val[o]) <= {num(RTOL[ct.acc])} * mag[o] + {ATOL:g}",
        "extreme": f"{ct.host_value('got[o]')} == val[o]",
        "arg": "got[o] == idx[o]",
    }[op.kind]
    n_out = {"row": "(size_t)c.rows", "col": "(size_t)c.cols", "mid": "(size_t)c.batch * c.cols"}
    got = ct.host_value("got[o]") if op.kind == "extreme" else "got[o]"
    want = "(double)idx[o]" if op.kind == "arg" else "val[o]"
    lo, hi = zip(*KIND_RANGE.values(), strict=True)
    pad_hi, pad_lo = _PAD[ct.key]
    pb, pr, pc = PERF[params["axis"]]
    perf_pad = 64 if params["pitched"] else 0
    shift = "(size_t)r * c.cols" if params["axis"] == "mid" else "(size_t)r * (c.cols + c.pad)"
    body = f"""
typedef {ct.host} HOST;
typedef {ct.dev} T;
typedef {out_dev} OUTD;
typedef {out_host} OUTH;
enum Kind {{ {", ".join(k.upper() for k in KIND_RANGE)} }};
static const double kLo[] = {{{", ".join(f"{v:g}" for v in lo)}}};
static const double kHi[] = {{{", ".join(f"{v:g}" for v in hi)}}};
struct Case {{ const char* tag; int batch, rows, cols, pad, kind; }};
static const Case kCases[] = {{
{_cases(params)}
}};

// The matrix (or batch of matrices) with row pitch cols + pad; the padding holds huge values
// of both signs, which no correct solution reads.
static std::vector<HOST> make_input(const Case& c, size_t extra_rows, uint64_t seed) {{
    const size_t ld = (size_t)c.cols + c.pad;
    std::vector<HOST> h(((size_t)c.batch * c.rows + extra_rows) * ld);
    Rng rng(seed);
    for (size_t i = 0; i < h.size(); ++i) {{
        const size_t col = i % ld;
        double v = c.kind == TIES ? (double)(rng.below(7) - 3) : rng.uni(kLo[c.kind], kHi[c.kind]);
        h[i] = col < (size_t)c.cols ? {ct.host_store("v")} : (HOST)((col & 1) ? {pad_lo} : {pad_hi});
    }}
    return h;
}}

// Tolerance ({"exact" if op.kind != "value" else f"|got - exact| <= {num(RTOL[ct.acc])} * S"}): {tolerance_text(ct.acc, op)}
static bool check(const char* name, const Case& c, const HOST* x, const OUTH* got) {{
    const size_t n_out = {n_out[params["axis"]]};
    std::vector<double> val(n_out + 1), mag(n_out + 1);
    std::vector<int> idx(n_out + 1);
    host_reduce(x, c.batch, c.rows, c.cols, c.cols + c.pad, val.data(), mag.data(), idx.data());
    for (size_t o = 0; o < n_out; ++o) {{
        if (!({check})) {{
            fprintf(stderr, "FAIL %s: out[%zu] = %.9g, expected %.9g (%dx%dx%d)\\n", name, o,
                    (double){got}, {want}, c.batch, c.rows, c.cols);
            return false;
        }}
    }}
    return true;
}}

static bool run_case(const Case& c, uint64_t seed) {{
    char name[96];
    snprintf(name, sizeof name, "%s-%dx%dx%d", c.tag, c.batch, c.rows, c.cols);
    const int ld = c.cols + c.pad;
    (void)ld;
    std::vector<HOST> h = make_input(c, 0, seed);
    const size_t n_out = {n_out[params["axis"]]};
    HOST* dx = dev_alloc<HOST>(h.size());
    OUTH* dout = dev_alloc<OUTH>(n_out);
    to_dev(dx, h);
    {_call(params)};
    sync_check(name);
    std::vector<OUTH> got = from_dev(dout, n_out);
    bool ok = check(name, c, h.data(), got.data()) && guard_ok(name, dout, n_out) && same(name, dx, h);
    CK(cudaFree(dx));
    CK(cudaFree(dout));
    if (ok) printf("ok   %s\\n", name);
    return ok;
}}

static int run_tests() {{
    int i = 0;
    for (const Case& c : kCases)
        if (!run_case(c, 1000 + 17 * i++)) return 1;
    return 0;
}}

static int run_perf() {{
    const Case c = {{"perf", {pb}, {pr}, {pc}, {perf_pad}, {KIND_CODE[op.kinds[0]]}}};
    const int ld = c.cols + c.pad;
    (void)ld;
    const int R = {CALLS};  // timed calls, each on a shifted input and its own output
    std::vector<HOST> h = make_input(c, R, bench_seed());
    const size_t n_out = {n_out[params["axis"]]}, stride = n_out + kGuard;
    HOST* hx = dev_alloc<HOST>(h.size());
    OUTH* all = dev_alloc<OUTH>(stride * R);
    to_dev(hx, h);
    for (int w = 0; w < 3; ++w) {{
        OUTH* dout = all;
        const HOST* dx = hx;
        {_call(params)};
    }}
    sync_check("warm-up");
    CK(cudaMemset(all, 0xFF, stride * R * sizeof(OUTH)));
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) {{
        OUTH* dout = all + stride * r;
        const HOST* dx = hx + {shift};
        {_call(params)};
    }}
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    bool ok = true;
    for (int r = 0; r < R && ok; ++r) {{
        std::vector<OUTH> got = from_dev(all + stride * r, n_out);
        ok = check("perf", c, h.data() + {shift}, got.data());
    }}
    CK(cudaFree(hx));
    CK(cudaFree(all));
    if (ok) printf("ok   perf (%d timed calls, %dx%dx%d)\\n", R, c.batch, c.rows, c.cols);
    return ok ? 0 : 1;
}}
"""
    return cpp.harness(
        task_id=tid,
        family=ReduceAxis.name,
        summary=f"{params['axis']}-wise {op.key} ({ct.key})",
        header=f"{params['axis']}_{params['op']}.h",
        includes=[],
        body=body,
    )


def _layout(params: Params, ct: cpp.CType) -> str:
    if params["axis"] == "mid":
        return (
            f"`x` is a `batch x rows x cols` array of {ct.label} values in device memory, "
            "contiguous and row-major: element `(b, r, c)` is `x[(b * rows + r) * cols + c]`."
        )
    pitch = (
        "with a row pitch of `ld` elements (`ld >= cols`): element `(r, c)` is "
        "`x[r * ld + c]`; the `ld - cols` padding elements at the end of each row hold "
        "garbage and must not be read (the tests fill them with huge values)"
        if params["pitched"]
        else "contiguous and row-major: element `(r, c)` is `x[r * cols + c]`"
    )
    return f"`x` is a `rows x cols` matrix of {ct.label} values in device memory, {pitch}."


def _prompt(params: Params, ct: cpp.CType) -> str:
    op, axis = OPS[params["op"]], params["axis"]
    header = f"include/{axis}_{op.key}.h"
    where = {
        "row": ("every row `r`", "`out[r]`", "the `cols` elements of the row", "rows",
                "`rows >= 0` (for `rows == 0` do nothing), `cols >= 1`"),
        "col": ("every column `c`", "`out[c]`", "the `rows` elements of the column", "cols",
                "`rows >= 1`, `cols >= 0` (for `cols == 0` do nothing)"),
        "mid": ("every `(b, c)`", "`out[b * cols + c]`", "the `rows` elements `x[b][0..rows-1][c]`",
                "batch * cols", "`batch >= 0`, `rows >= 1`, `cols >= 0` (nothing to do when "
                "`batch * cols == 0`)"),
    }[axis]  # fmt: skip
    target, slot, over, n_out, sizes = where
    index = " The index counts along the reduced axis, from 0." if op.kind == "arg" else ""
    accum = (
        " Accumulate in float: the inputs are halves, the result is a float."
        if ct.key == "f16" and op.kind == "value"
        else ""
    )
    pb, pr, pc = PERF[axis]
    perf = f"{pb} x {pr} x {pc}" if axis == "mid" else f"{pr} x {pc}"
    values = "; ".join(KIND_TEXT[k] for k in op.kinds)
    return f"""Implement a {axis}-wise reduction on the GPU: {op.what}. The interface is declared in
`{header}`:

```c++
{signature(params, ct)};
```

- {_layout(params, ct)}
- For {target}, write to {slot} {op.what} of {over}.{index}{accum}
- `out` is a device array of `{n_out}` elements of type `{out_type(op.key, ct)}`; its previous
  contents are garbage (NaN). Do not write outside it and do not modify `x`.
- Sizes: {sizes}, and fewer than 2^31 elements in all. The tests cover single elements,
  lengths that are not multiples of 32 or of any block size, very tall and very wide shapes
  (e.g. 100003 x 3 and 3 x 100003) and about a million elements; the benchmark times
  {CALLS} calls on {perf} inputs.
- Values are finite (no NaN or infinity); the test inputs are: {values}.

{tolerance_text(ct.acc, op)}

{cpp.closing(header)}
"""


class ReduceAxis(Family):
    name = "reduce-axis"
    slug = "red"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"

    def space(self) -> list[Params]:
        return _space()

    def draw(self, rng: random.Random) -> Params:
        return rng.choice(_space())

    def check(self, params: Params) -> Params:
        ok = params in _space()
        if not ok:
            raise SpecError(f"not a {self.name} parameter set: {params}", field="params")
        return params

    def label(self, params: Params) -> str:
        pitch = "-pitched" if params["pitched"] else ""
        return f"{params['axis']}-{params['op']}-{params['dtype']}{pitch}"

    def render(self, params: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[params["dtype"]]
        op, axis = OPS[params["op"]], params["axis"]
        name = f"{axis}_{op.key}"
        header = cpp.header_file(
            signature(params, ct),
            f"{name}: {op.what} along the {axis} axis (see the task statement for the layout).",
            includes=[ct.include],
        )
        b, r, c = PERF[axis]
        out_size = {"value": 8 if ct.acc == "double" else 4, "extreme": ct.size, "arg": 4}
        return Parts(
            prompt=_prompt(params, ct),
            context={f"include/{name}.h": header},
            tests={
                "test/test_main.cu": _harness(params, ct, task_id),
                "test/host_ref.h": _host_ref(params, ct),
            },
            solution={"solution.cu": reference(params, ct)},
            baseline={"solution.cu": baseline(params, ct)},
            difficulty=difficulty(axis, op, params["dtype"], params["pitched"]),  # type: ignore[arg-type]
            tags=["reduction", f"{axis}-reduction", params["dtype"], "memory-bound"],
            work=work(
                op, params["dtype"], ct.acc, PERF[axis], axis, CALLS, ct.size, out_size[op.kind]
            ),
            extra_metadata={"bench_sizes": {"batch": b, "rows": r, "cols": c, "R": CALLS}},
            forbidden=list(cpp.FORBIDDEN),
        )

    def mutants(self, params: Params) -> list[Mutant]:
        ct = cpp.CTYPES[params["dtype"]]
        op = OPS[params["op"]]

        def m(name: str, kind: str, why: str, *, swap: str | None = None, bug: str | None = None,
              det: bool = True) -> Mutant:  # fmt: skip
            src = reference(params, ct, op=swap, bug=bug)
            return Mutant(name, kind, why, {"solution.cu": src}, deterministic=det)  # type: ignore[arg-type]

        out = [
            m("tail", "tail", "skips the last (length mod 32 or 8) elements", bug=TAIL),
            m("operator", "operator", f"{op.swap_note}", swap=op.swapped),
        ]
        third = {
            "value": ("accumulation", NARROW, "accumulates in a narrower type"),
            "extreme": ("identity", IDENTITY0, "starts from 0 instead of the identity"),
            "arg": ("operator", LAST_INDEX, "returns the last index on ties"),
        }[op.kind]
        if op.key == "absmax":
            third = ("operator", SIGNED, "returns the signed element of largest magnitude")
        out.append(m(third[1], third[0], third[2], bug=third[1]))
        if params["axis"] != "row":
            out.append(m("no-sync", "sync", "no barrier before the shared tile is read",
                         bug=NO_SYNC, det=False))  # fmt: skip
        return out
