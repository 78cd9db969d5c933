"""One benchmark at a time per GPU: an exclusive, cross-process lease (builds stay parallel)."""

from __future__ import annotations

import os

from filelock import FileLock

from cudaenv.toolkit import cache_dir


def gpu_lease(device: str | None = None) -> FileLock:
    """A lock for the GPU the benchmarks run on (``CUDA_VISIBLE_DEVICES``' first entry)."""
    dev = device or (os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0")
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return FileLock(str(locks / f"gpu-{dev}.lock"))
