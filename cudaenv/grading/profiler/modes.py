"""The time a timing mode asks for, from an authenticated profile.

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
from collections.abc import Iterable

from cudaenv.errors import GradingError
from cudaenv.grading.profiler.profile import KernelRecord, ProfileData
from cudaenv.problems.model import (
    CustomTiming,
    GpuTiming,
    KernelsTiming,
    ProcessTiming,
    RegionTiming,
)


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
