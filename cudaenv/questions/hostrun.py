"""Run a C++ solution's host code without a GPU and record what it launches.

``solution.cu`` is compiled with nvcc as usual; instead of the CUDA runtime it is linked
against a stub whose ``__cudaPushCallConfiguration`` (what every ``<<<grid, block, smem>>>``
calls first) prints the configuration and whose launch does nothing; ``cudaMalloc`` hands out
host memory that no kernel ever touches. A small ``main`` calls the interface with null device
pointers and the given sizes. What it prints is what the host code would launch on a GPU:
the second path beside the closed forms of :mod:`cudaenv.questions.launches`.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from cudaenv.questions.adapter import Interface

STUB = r"""
#include <stdio.h>
#include <stdlib.h>
typedef struct { unsigned x, y, z; } dim3;
static dim3 g_grid, g_block;
static size_t g_shmem;
static void* g_handle[8];
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, void* stream) {
    (void)stream;
    g_grid = grid; g_block = block; g_shmem = shmem;
    printf("LAUNCH %u %u %u %u %u %u %zu\n", grid.x, grid.y, grid.z, block.x, block.y, block.z, shmem);
    return 0;
}
int __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, void* stream) {
    (void)stream; *grid = g_grid; *block = g_block; *shmem = g_shmem; return 0;
}
int __cudaLaunchKernel() { return 0; }
int __cudaGetKernel(void** kernel, const void* fn) { if (kernel) *kernel = (void*)fn; return 0; }
void** __cudaRegisterFatBinary(void* fatbin) { (void)fatbin; return g_handle; }
void __cudaRegisterFatBinaryEnd(void** h) { (void)h; }
void __cudaUnregisterFatBinary(void** h) { (void)h; }
void __cudaRegisterFunction() {}
void __cudaRegisterVar() {}
char __cudaInitModule(void** h) { (void)h; return 1; }
int cudaMalloc(void** p, size_t n) { *p = malloc(n ? n : 1); return 0; }
int cudaFree(void* p) { free(p); return 0; }
int cudaMemsetAsync(void* p, int v, size_t n, void* s) { (void)p; (void)v; (void)n; (void)s; return 0; }
int cudaMemset(void* p, int v, size_t n) { (void)p; (void)v; (void)n; return 0; }
int cudaGetLastError(void) { return 0; }
int cudaPeekAtLastError(void) { return 0; }
int cudaDeviceSynchronize(void) { return 0; }
"""
_LAUNCH = re.compile(r"^LAUNCH (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", re.M)


def _main(iface: Interface, header: str, sizes: dict[str, int]) -> str:
    args = ["nullptr" if p.pointer else str(sizes[p.name]) for p in iface.params]
    return f'#include "{header}"\nint main() {{\n    {iface.function}({", ".join(args)});\n    return 0;\n}}\n'


def host_launches(source: str, headers: dict[str, str], iface: Interface, sizes: dict[str, int],
                  *, nvcc: str = "nvcc", arch: str = "sm_80") -> list[tuple[tuple[int, int, int], tuple[int, int, int], int]]:  # fmt: skip
    """(grid, block, dynamic shared bytes) of every launch the host code makes for ``sizes``."""
    header = next(p for p in headers if p.endswith(".h")).split("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="cudaenv-hostrun-") as tmp:
        root = Path(tmp)
        for path, content in headers.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(content)
        (root / "solution.cu").write_text(source)
        (root / "main.cu").write_text(_main(iface, header, sizes))
        (root / "stub.c").write_text(STUB)
        steps = [
            [
                nvcc,
                "-I",
                "include",
                "-c",
                "solution.cu",
                "-o",
                "solution.o",
                f"-gencode=arch=compute_{arch[3:]},code=compute_{arch[3:]}",
            ],
            [
                nvcc,
                "-I",
                "include",
                "-c",
                "main.cu",
                "-o",
                "main.o",
                f"-gencode=arch=compute_{arch[3:]},code=compute_{arch[3:]}",
            ],
            ["gcc", "-c", "stub.c", "-o", "stub.o"],
            ["g++", "solution.o", "main.o", "stub.o", "-o", "run"],
            ["./run"],
        ]
        out = ""
        for cmd in steps:
            proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
            out = proc.stdout
        return [
            ((int(a), int(b), int(c)), (int(d), int(e), int(f)), int(g))
            for a, b, c, d, e, f, g in _LAUNCH.findall(out)
        ]


__all__ = ["STUB", "host_launches"]
