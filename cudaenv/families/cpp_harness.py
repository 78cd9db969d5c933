"""A generic cuda_cpp harness: a family describes its arrays, size variables, test cases, the
call, and the host reference's call (which fills ``want``/``tol`` per output element, in
double); this module writes ``run_tests`` and ``run_perf`` around them.

Every output element must equal ``want`` or satisfy ``|got - want| <= tol`` (``tol`` 0:
exact; NaN fails, infinities must match);
outputs are poisoned first and their guards checked; inputs must come back unchanged. The
benchmark draws ``calls`` independent input sets from the grader's seed, warms up on the first,
times every call on its own set and output, then checks them all (a family with a costly host
reference checks ``perf_sample`` elements per output, spread over it).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Arr:
    """An input (or, with ``check``, an output) array of the harness."""

    name: str
    host: str  # element type on the host (half: uint16_t)
    dev: str  # element type the interface takes (the device pointer is cast to it)
    size: str  # element count, a C expression of the size variables
    gen: str = ""  # an element's value (C expression of rng, i, c.kind and the variables)
    shown: str = ""  # an element as a double, for messages and checks (default: a cast)
    inout: bool = False  # an output initialised from ``gen`` (the host reference reads it)

    def value(self, expr: str) -> str:
        return self.shown.format(expr) if self.shown else f"(double)({expr})"


@dataclass
class Spec:
    vars: list[str]  # size variables (ints), in the order the cases list them
    cases: list[tuple[str, list[int], int]]  # (tag, values, kind)
    inputs: list[Arr]
    outputs: list[Arr]
    call: str  # the solution's call; arrays by name are device pointers of their dev type
    host_call: str  # fills want_<out>/tol_<out> (double*) from <in>.data() and the variables
    perf: list[int]  # the benchmark's size values
    perf_kind: int = 0
    calls: int = 5
    perf_sample: int = 0  # 0: check every output element of the timed calls
    kinds: list[str] = field(default_factory=list)  # names of the kind codes (an enum)
    helpers: str = ""  # C code before the data (functions the ``gen`` expressions call)


def _unpack(spec: Spec) -> str:
    return "".join(f"    const int {v} = c.{v};\n" for v in spec.vars) + "".join(
        f"    (void){v};\n" for v in spec.vars
    )


def _call(spec: Spec, suffix: str) -> str:
    call = spec.call
    for a in spec.inputs + spec.outputs:
        const = "const " if a in spec.inputs else ""
        call = call.replace(f"@{a.name}@", f"({const}{a.dev}*)d{a.name}{suffix}")
    return call


def _check_fn(spec: Spec) -> str:
    lines = [
        "static bool check(const char* name, const Case& c, const Data& d"
        + "".join(f", const {o.host}* got_{o.name}" for o in spec.outputs)
        + ", size_t sample) {",
        _unpack(spec).rstrip("\n"),
    ]
    for o in spec.outputs:
        lines.append(f"    const size_t n_{o.name} = {o.size};")
        lines.append(
            f"    std::vector<double> want_{o.name}(n_{o.name} + 1), tol_{o.name}(n_{o.name} + 1);"
        )
    call = spec.host_call
    for a in spec.inputs + [o for o in spec.outputs if o.inout]:
        call = call.replace(f"@{a.name}@", f"d.{a.name}.data()")
    for o in spec.outputs:
        call = call.replace(f"@want_{o.name}@", f"want_{o.name}.data()").replace(
            f"@tol_{o.name}@", f"tol_{o.name}.data()"
        )
    lines.append(f"    {call};")
    for o in spec.outputs:
        lines.append(f"""    {{
        const size_t step = sample && n_{o.name} > sample ? n_{o.name} / sample : 1;
        for (size_t i = 0; i < n_{o.name}; i += step) {{
            const double g = {o.value(f"got_{o.name}[i]")};
            if (!(g == want_{o.name}[i] || fabs(g - want_{o.name}[i]) <= tol_{o.name}[i])) {{
                fprintf(stderr, "FAIL %s: {o.name}[%zu] = %.9g, expected %.9g (tolerance %.3g)\\n",
                        name, i, g, want_{o.name}[i], tol_{o.name}[i]);
                return false;
            }}
        }}
    }}""")
    lines.append("    return true;\n}")
    return "\n".join(lines)


def body(spec: Spec) -> str:
    """``run_tests``/``run_perf`` and their helpers (after cpp.PRELUDE, before main)."""
    kinds = f"enum Kind {{ {', '.join(spec.kinds)} }};\n" if spec.kinds else ""
    fields = "".join(f"int {v}; " for v in spec.vars)
    cases = "\n".join(
        f'    {{"{tag}", {", ".join(map(str, vals))}, {kind}}},' for tag, vals, kind in spec.cases
    )
    arrays = spec.inputs + [o for o in spec.outputs if o.inout]
    data = "".join(f"    std::vector<{a.host}> {a.name};\n" for a in arrays)
    make = "".join(
        f"    d.{a.name}.resize({a.size});\n"
        f"    for (size_t i = 0; i < d.{a.name}.size(); ++i) d.{a.name}[i] = {a.gen};\n"
        for a in arrays
    )
    fmt = "x".join("%d" for _ in spec.vars)
    args = ", ".join(f"c.{v}" for v in spec.vars)
    alloc = "".join(
        f"    {a.host}* d{a.name}{{S}} = dev_alloc<{a.host}>(d{{R}}.{a.name}.size());\n"
        f"    to_dev(d{a.name}{{S}}, d{{R}}.{a.name});\n"
        for a in spec.inputs
    ) + "".join(
        f"    {o.host}* d{o.name}{{S}} = dev_alloc<{o.host}>({o.size});\n"
        + (f"    to_dev(d{o.name}{{S}}, d{{R}}.{o.name});\n" if o.inout else "")
        for o in spec.outputs
    )
    frees = "".join(f"    CK(cudaFree(d{a.name}));\n" for a in spec.inputs + spec.outputs)
    gots = "".join(
        f"    std::vector<{o.host}> got_{o.name} = from_dev(d{o.name}, {o.size});\n"
        for o in spec.outputs
    )
    got_args = "".join(f", got_{o.name}.data()" for o in spec.outputs)
    guards = "".join(f" && guard_ok(name, d{o.name}, {o.size})" for o in spec.outputs)
    sames = "".join(f" && same(name, d{a.name}, d.{a.name})" for a in spec.inputs)
    one = alloc.replace("{S}", "").replace("{R}", "")
    perf_alloc = (
        "".join(f"    std::vector<{a.host}*> d{a.name}s(R);\n" for a in spec.inputs + spec.outputs)
        + "    for (int r = 0; r < R; ++r) {\n"
        + "".join(
            f"        d{a.name}s[r] = dev_alloc<{a.host}>(ds[r].{a.name}.size());\n"
            f"        to_dev(d{a.name}s[r], ds[r].{a.name});\n"
            for a in spec.inputs
        )
        + "".join(f"        d{o.name}s[r] = dev_alloc<{o.host}>({o.size});\n" for o in spec.outputs)
        + "    }\n"
    )
    reset = "".join(
        f"        to_dev(d{o.name}s[r], ds[r].{o.name});\n"
        if o.inout
        else f"        CK(cudaMemset(d{o.name}s[r], 0xFF, ({o.size}) * sizeof({o.host})));\n"
        for o in spec.outputs
    )
    bind = "".join(
        f"        {a.host}* d{a.name} = d{a.name}s[r];\n" for a in spec.inputs + spec.outputs
    )
    bind0 = bind.replace("[r]", "[0]")
    perf_free = "".join(
        f"        CK(cudaFree(d{a.name}s[r]));\n" for a in spec.inputs + spec.outputs
    )
    perf_gots = "".join(
        f"        std::vector<{o.host}> got_{o.name} = from_dev(d{o.name}s[r], {o.size});\n"
        for o in spec.outputs
    )
    perf_vals = ", ".join(map(str, spec.perf))
    return f"""
{kinds}struct Case {{ const char* tag; {fields}int kind; }};
static const Case kCases[] = {{
{cases}
}};

{spec.helpers}
struct Data {{
{data}}};

static Data make(const Case& c, uint64_t seed) {{
{_unpack(spec)}    Rng rng(seed);
    Data d;
{make}    return d;
}}

{_check_fn(spec)}

static bool run_case(const Case& c, uint64_t seed) {{
{_unpack(spec)}    char name[128];
    snprintf(name, sizeof name, "%s-{fmt}", c.tag, {args});
    Data d = make(c, seed);
{one}    {_call(spec, "")};
    sync_check(name);
{gots}    bool ok = check(name, c, d{got_args}, 0){guards}{sames};
{frees}    if (ok) printf("ok   %s\\n", name);
    return ok;
}}

static int run_tests() {{
    int i = 0;
    for (const Case& c : kCases)
        if (!run_case(c, 1000 + 17 * i++)) return 1;
    return 0;
}}

static int run_perf() {{
    const Case c = {{"perf", {perf_vals}, {spec.perf_kind}}};
{_unpack(spec)}    const int R = {spec.calls};  // timed calls, each on its own inputs and output
    Rng seeds(bench_seed());
    std::vector<Data> ds;
    for (int r = 0; r < R; ++r) ds.push_back(make(c, seeds.next()));
{perf_alloc}    for (int w = 0; w < 3; ++w) {{
        const int r = 0;
        (void)r;
{bind0}        {_call(spec, "")};
    }}
    sync_check("warm-up");
    for (int r = 0; r < R; ++r) {{
{reset}    }}
    nvtxRangePushA("bench_region");
    for (int r = 0; r < R; ++r) {{
{bind}        {_call(spec, "")};
    }}
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    sync_check("timed calls");
    bool ok = true;
    for (int r = 0; r < R; ++r) {{
        const Data& d = ds[r];
{perf_gots}        ok = ok && check("perf", c, d{got_args}, {spec.perf_sample});
{perf_free}    }}
    if (ok) printf("ok   perf (%d timed calls, {fmt})\\n", R, {args});
    return ok ? 0 : 1;
}}
"""
