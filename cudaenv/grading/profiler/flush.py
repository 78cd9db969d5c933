"""The grader's L2 flush before each timed NVTX range (timing hygiene, issue 20).

A benchmark's inputs were usually just uploaded or written by a warm-up run, so they sit in
L2 when the timed region starts; a solution would be timed on a cache the grader happened to
leave warm. The injection library (``cupti_inject.cpp``) therefore writes a buffer of
``max(2 x L2, 64 MiB)`` and waits for it whenever a timed range opens, outside the range's
time. This module is the Python side: the variables that ask for it, the size rule (mirrored
from the C++ and tested against it), and what the profile reports. The library decides which
ranges are timed with POSIX ``fnmatch(3)`` on the timing mode's globs, which agrees with the
timing's own :func:`fnmatch.fnmatchcase` except that a backslash escapes the next character.

On the grader's host, ``CUDAENV_L2_FLUSH`` controls it: unset or ``1`` flushes with the
default size, ``0`` (``off``, ``false``, ``no``) turns it off (for A/A comparisons of
flushed and unflushed timing), any other whole number is the flush size in bytes.
"""

from __future__ import annotations

import os

from cudaenv.errors import SpecError
from cudaenv.grading.profiler.profile import ProfileData
from cudaenv.problems.model import (
    CustomTiming,
    GpuTiming,
    KernelsTiming,
    ProcessTiming,
    RegionTiming,
)

SETTING_ENV = "CUDAENV_L2_FLUSH"  # the grader's host: on (1), off (0) or a byte count
REQUEST_ENV = "CUDAENV_PROFILE_L2_FLUSH"  # the benchmark process: what the library reads
INCLUDE_ENV = "CUDAENV_PROFILE_L2_FLUSH_INCLUDE"  # newline-separated globs of timed ranges
EXCLUDE_ENV = "CUDAENV_PROFILE_L2_FLUSH_EXCLUDE"
MIN_FLUSH_BYTES = 64 << 20
_OFF = ("0", "off", "false", "no")

AnyTiming = ProcessTiming | KernelsTiming | RegionTiming | GpuTiming | CustomTiming


def flush_size(request: int, l2_bytes: int) -> int:
    """Bytes one flush writes (``l2_flush_size`` in the C++): a request of 1 means
    ``max(2 * l2_bytes, 64 MiB)``, enough to replace every line of an L2 split in two
    partitions, and of a device whose L2 size is unknown (0); any other request is the size."""
    if request != 1:
        return request
    return max(2 * l2_bytes, MIN_FLUSH_BYTES)


def parse_request(text: str | None) -> int:
    """What the library makes of ``CUDAENV_PROFILE_L2_FLUSH`` (``l2_flush_request`` in the
    C++): a plain decimal number; anything else (a sign, spaces, empty, 20 digits) is 0, off."""
    value = 0
    for ch in text or "":
        if not "0" <= ch <= "9" or value > (2**64 - 1 - 9) // 10:
            return 0
        value = value * 10 + ord(ch) - ord("0")
    return value


def flush_setting(environ: dict[str, str] | None = None) -> int:
    """The grader's flush request from ``CUDAENV_L2_FLUSH``: 1 (default size), 0 (off) or
    a byte count. A value that is none of these raises SpecError naming the variable."""
    raw = (os.environ if environ is None else environ).get(SETTING_ENV, "1").strip().lower()
    if raw in _OFF:
        return 0
    if raw in ("1", "on", "true", "yes", ""):
        return 1
    if not raw.isascii() or not raw.isdigit():
        raise SpecError(
            f"{SETTING_ENV}={raw!r} is not 1, 0 or a byte count",
            source="environment",
            field=SETTING_ENV,
        )
    return int(raw)


def flush_env(timing_mode: AnyTiming, request: int | None = None) -> dict[str, str]:
    """The benchmark process's flush variables for ``timing_mode``: a ``region`` timing
    flushes before each of its ranges (its include/exclude globs, passed on); the other modes
    have no timed range to flush before and get none. ``request``: default the grader's
    :func:`flush_setting`; 0 gives no variables."""
    request = flush_setting() if request is None else request
    if request == 0 or not isinstance(timing_mode, RegionTiming):
        return {}
    return {
        REQUEST_ENV: str(request),
        INCLUDE_ENV: "\n".join(timing_mode.include or []),
        EXCLUDE_ENV: "\n".join(timing_mode.exclude or []),
    }


def flushed_bytes(profile: ProfileData) -> int | None:
    """The flush size a profile reports for its run, or None when no flush was done before
    its timed ranges (not asked, none opened, or a driver call refused one)."""
    f = profile.l2_flush
    if f is None or f.count == 0 or f.failures:
        return None
    return f.bytes


def common_flush(per_sample: list[int | None]) -> int | None:
    """One flush size for a set of samples: the smallest, when every sample was flushed;
    None when any was not (the timing cannot claim a flush before each run)."""
    if not per_sample or any(b is None for b in per_sample):
        return None
    return min(b for b in per_sample if b is not None)
