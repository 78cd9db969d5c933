"""GPU timing from cudaenv's own CUPTI + NVTX injection profiler.

Rewards depend on GPU time, so that time comes from a library injected into the benchmark
process (``CUDA_INJECTION64_PATH``), never from text the solution prints. The library's C++
source ships in this package (``cupti_inject.cpp``); :func:`build_profiler` compiles it with
the toolkit's nvcc on first use and caches the result. :func:`profiler_env` gives the variables
that make a process profiled; at exit the library writes one JSON document, which
:func:`load_profile` authenticates with a per-run nonce and :func:`time_ms` turns into the time
a problem's timing mode asks for.

The jobs live in modules of their own: :mod:`.build` (compiling the library),
:mod:`.env` (the variables that profile a process), :mod:`.profile` (the document and its
authentication), :mod:`.flush` (the L2 flush before timed ranges) and :mod:`.modes` (the
time each timing mode asks for; its matching rules).
"""

from __future__ import annotations

from cudaenv.grading.profiler.build import LIBRARY_NAME, build_profiler, cupti_dirs
from cudaenv.grading.profiler.env import ProfilerLocation, new_nonce, profiler_env, where
from cudaenv.grading.profiler.flush import flush_env, flush_setting, flush_size, flushed_bytes
from cudaenv.grading.profiler.modes import kernel_names, time_ms
from cudaenv.grading.profiler.profile import (
    KernelRecord,
    L2FlushRecord,
    MemcpyRecord,
    ProfileData,
    RangeRecord,
    load_profile,
)

__all__ = [
    "LIBRARY_NAME",
    "KernelRecord",
    "L2FlushRecord",
    "MemcpyRecord",
    "ProfileData",
    "ProfilerLocation",
    "RangeRecord",
    "build_profiler",
    "cupti_dirs",
    "flush_env",
    "flush_setting",
    "flush_size",
    "flushed_bytes",
    "kernel_names",
    "load_profile",
    "new_nonce",
    "profiler_env",
    "time_ms",
    "where",
]
