"""Which Python GPU runtimes a cuda_python problem's tests use, and whether any can run here
without a GPU.

numba-cuda has a simulator (``NUMBA_ENABLE_CUDASIM=1``) that runs its kernels on the CPU;
cuTile (``cuda.tile``), PyTorch CUDA tensors, CuPy and Triton have none: tests importing them
can only run on a GPU (of the compute capability the problem names), so without one their GPU
stages are skipped ("not run"), never run on a simulator they cannot use and failed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

#: module prefixes whose kernels or tensors need a real GPU (no CPU simulator)
GPU_ONLY_MODULES: tuple[str, ...] = ("cuda.tile", "torch", "cupy", "triton")

_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)


def imported_modules(source: str) -> set[str]:
    """Absolute module names a Python source imports (a regex reading when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {a or b for a, b in _IMPORT.findall(source)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def needs_real_gpu(sources: Iterable[tuple[str, str]]) -> bool:
    """Whether any of ``sources`` ((path, text) pairs; .py files count) imports a GPU-only
    runtime."""
    for path, text in sources:
        if not path.endswith(".py"):
            continue
        for name in imported_modules(text):
            if any(name == m or name.startswith(m + ".") for m in GPU_ONLY_MODULES):
                return True
    return False
