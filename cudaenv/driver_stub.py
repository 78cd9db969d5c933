"""A link-time stand-in for the CUDA driver library (``-lcuda``) where the toolkit has none.

The driver API lives in ``libcuda.so.1``, which the GPU driver installs, not the toolkit: a
machine without a driver cannot link ``-lcuda`` at all, though the program is fine. NVIDIA's
devel images carry ``lib64/stubs/libcuda.so`` for this; a toolkit assembled from pip wheels
does not. We make the same thing from the toolkit's own ``cuda.h``: a shared library with the
soname ``libcuda.so.1`` that exports every driver function the header declares (each returns
CUDA_ERROR_STUB_LIBRARY). Programs linked against it record ``libcuda.so.1`` as needed and load
the real driver at run time; the stub itself is never loaded, because it is named ``libcuda.so``
only and its directory is on ``LIBRARY_PATH`` (the linker's), never on ``LD_LIBRARY_PATH``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

#: header variants whose declarations differ (per-thread default stream names, the legacy
#: unversioned names): the stub exports the union, so any of them links
_VARIANTS = ("", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM", "-D__CUDA_API_VERSION_INTERNAL")
_HEADERS = ("cuda.h", "cudaProfiler.h")
_DECL = re.compile(r"\bCUresult\s+(cu[A-Za-z0-9_]+)\s*\(")
CUDA_ERROR_STUB_LIBRARY = 34


def driver_functions(include: Path, cc: str = "gcc") -> list[str]:
    """Every driver API function ``include``'s headers declare, as the linker sees it."""
    source = "".join(f"#include <{h}>\n" for h in _HEADERS if (include / h).exists())
    names: set[str] = set()
    for flag in _VARIANTS:
        argv = [cc, "-E", "-P", "-x", "c", *([flag] if flag else []), f"-I{include}", "-"]
        proc = subprocess.run(argv, input=source, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{cc} could not read {include}/cuda.h: {proc.stderr[-500:]}")
        names |= set(_DECL.findall(proc.stdout))
    return sorted(names)


def stub_source(functions: list[str]) -> str:
    """C source of the stub: every function returns CUDA_ERROR_STUB_LIBRARY."""
    body = "".join(f"int {f}(void) {{ return {CUDA_ERROR_STUB_LIBRARY}; }}\n" for f in functions)
    return "/* link-time stand-in for libcuda.so.1, made by cudaenv */\n" + body


def make_stub(include: Path, root: Path) -> Path | None:
    """``root/<key>/libcuda.so`` made from ``include/cuda.h`` (once per header content, atomically
    so concurrent graders agree); the directory, or None without a header or a C compiler."""
    header = include / "cuda.h"
    cc = shutil.which("gcc") or shutil.which("cc")
    if not header.exists() or cc is None:
        return None
    key = hashlib.sha256(header.read_bytes()).hexdigest()[:16]
    target = root / key
    if (target / "libcuda.so").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}.{threading.get_ident()}"
    src, tmp = target / f".stub.{tag}.c", target / f".libcuda.{tag}.so"
    try:
        src.write_text(stub_source(driver_functions(include, cc)))
        argv = [cc, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(tmp), str(src)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"could not build the libcuda stub: {proc.stderr[-500:]}")
        tmp.replace(target / "libcuda.so")
    finally:
        for leftover in (src, tmp):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return target
