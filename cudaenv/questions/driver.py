"""A ``main.cu`` that makes one C++ question's call and prints what the output holds.

It allocates every array on the device, copies the question's inputs and the output's prior
contents there, calls the interface with the question's sizes, synchronizes and prints one
value per line (``%.17g``, exact for float and double; halves printed as floats). The GPU
stage (``scripts/questions_gpu.py``) builds it with nvcc against the kernel the question shows
and compares the printout with the stored answer; the tests build it on the CPU against the
CUDA emulator of ``tests/families/cuemu``.
"""

from __future__ import annotations

import math

import numpy as np

from cudaenv.questions.adapter import Rendered
from cudaenv.questions.cases import Case


def _lit(v: float, ctype: str) -> str:
    f = float(v)
    if math.isinf(f):
        return "INFINITY" if f > 0 else "-INFINITY"
    if ctype == "int":
        return str(int(f))
    return repr(f) + ("f" if ctype in ("float", "__half") else "")


def main_source(r: Rendered, case: Case, header: str, *, print_output: bool = True,
                synthetic: bool = False) -> str:  # fmt: skip
    """The driver for ``case`` of ``r`` (``header``: the interface header's include name).

    ``synthetic``: the buffers are filled by a loop (``i % 7``; indices ``i % rows``) instead
    of the case's literal values (for the large race cases)."""
    lines = ["#include <cmath>", "#include <cstdio>", "#include <cuda_runtime.h>"]
    if any(p.ctype == "__half" for p in r.interface.params):
        lines.append("#include <cuda_fp16.h>")
    lines += [f'#include "{header}"', "", "int main() {"]
    args = []
    for p in r.interface.params:
        if not p.pointer:
            args.append(str(case.scalars[p.name]))
            continue
        a = np.asarray(case.arrays[p.name]).reshape(-1)
        n = max(int(a.size), 1)
        host = "float" if p.ctype == "__half" else p.ctype
        lines.append(f"    static {p.ctype} h_{p.name}[{n}];")
        if synthetic:
            modulo = case.scalars.get("rows", 1) if p.name == "idx" else 7
            source = f"({host})(i % {modulo})"
        else:
            vals = ", ".join(_lit(v, p.ctype) for v in a) or "0"
            lines.append(f"    static {host} v_{p.name}[{n}] = {{{vals}}};")
            source = f"v_{p.name}[i]"
        conv = f"__float2half({source})" if p.ctype == "__half" else source
        lines.append(f"    for (int i = 0; i < {n}; ++i) h_{p.name}[i] = {conv};")
        lines.append(f"    {p.ctype}* d_{p.name} = nullptr;")
        lines.append(f"    cudaMalloc((void**)&d_{p.name}, sizeof h_{p.name});")
        lines.append(
            f"    cudaMemcpy(d_{p.name}, h_{p.name}, sizeof h_{p.name}, cudaMemcpyHostToDevice);"
        )
        args.append(f"d_{p.name}")
    out = r.interface.param(case.output)
    n_out = int(case.arrays[case.output].size)
    value = "(double)__half2float(h_{o}[i])" if out.ctype == "__half" else "(double)h_{o}[i]"
    lines += [
        f"    {r.interface.function}({', '.join(args)});",
        "    cudaError_t err = cudaDeviceSynchronize();",
        "    if (err == cudaSuccess) err = cudaGetLastError();",
        '    if (err != cudaSuccess) { printf("ERROR %s\\n", cudaGetErrorString(err)); return 1; }',
        f"    cudaMemcpy(h_{case.output}, d_{case.output}, sizeof h_{case.output}, cudaMemcpyDeviceToHost);",
        f'    for (int i = 0; i < {n_out}; ++i) printf("OUT %.17g\\n", {value.format(o=case.output)});',
        "    return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


#: sizes a race item runs at under racecheck: several warps per block, several blocks, tiles
#: and rows of lengths that are not multiples of anything
RACE_SIZES = {"rows": 70, "cols": 300, "batch": 3, "n": 5000, "M": 70, "N": 90, "K": 40,
              "d0": 3, "d1": 40, "d2": 37, "d3": 33}  # fmt: skip


def _counts(r: Rendered, s: dict[str, int]) -> dict[str, int]:
    """Elements of every buffer of ``r``'s interface at sizes ``s``."""
    p, names = r.params, {q.name for q in r.interface.params}
    grid = s["n"] if "n" in names else s["rows"] * s["cols"]  # one element per point
    width = p.get("width", 1)
    counts = {"y": grid, "out": grid, "flags": grid, "gamma": s["cols"], "beta": s["cols"],
              "bias": s["N"], "A": s["M"] * s["K"], "B": s["K"] * s["N"], "D": s["M"] * s["N"],
              "C": s["M"] * s["N"], "table": s["rows"] * width, "idx": s["n"], "w": s["n"],
              "hist": width, "x": grid}  # fmt: skip
    if "perm" in p:
        counts["x"] = counts["y"] = int(np.prod([s[f"d{i}"] for i in range(len(p["perm"]))]))
    elif r.base == "reduce-axis":
        batch = s["batch"] if p["axis"] == "mid" else 1
        counts["x"] = batch * s["rows"] * s.get("ld", s["cols"])
        counts["out"] = {"row": s["rows"], "col": s["cols"], "mid": batch * s["cols"]}[p["axis"]]
    elif r.base == "indexing" and p["op"] != "histogram":
        counts["x"] = s["n"] * width
        counts["out"] = s["n"] * width if p["op"] == "gather" else s["rows"] * width
    for i, b in enumerate(p.get("bcast", [])):
        counts[f"x{i}"] = {"full": s["rows"] * s["cols"], "row": s["cols"], "col": s["rows"]}[b]
    return counts


def race_case(r: Rendered) -> Case:
    """A call of a C++ interface at :data:`RACE_SIZES` with every buffer filled (values small,
    indices in range): racecheck needs the kernels to run, not a meaningful result."""
    s = dict(RACE_SIZES)
    if r.params.get("pitched"):
        s["ld"] = s["cols"] + 5
    counts = _counts(r, s)
    arrays = {}
    for q in r.interface.params:
        if q.pointer:
            values = np.arange(counts[q.name]) % (s["rows"] if q.name == "idx" else 7)
            arrays[q.name] = values.astype(np.float64)
    scalars = {q.name: s[q.name] for q in r.interface.params if not q.pointer}
    return Case(arrays, scalars, r.interface.outputs()[0])


def parse_output(text: str) -> list[float]:
    """The values a driver printed (``OUT <value>`` lines)."""
    return [float(line.split()[1]) for line in text.splitlines() if line.startswith("OUT ")]


__all__ = ["RACE_SIZES", "main_source", "parse_output", "race_case"]
