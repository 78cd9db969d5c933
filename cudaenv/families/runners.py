"""The runners of generated problems (``test/``): untrusted like the solution, they only call it on
the checker's inputs and write the outputs out (see ``refs/family_check.py`` for the files and
the layouts). One description, :class:`Io`, drives both languages: the C++ runner
(``test/runner.cpp`` on ``cudaenv_runner.h``) and the Python one (``test/run.py``, the adapter
of ``cudaenv_pyrunner.py``).

What a runner does per case. Test: upload every input with a poisoned guard after it, poison
every output (an in-out one starts from its input), make the call inside ``Call`` (the GPU-work
range, only for calls with work), synchronize, and write back every output and every input
(the checker compares the inputs with what it gave). Python: device arrays, and host arrays
first where the case asks. Benchmark: one input set and one poisoned output per timed call
(or windows of one shared input), 3 warm-up calls on the first set, the outputs poisoned
again, every timed call inside one ``bench_region`` ending with a synchronize, then every
timed call's output written out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cudaenv.families.base import GENERATOR_VERSION

HOST = {"f32": "float", "f64": "double", "f16": "cudaenv::Half", "i32": "int32_t"}
DEVICE = {"f32": "float", "f64": "double", "f16": "__half", "i32": "int"}
NUMPY = {"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32"}


@dataclass(frozen=True)
class Arg:
    """An array argument of the solution's function, in call order."""

    name: str
    dtype: str  # f32 f64 f16 i32
    role: Literal["in", "out", "inout"] = "in"


@dataclass(frozen=True)
class Io:
    """How a problem's function is called."""

    function: str
    args: tuple[Arg, ...]
    sizes: tuple[str, ...]  # the int size arguments (C++), the checker's scalar inputs
    call: str = ""  # C++: the call, ``@name@`` for an array's device pointer, sizes by name
    shifted: bool = False  # the benchmark's inputs are windows of one buffer each

    @property
    def ins(self) -> list[Arg]:
        return [a for a in self.args if a.role == "in"]

    @property
    def outs(self) -> list[Arg]:
        return [a for a in self.args if a.role != "in"]


def _cpp_call(io: Io, ptr: dict[str, str]) -> str:
    text = io.call
    for a in io.args:
        const = "const " if a.role == "in" else ""
        text = text.replace(f"@{a.name}@", f"({const}{DEVICE[a.dtype]}*){ptr[a.name]}")
    return text


def cpp_runner(io: Io, *, header: str, includes: list[str], task_id: str, family: str) -> str:
    """``test/runner.cpp``."""
    inc = "".join(f"#include <{i}>\n" for i in includes if i)
    sizes = "".join(f'    const int {s} = c.scalar<int32_t>("{s}");\n' for s in io.sizes)
    unused = "".join(f"    (void){s};\n" for s in io.sizes)
    h = {a.name: HOST[a.dtype] for a in io.args}
    # test: inputs, outputs, call, write back
    t_in = "".join(f'    DeviceArray<{h[a.name]}> {a.name} = load<{h[a.name]}>(c, "{a.name}", guard);\n'
                   for a in io.ins)  # fmt: skip
    t_out = "".join(
        f'    const int64_t n_{a.name} = count(c, "{a.name}");\n'
        f"    DeviceArray<{h[a.name]}> {a.name}(n_{a.name} + guard);\n"
        f"    {a.name}.poison();\n"
        + (f'    {a.name}.upload(c.input<{h[a.name]}>("{a.name}").data(), n_{a.name});\n'
           if a.role == "inout" else "")
        for a in io.outs
    )  # fmt: skip
    t_call = _cpp_call(io, {a.name: f"{a.name}.get()" for a in io.args})
    t_back = "".join(f'    c.output("{a.name}", {a.name}.download(n_{a.name} + guard));\n'
                     for a in io.outs) + "".join(
        f'    c.output("{a.name}.after", {a.name}.download({a.name}.size()));\n' for a in io.ins
    )  # fmt: skip
    # perf: a set per call (or one shared buffer), outputs per call
    if io.shifted:
        p_in = "".join(
            f'    DeviceArray<{h[a.name]}> {a.name} = load<{h[a.name]}>(c, "{a.name}", guard);\n'
            f'    const int64_t {a.name}_stride = c.scalar<int64_t>("{a.name}.stride");\n'
            for a in io.ins
        )
        p_ptr = {a.name: f"({a.name}.get() + r * {a.name}_stride)" for a in io.ins}
    else:
        p_in = "".join(
            f"    std::vector<DeviceArray<{h[a.name]}>> {a.name}s;\n"
            f"    for (int r = 0; r < calls; ++r)\n"
            f'        {a.name}s.push_back(load<{h[a.name]}>(c, cudaenv::Name("{a.name}.%d", r), guard));\n'
            for a in io.ins
        )  # fmt: skip
        p_ptr = {a.name: f"{a.name}s[r].get()" for a in io.ins}
    p_out = "".join(
        f'    const int64_t n_{a.name} = count(c, "{a.name}");\n'
        f"    std::vector<DeviceArray<{h[a.name]}>> {a.name}s;\n"
        f"    for (int r = 0; r < calls; ++r) {a.name}s.emplace_back(n_{a.name} + guard);\n"
        for a in io.outs
    )
    p_ptr |= {a.name: f"{a.name}s[r].get()" for a in io.outs}
    reset = "".join(
        f"        {a.name}s[r].poison();\n"
        + (f'        {a.name}s[r].upload(c.input<{h[a.name]}>(cudaenv::Name("{a.name}.%d", r)).data(), n_{a.name});\n'
           if a.role == "inout" else "")
        for a in io.outs
    )  # fmt: skip
    p_call = _cpp_call(io, p_ptr)
    p_back = "".join(
        f'    for (int r = 0; r < calls; ++r)\n'
        f'        c.output(cudaenv::Name("{a.name}.%d", r), {a.name}s[r].download(n_{a.name} + guard));\n'
        for a in io.outs
    )  # fmt: skip
    return f"""// Runner of {task_id}: calls {io.function} on the checker's inputs and writes the outputs
// out. Generated by cudaenv.families ({family}, generator v{GENERATOR_VERSION}). Untrusted like
// the solution it is built with: it holds no secret and decides nothing; check/check.py, in a
// sandbox of its own, draws the inputs and compares every output. Boilerplate (.npy files, the
// manifest loop, CUDA errors, device buffers, NVTX ranges) lives in cudaenv_runner.h.
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
{inc}#include "{header}"

using cudaenv::Case;
using cudaenv::DeviceArray;

// An input on the device with `guard` poisoned elements after it: a read past its end sees the
// poison (NaN for floats), and the whole buffer comes back to show it was not written.
template <class T>
static DeviceArray<T> load(Case& c, const char* name, int64_t guard) {{
    const std::vector<T> host = c.input<T>(name);
    DeviceArray<T> d(host.size() + guard);
    d.poison();
    if (!host.empty()) d.upload(host.data(), host.size());
    return d;
}}

// The element count of an output (the product of the shape the checker gives).
static int64_t count(Case& c, const char* name) {{
    int64_t n = 1;
    for (int64_t d : c.input<int64_t>(cudaenv::Name("%s.shape", name))) n *= d;
    return n;
}}

static void test_case(Case& c) {{
{sizes}{unused}    const int64_t guard = c.scalar<int32_t>("guard");
{t_in}{t_out}    {{
        cudaenv::Call call(c.scalar<int32_t>("work") != 0);  // on a GPU: kernels must run in it
        {t_call};
        cudaenv::sync("{io.function}");
    }}
{t_back}}}

static void perf_case(Case& c) {{
{sizes}{unused}    const int64_t guard = c.scalar<int32_t>("guard");
    const int calls = c.scalar<int32_t>("calls");
{p_in}{p_out}    for (int w = 0; w < 3; ++w) {{  // warm-up, on the first call's buffers
        const int r = 0;
        {p_call};
    }}
    cudaenv::sync("warm-up");
    for (int r = 0; r < calls; ++r) {{  // every timed call writes its own poisoned output
{reset}    }}
    {{
        cudaenv::Range region("bench_region");
        for (int r = 0; r < calls; ++r) {{
            {p_call};
        }}
        cudaenv::check(cudaDeviceSynchronize(), "timed calls");
    }}
    cudaenv::sync("timed calls");
{p_back}}}

int main(int argc, char** argv) {{ return cudaenv::run(argc, argv, test_case, perf_case); }}
"""


def py_runner(io: Io, *, task_id: str, family: str) -> str:
    """``test/run.py``: the adapter ``cudaenv_pyrunner.py`` calls per case."""
    ins = tuple(a.name for a in io.ins)
    outs = {a.name: NUMPY[a.dtype] for a in io.outs}
    return f'''"""Runner adapter of {task_id}: how one case calls `{io.function}`. Generated by
cudaenv.families ({family}, generator v{GENERATOR_VERSION}). test/cudaenv_pyrunner.py imports
it and the solution in one untrusted process; check/check.py, in a sandbox of its own, draws
the inputs and decides on the outputs written here."""

import numpy as np
from cudaenv_pyrunner import bench, device, poisoned

FUNCTION = {io.function!r}
INPUTS = {ins!r}
OUTPUTS = {outs!r}  # name: dtype
SHIFTED = {io.shifted!r}  # benchmark inputs: windows of one buffer each


def _shape(case, name):
    return tuple(int(d) for d in case.input(f"{{name}}.shape"))


def _outputs(case):
    return [poisoned(_shape(case, n), np.dtype(dt)) for n, dt in OUTPUTS.items()]


def _run(case, fn, ins, outs, variant):
    """One call; then every output and every input (the checker compares them) comes back."""
    with case.call(work=bool(case.input("work"))):  # on a GPU: kernels must run in it
        fn(*ins, *outs)
    for name, arr in zip(OUTPUTS, outs):
        case.output(f"{{name}}.{{variant}}", arr)
    for name, arr in zip(INPUTS, ins):
        case.output(f"{{name}}.{{variant}}", arr)


def test(case, solution):
    """Host arrays first where the case asks, then device arrays (fresh copies of the inputs)."""
    fn = getattr(solution, FUNCTION)
    if int(case.input("host")):
        _run(case, fn, [case.input(n) for n in INPUTS], _outputs(case), "host")
    ins = [device(case.input(n)) for n in INPUTS]
    _run(case, fn, ins, [device(o) for o in _outputs(case)], "device")


def _window(case, name, r):
    shape = _shape(case, name)
    start = r * int(case.input(f"{{name}}.stride"))
    return start, start + int(np.prod(shape, dtype=np.int64)), shape


def perf(case, solution):
    """One input set (or window) and one poisoned output per timed call; every output back."""
    fn = getattr(solution, FUNCTION)
    calls = int(case.input("calls"))
    if SHIFTED:
        shared = {{n: device(case.input(n)) for n in INPUTS}}
        sets = []
        for r in range(calls):
            views = []
            for n in INPUTS:
                lo, hi, shape = _window(case, n, r)
                views.append(shared[n][lo:hi].reshape(shape))
            sets.append(views)
    else:
        sets = [[device(case.input(f"{{n}}.{{r}}")) for n in INPUTS] for r in range(calls)]
    outs = [[device(o) for o in _outputs(case)] for _ in range(calls)]
    warm = [*sets[0], *[device(o) for o in _outputs(case)]]
    bench(lambda args: fn(*args), [[*s, *o] for s, o in zip(sets, outs)], warm=warm)
    for r, arrays in enumerate(outs):
        for name, arr in zip(OUTPUTS, arrays):
            case.output(f"{{name}}.{{r}}", arr)
'''


__all__ = ["DEVICE", "HOST", "NUMPY", "Arg", "Io", "cpp_runner", "py_runner"]
