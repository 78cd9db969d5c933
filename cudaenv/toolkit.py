"""Where the CUDA toolkit and the GPU are, and the environment commands need to use them.

Builds run with ``nvcc`` from the toolkit; each GPU library (cuBLAS, cuFFT, cuDNN, ...; the
table is :mod:`cudaenv.libraries`) may come from the toolkit or from its NVIDIA wheel, whose
libraries have no unversioned ``libX.so``: we add links to them in a private cache directory
so ``-lX`` resolves. ``-lcuda`` links against a stub where no driver library is at hand.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from cudaenv import libraries
from cudaenv.driver_stub import make_stub
from cudaenv.errors import CudaEnvError


class GpuInfo(BaseModel):
    """What identifies a timing context: the GPU, its driver and the toolkit."""

    name: str
    driver: str
    toolkit: str


def cache_dir() -> Path:
    """The user cache for cudaenv (builds, baselines, the profiler)."""
    root = os.environ.get("CUDAENV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cudaenv"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.cache
def cuda_home() -> Path | None:
    """The CUDA toolkit root, from CUDA_HOME/CUDA_PATH, nvcc on PATH, or /usr/local/cuda."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var) and Path(os.environ[var], "bin", "nvcc").exists():
            return Path(os.environ[var])
    default = Path("/usr/local/cuda")
    if (default / "bin" / "nvcc").exists():
        return default.resolve()
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    return None


@functools.cache
def toolkit_version() -> str | None:
    """``nvcc --version``'s release, e.g. "13.0"."""
    home = cuda_home()
    if home is None:
        return None
    try:
        out = subprocess.run(
            [str(home / "bin" / "nvcc"), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"release (\d+\.\d+)", out)
    return found.group(1) if found else None


@functools.cache
def gpu_info() -> GpuInfo | None:
    """The first visible NVIDIA GPU, or None when there is none (or no driver)."""
    if os.environ.get("CUDAENV_FORCE_NO_GPU") == "1":
        return None
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        proc = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (
        proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    )
    if not line:
        return None
    name, _, driver = (part.strip() for part in line.partition(","))
    return GpuInfo(name=name, driver=driver, toolkit=toolkit_version() or "unknown")


def cpu_identity() -> GpuInfo:
    """The timing context of a benchmark that runs on the CPU (a CPU-only problem, no GPU
    needed): the processor model stands where the GPU's name would."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return GpuInfo(name=f"cpu: {model}", driver="", toolkit=toolkit_version() or "unknown")


def has_gpu() -> bool:
    return gpu_info() is not None


@functools.cache
def _wheel_cublas() -> tuple[Path, Path] | None:
    """(include dir, lib dir) of the nvidia-cublas wheel, if installed."""
    found = libraries.in_wheel(libraries.BY_LINK["cublas"])
    if found.include is None or found.lib is None:
        return None
    return found.include, found.lib


@functools.cache
def _wheel_dirs() -> tuple[list[Path], list[Path]]:
    """(include dirs, lib dirs) of every library wheel installed (libraries.LIBRARIES), in the
    table's order, each once; a library the toolkit has itself is taken from the toolkit."""
    home = cuda_home()
    includes: list[Path] = []
    libs: list[Path] = []
    for lib in libraries.LIBRARIES:
        if lib.stub or libraries.installed_in_toolkit(lib, home):
            continue
        found = libraries.in_wheel(lib)
        includes += [found.include] if found.include else []
        libs += [found.lib] if found.lib else []
    return list(dict.fromkeys(includes)), list(dict.fromkeys(libs))


@functools.cache
def _linkable_lib_dir() -> Path | None:
    """A cache dir holding unversioned links (``libcublas.so``, ``libcufft.so``, ...) into
    the wheels, whose libraries carry only versioned names (``libcufft.so.12``).

    One directory per set of wheel locations (keyed by their resolved paths): the cache
    outlives virtual environments, and a link left by another one (dangling, or into a tree a
    sandbox does not show) must never be the one a build finds."""
    libs = _wheel_dirs()[1]
    if not libs:
        return None
    return link_dir_for(libs, cache_dir() / "toolkit-lib")


@functools.cache
def stub_dir() -> Path | None:
    """Where ``-lcuda`` finds a link-time libcuda: the toolkit's ``lib64/stubs`` (a devel
    toolkit has one), else a stub made from the toolkit's ``cuda.h`` (:mod:`cudaenv.driver_stub`);
    None without a toolkit or a C compiler."""
    home = cuda_home()
    found = libraries.in_toolkit(libraries.BY_LINK["cuda"], home)
    if found.lib is not None:
        return found.lib
    if found.include is None:
        return None
    try:
        return make_stub(found.include, cache_dir() / "driver-stub")
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None


def link_dir_for(lib: Path | Sequence[Path], root: Path) -> Path:
    """``root/<key of lib>`` with an unversioned link (``libX.so``) to each versioned library
    (``libX.so.<n>``) in ``lib`` (one directory or several) that has none of its own, made
    (or remade, when one points elsewhere) atomically, so concurrent builds agree."""
    dirs = [p.resolve() for p in ([lib] if isinstance(lib, Path) else lib)]
    key = "\0".join(map(str, dirs)) if len(dirs) > 1 else str(dirs[0])
    target = root / hashlib.sha256(key.encode()).hexdigest()[:16]
    target.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for d in dirs:
        for stem, versioned in _versioned_libraries(d).items():
            if stem in seen:  # the first directory's library wins, as the linker's search
                continue
            seen.add(stem)
            link = target / f"{stem}.so"
            if link.is_symlink() and os.readlink(link) == str(versioned):
                continue
            fresh = target / f".{stem}.{os.getpid()}.{threading.get_ident()}"
            with contextlib.suppress(FileNotFoundError):
                fresh.unlink()
            fresh.symlink_to(versioned)
            fresh.replace(link)
    return target


def _versioned_libraries(lib: Path) -> dict[str, Path]:
    """{stem: its first versioned file} for ``lib``'s ``<stem>.so.<n>`` files without a
    ``<stem>.so`` beside them (a wheel ships only the versioned name)."""
    found: dict[str, Path] = {}
    for path in sorted(lib.glob("lib*.so.*")):
        stem = path.name.split(".so.")[0]
        if stem not in found and not (lib / f"{stem}.so").exists():
            found[stem] = path
    return found


class ToolkitMismatchError(CudaEnvError, RuntimeError):
    """The CUDA headers a build would use come from a different release than the toolkit."""


#: the cuBLAS releases (major.minor) each CUDA toolkit release ships across its updates:
#: 12.x ships cuBLAS 12.x; cuda-toolkit 13.0.0 ships cuBLAS 13.0, 13.0.2 ships 13.1.0.3
CUBLAS_FOR_CUDA: dict[str, tuple[str, ...]] = {
    **{f"12.{m}": (f"12.{m}",) for m in range(10)},
    "13.0": ("13.0", "13.1"),
}


def header_cublas_version(include: Path) -> str | None:
    """``CUBLAS_VER_MAJOR.MINOR.PATCH.BUILD`` from ``include/cublas_api.h``, or None."""
    try:
        text = (include / "cublas_api.h").read_text(errors="replace")
    except OSError:
        return None
    parts = [re.search(rf"#define\s+CUBLAS_VER_{k}\s+(\d+)", text) for k in
             ("MAJOR", "MINOR", "PATCH", "BUILD")]  # fmt: skip
    if parts[0] is None or parts[1] is None:
        return None
    return ".".join(m.group(1) for m in parts if m is not None)


def cublas_mismatch(cuda_release: str | None, cublas: str | None) -> str | None:
    """Why cuBLAS ``cublas`` does not belong with CUDA ``cuda_release`` (None: it does, or
    either is unknown). A release not in CUBLAS_FOR_CUDA needs only the same major version."""
    if not cuda_release or not cublas:
        return None
    major_minor = ".".join(cublas.split(".")[:2])
    allowed = CUBLAS_FOR_CUDA.get(cuda_release)
    ok = major_minor in allowed if allowed else cublas.split(".")[0] == cuda_release.split(".")[0]
    if ok:
        return None
    ships = (
        f"cuBLAS {' or '.join(allowed)}" if allowed else f"cuBLAS {cuda_release.split('.')[0]}.x"
    )
    return (
        f"the nvidia-cublas wheel's headers are cuBLAS {cublas} but the CUDA toolkit is release "
        f"{cuda_release} (which ships {ships}); install the matching wheel "
        "(pip install 'cudaenv[cublas]') or point CUDA_HOME at the matching toolkit"
    )


def check_build_headers(build_command: str) -> None:
    """Raise ToolkitMismatchError before a build that links cuBLAS against the wheel's headers
    from another release than the toolkit's (it would compile against the wrong API)."""
    if "cublas" not in build_command.lower():
        return
    wheel = _wheel_cublas()
    if wheel is None:
        return
    why = cublas_mismatch(toolkit_version(), header_cublas_version(wheel[0]))
    if why is not None:
        raise ToolkitMismatchError(why)


def _prepend(existing: str | None, *paths: Path | None) -> str:
    parts = [str(p) for p in paths if p is not None]
    if existing:
        parts.append(existing)
    return os.pathsep.join(parts)


SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def interpreter_dirs() -> list[Path]:
    """This interpreter's bin directory (a venv's, when run as ``venv/bin/cudaenv`` without
    activating it) and the real one it links to: ``python`` in a harness must be this one."""
    dirs = [Path(os.path.abspath(sys.executable)).parent]
    real = Path(os.path.realpath(sys.executable)).parent
    return dirs if real in dirs else [*dirs, real]


def command_path(home: Path | None) -> str:
    """PATH for grading commands: this interpreter's bin, the toolkit's bin, the host's PATH,
    then the system directories (what a sandbox's own default PATH holds survives)."""
    parts = [str(d) for d in interpreter_dirs()]
    if home is not None:
        parts.append(str(home / "bin"))
    parts += (os.environ.get("PATH") or "").split(os.pathsep)
    parts += SYSTEM_PATH
    return os.pathsep.join(dict.fromkeys(p for p in parts if p))


@functools.cache
def toolkit_env() -> dict[str, str]:
    """Variables a build or test command needs to find nvcc, headers, libraries and Python:
    the toolkit's, then every library wheel's (``CPATH``; ``LIBRARY_PATH`` and
    ``LD_LIBRARY_PATH``, with the unversioned links), then the driver stub (``LIBRARY_PATH``
    only: the linker takes it, the loader never does)."""
    env: dict[str, str] = {}
    home = cuda_home()
    env["PATH"] = command_path(home)
    if home is not None:
        env["CUDA_HOME"] = str(home)
    includes, wheel_libs = _wheel_dirs()
    if includes:
        env["CPATH"] = _prepend(os.environ.get("CPATH"), *includes)
    libs = [home / "lib64" if home else None, *wheel_libs, _linkable_lib_dir()]
    env["LIBRARY_PATH"] = _prepend(os.environ.get("LIBRARY_PATH"), *libs, stub_dir())
    env["LD_LIBRARY_PATH"] = _prepend(os.environ.get("LD_LIBRARY_PATH"), *libs)
    return env


def missing_libraries(build_command: str | None, problem_texts: list[str]) -> str | None:
    """Why a problem cannot be built here (None: it can): a library its build command links or
    its own files include that neither the toolkit nor an installed wheel provides."""
    home = cuda_home()
    need = libraries.required(build_command, problem_texts)
    return libraries.missing_reason(
        lib for lib in need if not libraries.installed(lib, home, stub_dir())
    )


def sandbox_ro_dirs() -> list[Path]:
    """Directories the toolkit environment points into that a sandbox must show read-only
    (the CUDA root, the link directory and the driver stub, which live in the otherwise
    hidden cache; the wheels live under Python's prefix, which sandboxes show anyway)."""
    dirs = [cuda_home(), _linkable_lib_dir(), stub_dir()]
    return [d.resolve() for d in dirs if d is not None]


def main() -> None:
    """``python -m cudaenv.toolkit``: print shell exports (for authoring problems by hand)."""
    for key, value in toolkit_env().items():
        sys.stdout.write(f"export {key}={value!r}\n")


if __name__ == "__main__":
    main()
