"""Building cudaenv's CUPTI + NVTX injection library: compiled from the shipped C++ source
(``cupti_inject.cpp``) with the toolkit's nvcc on first use, cached per (source, toolkit)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from importlib import resources
from pathlib import Path

from filelock import FileLock, Timeout

from cudaenv.errors import GradingError
from cudaenv.toolkit import cache_dir, cuda_home, toolkit_env, toolkit_version

LIBRARY_NAME = "libcudaenv_inject.so"
SOURCE_NAME = "cupti_inject.cpp"
BUILD_TIMEOUT_S = 300.0
LOCK_TIMEOUT_S = 600.0
_CXX_FLAGS = "-fPIC,-fvisibility=hidden,-Wall,-Wextra"


def _source_text() -> str:
    """The injection library's C++ source, as shipped in the package."""
    return resources.files(__package__).joinpath(SOURCE_NAME).read_text(encoding="utf-8")


def cupti_dirs() -> tuple[Path, Path]:
    """(include dir, lib dir) of CUPTI in the toolkit: next to CUDA's own, or extras/CUPTI."""
    home = cuda_home()
    if home is None:
        raise GradingError("cannot build the profiler: no CUDA toolkit (nvcc) found")
    include = next(
        (
            d
            for d in (home / "include", home / "extras" / "CUPTI" / "include")
            if (d / "cupti.h").exists()
        ),
        None,
    )
    lib = next(
        (
            d
            for d in (home / "lib64", home / "extras" / "CUPTI" / "lib64", home / "lib")
            if any(d.glob("libcupti.so*"))
        ),
        None,
    )
    if include is None or lib is None:
        raise GradingError(
            f"cannot build the profiler: CUPTI headers or library missing under {home}"
        )
    return include, lib


def _nvcc_command(source: Path, output: Path, include: Path, lib: Path) -> list[str]:
    nvcc = cuda_home() / "bin" / "nvcc"  # type: ignore[operator]  # checked by cupti_dirs
    return [
        str(nvcc), "-std=c++17", "-O2", "-shared", "-Xcompiler", _CXX_FLAGS,
        "-I", str(include), "-L", str(lib), "-lcupti", "-ldl", "-Xlinker", f"-rpath,{lib}",
        "-o", str(output), str(source),
    ]  # fmt: skip


def _run_nvcc(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the compiler (a seam so tests can count compilations)."""
    env = {**os.environ, **toolkit_env()}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env, check=False
    )


def build_profiler(force: bool = False) -> Path:
    """Compile the injection library once per (source, toolkit) and return its path.

    The build lives in ``cache_dir()/profiler/<key>/``; a file lock makes parallel graders
    wait for one build instead of racing. Raises GradingError with the compiler's output
    when the build fails.
    """
    source = _source_text()
    include, lib = cupti_dirs()
    key_material = "\0".join([source, toolkit_version() or "unknown", str(cuda_home()), _CXX_FLAGS])
    key = hashlib.sha256(key_material.encode()).hexdigest()[:20]
    build_dir = cache_dir() / "profiler" / key
    target = build_dir / LIBRARY_NAME
    if target.exists() and not force:
        return target
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(build_dir / ".lock"), timeout=LOCK_TIMEOUT_S):
            if target.exists() and not force:
                return target  # another grader built it while we waited
            src_path = build_dir / SOURCE_NAME
            src_path.write_text(source, encoding="utf-8")
            tmp = build_dir / f".{LIBRARY_NAME}.{os.getpid()}.tmp"
            try:
                proc = _run_nvcc(_nvcc_command(src_path, tmp, include, lib))
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise GradingError(f"building the profiler failed: {exc}") from exc
            if proc.returncode != 0 or not tmp.exists():
                tmp.unlink(missing_ok=True)
                output = (proc.stdout + proc.stderr).strip()[-8000:]
                raise GradingError(
                    f"building the profiler failed (nvcc exit {proc.returncode}):\n{output}"
                )
            os.replace(tmp, target)
    except Timeout as exc:
        raise GradingError(f"timed out waiting for the profiler build lock in {build_dir}") from exc
    return target
