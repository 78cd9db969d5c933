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


def main_source(r: Rendered, case: Case, header: str) -> str:
    """The driver for ``case`` of ``r`` (``header``: the interface header's include name)."""
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
        vals = ", ".join(_lit(v, p.ctype) for v in a) or "0"
        lines.append(f"    static {host} v_{p.name}[{n}] = {{{vals}}};")
        lines.append(f"    static {p.ctype} h_{p.name}[{n}];")
        conv = f"__float2half(v_{p.name}[i])" if p.ctype == "__half" else f"v_{p.name}[i]"
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


def parse_output(text: str) -> list[float]:
    """The values a driver printed (``OUT <value>`` lines)."""
    return [float(line.split()[1]) for line in text.splitlines() if line.startswith("OUT ")]


__all__ = ["main_source", "parse_output"]
