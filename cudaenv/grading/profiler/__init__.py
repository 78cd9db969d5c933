"""GPU timing from cudaenv's own CUPTI + NVTX injection profiler.

Rewards depend on GPU time, so that time comes from a library injected into the benchmark
process (``CUDA_INJECTION64_PATH``), never from text the solution prints. The library's C++
source ships in this package (``cupti_inject.cpp``); :func:`build_profiler` compiles it with
the toolkit's nvcc on first use and caches the result. :func:`profiler_env` gives the variables
that make a process profiled; at exit the library writes one JSON document, which
:func:`load_profile` authenticates with a per-run nonce and :func:`time_ms` turns into the time
a problem's timing mode asks for.

Matching rules (documented here because rewards depend on them):

- Globs are :func:`fnmatch.fnmatchcase` patterns (case-sensitive). An empty or missing
  ``include`` means "everything"; ``exclude`` removes what it matches.
- A kernel matches a pattern when any of its names does: the raw (mangled) name, the
  demangled signature (``void ns::axpy<float>(float*, int)``), and the short names
  ``ns::axpy`` and ``axpy`` (return type, template arguments and parameters removed).
- NVTX range names match exactly as the program gave them.
- A kernel belongs to a range when its launch call was made while the range was open (like
  Nsight Systems' NVTX projection); without a launch timestamp, its GPU start time decides.
- ``region``/``kernel``: kernel time of the matching ranges, where a matching range inside
  another matching range is not counted again; repeated ranges add up. ``wall_clock`` uses
  the ranges' CPU durations the same way. Excluded ranges are just not matched: an excluded
  range nested inside an included one does not subtract from it.
- ``gpu``: all kernel time plus all memcpy and memset time.
- A profile with more NVTX range ends than starts is refused for ``region`` timing. CUPTI
  13.0 reports no callback for the wide-character ``nvtxRangePushW`` (its pop does arrive),
  so programs must name ranges with ASCII, ``Ex`` attributes or registered strings.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
import secrets
import subprocess
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cudaenv.errors import GradingError
from cudaenv.problems.model import (
    CustomTiming,
    GpuTiming,
    KernelsTiming,
    ProcessTiming,
    RegionTiming,
)
from cudaenv.toolkit import cache_dir, cuda_home, toolkit_env, toolkit_version

__all__ = [
    "LIBRARY_NAME",
    "KernelRecord",
    "MemcpyRecord",
    "ProfileData",
    "RangeRecord",
    "build_profiler",
    "cupti_dirs",
    "kernel_names",
    "load_profile",
    "new_nonce",
    "profiler_env",
    "time_ms",
]

LIBRARY_NAME = "libcudaenv_inject.so"
SOURCE_NAME = "cupti_inject.cpp"
BUILD_TIMEOUT_S = 300.0
LOCK_TIMEOUT_S = 600.0
MAX_PROFILE_BYTES = 64 << 20
_CXX_FLAGS = "-fPIC,-fvisibility=hidden,-Wall,-Wextra"


# ---- building -----------------------------------------------------------------------------


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
        "-I", str(include), "-L", str(lib), "-lcupti", "-Xlinker", f"-rpath,{lib}",
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


def new_nonce() -> str:
    """A fresh secret that a profile must echo to count as ours."""
    return secrets.token_hex(16)


def profiler_env(
    out_path: str | os.PathLike[str],
    nonce: str,
    library: Path | None = None,
    ld_library_path: str | None = None,
) -> dict[str, str]:
    """Variables that make a process profiled, writing its profile to ``out_path``.

    NVTX_INJECTION64_PATH names the same library: its ``InitializeInjectionNvtx2`` hands
    NVTX to CUPTI, which is what makes NVTX ranges reach the profiler's callbacks. Both the
    output path and the nonce are erased from the process's environment when it starts.
    ``ld_library_path``: where libcupti is found where the process runs (default: this host's
    toolkit; an image reports its own, see :func:`where`).
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


# ---- the profile document -------------------------------------------------------------------


class KernelRecord(BaseModel):
    """One kernel execution, or (``count`` > 1, no timestamps) all runs of one kernel."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    mangled: str | None = None
    start_ns: int | None = Field(default=None, ge=0)
    end_ns: int | None = Field(default=None, ge=0)
    launch_ns: int | None = Field(default=None, ge=0)
    count: int = Field(default=1, ge=0)
    total_ns: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _total_from_span(cls, data: Any) -> Any:
        if isinstance(data, dict) and "total_ns" not in data:
            start, end = data.get("start_ns"), data.get("end_ns")
            if isinstance(start, int) and isinstance(end, int):
                data = {**data, "total_ns": max(end - start, 0)}
        return data

    @model_validator(mode="after")
    def _ordered(self) -> KernelRecord:
        if self.start_ns is not None and self.end_ns is not None and self.end_ns < self.start_ns:
            raise ValueError("kernel ends before it starts")
        return self


class MemcpyRecord(BaseModel):
    """All copies (or memsets, kind ``memset``) of one kind."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kind: str
    count: int = Field(default=0, ge=0)
    total_ns: int = Field(default=0, ge=0)
    bytes: int = Field(default=0, ge=0)


class RangeRecord(BaseModel):
    """One NVTX range (``count`` 1), or all ranges of one name when the profile aggregated them."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    start_ns: int = Field(ge=0)
    end_ns: int = Field(ge=0)
    wall_ns: int | None = Field(default=None, ge=0)
    kernel_ns: int = Field(default=0, ge=0)
    kernel_count: int = Field(default=0, ge=0)
    count: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> RangeRecord:
        if self.end_ns < self.start_ns:
            raise ValueError("range ends before it starts")
        if self.wall_ns is None:
            object.__setattr__(self, "wall_ns", self.end_ns - self.start_ns)
        return self


class ProcessSpan(BaseModel):
    """From the profiler's start (CUDA or NVTX init) to the process's exit."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    start_ns: int = Field(ge=0)
    end_ns: int = Field(ge=0)


class DroppedCounts(BaseModel):
    """What the profiler could not keep; non-zero counts make some timings unreliable."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kernels: int = 0
    ranges: int = 0
    launches: int = 0
    records: int = 0
    unmatched_range_ends: int = 0


class ProfileData(BaseModel):
    """The profiler's output document."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    version: int = 1
    nonce: str
    error: str | None = None
    process: ProcessSpan | None = None
    kernels_aggregated: bool = False
    kernels: list[KernelRecord] = Field(default_factory=list)
    memcpy: list[MemcpyRecord] = Field(default_factory=list)
    ranges_aggregated: bool = False
    ranges: list[RangeRecord] = Field(default_factory=list)
    ranges_complete: bool = True
    dropped: DroppedCounts = Field(default_factory=DroppedCounts)


def load_profile(path: str | os.PathLike[str], expected_nonce: str) -> ProfileData:
    """Read and authenticate a profile; GradingError if missing, corrupt, forged or failed.

    A missing file usually means the process died before exit handlers ran (or never
    initialised CUDA); a wrong nonce means the file was not written by this run's profiler.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_PROFILE_BYTES:
            raise GradingError(f"profile {p} is implausibly large")
        raw = p.read_bytes()
    except FileNotFoundError as exc:
        raise GradingError(
            f"no profile at {p}: the process exited without running exit handlers or never used CUDA"
        ) from exc
    except OSError as exc:
        raise GradingError(f"cannot read profile {p}: {exc}") from exc
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        nonce = doc.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(
            nonce.encode(), expected_nonce.encode()
        ):
            raise GradingError(f"profile {p} has the wrong nonce: forged or stale")
        profile = ProfileData.model_validate(doc)
    except (ValueError, ValidationError) as exc:  # JSONDecodeError is a ValueError
        raise GradingError(f"corrupt profile {p}: {exc}") from exc
    if profile.error:
        raise GradingError(f"the profiler failed in the benchmark process: {profile.error}")
    return profile


# ---- timing modes -----------------------------------------------------------------------------


def _short_names(demangled: str) -> list[str]:
    """``ns::axpy`` and ``axpy`` from ``void ns::axpy<float>(float*, int)``."""
    text = demangled.replace("(anonymous namespace)", "{anonymous}")
    depth, kept = 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            kept.append(ch)
    words = "".join(kept).split()
    if not words:
        return []
    qualified = words[-1]
    return [qualified, qualified.rsplit("::", 1)[-1]]


def kernel_names(kernel: KernelRecord) -> list[str]:
    """Every name a kernel glob is matched against (see the module docstring)."""
    names = [kernel.name, *_short_names(kernel.name)]
    if kernel.mangled:
        names.append(kernel.mangled)
    return list(dict.fromkeys(names))


def _matches(names: Iterable[str], include: list[str] | None, exclude: list[str] | None) -> bool:
    names = list(names)

    def hit(patterns: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in patterns)

    if include and not hit(include):
        return False
    return not (exclude and hit(exclude))


def _check_complete(profile: ProfileData, what: str) -> None:
    if profile.dropped.records:
        raise GradingError(
            f"CUPTI dropped {profile.dropped.records} activity records; {what} would be undercounted"
        )


def _region_ns(profile: ProfileData, mode: RegionTiming) -> int:
    matched = [r for r in profile.ranges if _matches([r.name], mode.include, mode.exclude)]
    if not matched:
        raise GradingError(
            f"no NVTX range matched include={mode.include} exclude={mode.exclude}; "
            f"ranges seen: {sorted({r.name for r in profile.ranges})[:20]}"
        )
    field = "kernel_ns" if mode.time_type == "kernel" else "wall_ns"
    if profile.ranges_aggregated:
        return sum(getattr(r, field) for r in matched)
    # Skip ranges nested inside an already counted matching range: their time is in it.
    total, covered_until = 0, -1
    for r in sorted(matched, key=lambda r: (r.start_ns, -r.end_ns)):
        if r.end_ns <= covered_until:
            continue
        total += getattr(r, field)
        covered_until = max(covered_until, r.end_ns)
    return total


def time_ms(
    profile: ProfileData,
    timing_mode: ProcessTiming | KernelsTiming | RegionTiming | GpuTiming | CustomTiming,
) -> float | None:
    """The time a timing mode asks for, in milliseconds; None for ``process`` and ``custom``.

    ``process`` is measured by the grader itself, ``custom`` comes from the program's output.
    ``kernels`` and ``gpu`` may return 0.0 when nothing ran: a grader must never reward a zero
    time. Raises GradingError where the profile cannot support the answer (no matching range,
    records dropped by CUPTI, range attribution incomplete).
    """
    if isinstance(timing_mode, ProcessTiming | CustomTiming):
        return None
    if isinstance(timing_mode, KernelsTiming):
        _check_complete(profile, "kernel time")
        ns = sum(
            k.total_ns
            for k in profile.kernels
            if _matches(kernel_names(k), timing_mode.include, timing_mode.exclude)
        )
        return ns / 1e6
    if isinstance(timing_mode, GpuTiming):
        _check_complete(profile, "GPU time")
        ns = sum(k.total_ns for k in profile.kernels) + sum(m.total_ns for m in profile.memcpy)
        return ns / 1e6
    if isinstance(timing_mode, RegionTiming):
        if profile.dropped.ranges:
            raise GradingError(f"the profiler dropped {profile.dropped.ranges} NVTX ranges")
        if profile.dropped.unmatched_range_ends:
            # More pops/ends than pushes/starts: some range was closed early (a program
            # popping its harness's range, or an NVTX call CUPTI does not report).
            raise GradingError(
                f"{profile.dropped.unmatched_range_ends} NVTX range ends had no matching start; "
                "range times are unreliable"
            )
        if timing_mode.time_type == "kernel":
            _check_complete(profile, "region kernel time")
            if profile.dropped.kernels or not profile.ranges_complete:
                raise GradingError("the profile could not attribute every kernel to its NVTX range")
        return _region_ns(profile, timing_mode) / 1e6
    raise GradingError(f"unknown timing mode {timing_mode!r}")
