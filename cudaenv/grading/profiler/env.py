"""The variables that make a process profiled, and where a machine keeps its profiler."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import BaseModel

from cudaenv.grading.profiler.build import build_profiler, cupti_dirs
from cudaenv.grading.profiler.flush import AnyTiming, flush_env
from cudaenv.toolkit import toolkit_env


def new_nonce() -> str:
    """A fresh secret that a profile must echo to count as ours."""
    return secrets.token_hex(16)


def profiler_env(
    out_path: str | os.PathLike[str],
    nonce: str,
    library: Path | None = None,
    ld_library_path: str | None = None,
    *,
    timing_mode: AnyTiming | None = None,
    l2_flush: int | None = None,
) -> dict[str, str]:
    """Variables that make a process profiled, writing its profile to ``out_path``.

    NVTX_INJECTION64_PATH names the same library: its ``InitializeInjectionNvtx2`` hands
    NVTX to CUPTI, which is what makes NVTX ranges reach the profiler's callbacks. Both the
    output path and the nonce are erased from the process's environment when it starts.
    ``ld_library_path``: where libcupti is found where the process runs (default: this host's
    toolkit; an image reports its own, see :func:`where`). ``timing_mode``: the benchmark's;
    a ``region`` timing adds the L2 flush before its ranges (:mod:`.flush`; ``l2_flush``
    overrides the grader's ``CUDAENV_L2_FLUSH``: 0 off, 1 default size, else bytes).
    """
    library = library or build_profiler()
    if ld_library_path is None:
        _, lib = cupti_dirs()
        base = toolkit_env().get("LD_LIBRARY_PATH") or os.environ.get("LD_LIBRARY_PATH", "")
        ld_library_path = os.pathsep.join(p for p in (str(lib), base) if p)
    return {
        "CUDA_INJECTION64_PATH": str(library),
        "NVTX_INJECTION64_PATH": str(library),
        "CUDAENV_PROFILE_OUT": str(out_path),
        "CUDAENV_PROFILE_NONCE": nonce,
        "LD_LIBRARY_PATH": ld_library_path,
        **(flush_env(timing_mode, l2_flush) if timing_mode is not None else {}),
    }


class ProfilerLocation(BaseModel):
    """Where a machine (the host, or an image) keeps its built profiler and libcupti."""

    library: str
    ld_library_path: str


def where() -> ProfilerLocation:
    """This machine's profiler (built if missing) and the library path it needs to load.
    ``python -m cudaenv.grading.profiler --where`` prints it as JSON: the grader asks an
    image this way, so a container benchmarks with the image's own prebuilt library and
    CUPTI, never with host paths."""
    library = build_profiler()
    _, lib = cupti_dirs()
    base = os.environ.get("LD_LIBRARY_PATH", "")
    return ProfilerLocation(
        library=str(library), ld_library_path=os.pathsep.join(p for p in (str(lib), base) if p)
    )
