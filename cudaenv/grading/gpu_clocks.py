"""NVML readings for every timed sample, and the samples a throttled device spoiled.

Identical kernels vary 10-30% with boost clocks and thermal state. While a benchmark run
executes, :class:`ClockSampler` polls NVML (``nvidia-ml-py``'s ``pynvml`` if installed, else
``libnvidia-ml`` through ctypes; neither: every reading is None) for the SM and memory
clocks, the temperature and the clock-event ("throttle") reasons, and folds the polls into one
:class:`~cudaenv.grading.verdict.ClockReading` per sample. :func:`drop_throttled` then leaves
out the samples taken while a slowdown reason was active and counts them; :func:`timing`
builds the verdict's ``Timing`` with the readings recorded.

Only slowdowns are dropped (``DROP_REASONS``): hardware slowdown, software and hardware
thermal slowdown, power brake. A software power cap is recorded but kept: a heavy kernel runs
at its power cap in every sample, and dropping those would drop them all. Polls that report
the GPU idle are left out of the clock minimum (the process is still setting up).
"""

from __future__ import annotations

import ctypes
import os
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from cudaenv.grading.timing_stats import summarise
from cudaenv.grading.verdict import ClockReading, Timing

# nvmlClocksEventReason* bits (nvml.h)
GPU_IDLE = 0x1
APPLICATIONS_CLOCKS_SETTING = 0x2
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SYNC_BOOST = 0x10
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40
HW_POWER_BRAKE_SLOWDOWN = 0x80
DROP_REASONS = HW_SLOWDOWN | SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0
POLL_INTERVAL_S = 0.02


@dataclass(frozen=True)
class Poll:
    """One NVML look at the device."""

    sm_mhz: int
    mem_mhz: int
    temp_c: int
    reasons: int


PollFn = Callable[[], Poll | None]


def _visible_device() -> str:
    """The device CUDA numbers 0: the first of ``CUDA_VISIBLE_DEVICES`` (an index or a
    ``GPU-...`` UUID), else NVML's index 0."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


class _Pynvml:
    def __init__(self, device: str) -> None:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        self.nv = pynvml
        self.handle = (
            pynvml.nvmlDeviceGetHandleByUUID(device)
            if device.startswith(("GPU-", "MIG-"))
            else pynvml.nvmlDeviceGetHandleByIndex(int(device))
        )
        self.reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )

    def poll(self) -> Poll | None:
        nv, h = self.nv, self.handle
        try:
            return Poll(
                sm_mhz=int(nv.nvmlDeviceGetClockInfo(h, _CLOCK_SM)),
                mem_mhz=int(nv.nvmlDeviceGetClockInfo(h, _CLOCK_MEM)),
                temp_c=int(nv.nvmlDeviceGetTemperature(h, _TEMPERATURE_GPU)),
                reasons=int(self.reasons(h)),
            )
        except nv.NVMLError:
            return None


class _CtypesNvml:
    def __init__(self, device: str) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if device.startswith(("GPU-", "MIG-")):
            rc = self.lib.nvmlDeviceGetHandleByUUID(device.encode(), ctypes.byref(self.handle))
        else:
            rc = self.lib.nvmlDeviceGetHandleByIndex_v2(
                ctypes.c_uint(int(device)), ctypes.byref(self.handle)
            )
        if rc != 0:
            raise OSError(f"no NVML device {device} (error {rc})")
        name = "nvmlDeviceGetCurrentClocksEventReasons"
        self.reasons_fn = getattr(self.lib, name, None) or (
            self.lib.nvmlDeviceGetCurrentClocksThrottleReasons
        )

    def _uint(self, fn: Any, *args: Any) -> int | None:
        out = ctypes.c_uint()
        return out.value if fn(self.handle, *args, ctypes.byref(out)) == 0 else None

    def poll(self) -> Poll | None:
        sm = self._uint(self.lib.nvmlDeviceGetClockInfo, ctypes.c_int(_CLOCK_SM))
        mem = self._uint(self.lib.nvmlDeviceGetClockInfo, ctypes.c_int(_CLOCK_MEM))
        temp = self._uint(self.lib.nvmlDeviceGetTemperature, ctypes.c_int(_TEMPERATURE_GPU))
        reasons = ctypes.c_ulonglong()
        if None in (sm, mem, temp) or self.reasons_fn(self.handle, ctypes.byref(reasons)) != 0:
            return None
        return Poll(sm_mhz=sm, mem_mhz=mem, temp_c=temp, reasons=reasons.value)  # type: ignore[arg-type]


_opened: dict[str, PollFn | None] = {}


def nvml_poller(device: str | None = None) -> PollFn | None:
    """A function returning one :class:`Poll` of the device, or None where NVML is absent
    (no driver, a CPU machine) or refuses: then readings are None, nothing fails."""
    device = device or _visible_device()
    if device not in _opened:
        found: PollFn | None = None
        for backend in (_Pynvml, _CtypesNvml):
            try:
                found = backend(device).poll
                break
            except Exception:  # ImportError, OSError, NVMLError: try the next, else none
                continue
        _opened[device] = found
    return _opened[device]


def fold(polls: Sequence[Poll]) -> ClockReading | None:
    """One reading for a run: lowest/highest SM clock over the busy polls (all polls when
    every one was idle), lowest memory clock, hottest temperature, every non-idle reason."""
    if not polls:
        return None
    busy = [p for p in polls if not p.reasons & GPU_IDLE] or list(polls)
    reasons = 0
    for p in polls:
        reasons |= p.reasons
    return ClockReading(
        sm_mhz_min=min(p.sm_mhz for p in busy),
        sm_mhz_max=max(p.sm_mhz for p in busy),
        mem_mhz_min=min(p.mem_mhz for p in busy),
        temp_c_max=max(p.temp_c for p in polls),
        throttle_reasons=reasons & ~GPU_IDLE,
        polls=len(polls),
    )


class ClockSampler:
    """``with ClockSampler() as s: run()`` then ``s.reading``: NVML polled every
    ``interval_s`` on a thread while the run lasts (once at each end as well)."""

    def __init__(self, poll: PollFn | None = None, interval_s: float = POLL_INTERVAL_S) -> None:
        self._poll = poll if poll is not None else nvml_poller()
        self._interval = interval_s
        self._polls: list[Poll] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reading: ClockReading | None = None

    def _take(self) -> None:
        if self._poll is not None and (p := self._poll()) is not None:
            self._polls.append(p)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._take()

    def __enter__(self) -> ClockSampler:
        self._take()
        if self._poll is not None:
            self._thread = threading.Thread(target=self._loop, name="nvml-poll", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._take()
        self.reading = fold(self._polls)


def throttled(reading: ClockReading | None, mask: int = DROP_REASONS) -> bool:
    """A slowdown reason in ``mask`` was active during the sample (None: unknown, kept)."""
    return reading is not None and bool(reading.throttle_reasons & mask)


@dataclass(frozen=True)
class Kept:
    samples_ms: list[float]
    dropped: int
    all_throttled: bool


def drop_throttled(
    samples_ms: Sequence[float],
    readings: Sequence[ClockReading | None],
    mask: int = DROP_REASONS,
) -> Kept:
    """The samples not taken on a throttled device, and how many were dropped. When every
    sample was throttled they are all kept (``all_throttled``): a throttled time is still a
    time, and the verdict says so."""
    if len(readings) != len(samples_ms):
        raise ValueError(f"{len(samples_ms)} samples but {len(readings)} readings")
    kept = [s for s, r in zip(samples_ms, readings, strict=True) if not throttled(r, mask)]
    if samples_ms and not kept:
        return Kept(list(samples_ms), 0, True)
    return Kept(kept, len(samples_ms) - len(kept), False)


def timing(
    samples_ms: Sequence[float],
    readings: Sequence[ClockReading | None],
    source: str,
    *,
    mask: int = DROP_REASONS,
    l2_flush_bytes: int | None = None,
) -> Timing:
    """The verdict's ``Timing`` of these samples: throttled ones dropped and counted, every
    reading recorded (``timing_stats.summarise`` of what is kept)."""
    kept = drop_throttled(samples_ms, readings, mask)
    return summarise(kept.samples_ms, source).model_copy(
        update={
            "clocks": list(readings),
            "throttled_dropped": kept.dropped,
            "all_throttled": kept.all_throttled,
            "l2_flush_bytes": l2_flush_bytes,
        }
    )


def median_sm_mhz(readings: Sequence[ClockReading | None]) -> float | None:
    """The typical SM clock of a set of samples (for reports: A/A noise vs clock)."""
    clocks = [r.sm_mhz_max for r in readings if r is not None and r.sm_mhz_max is not None]
    return statistics.median(clocks) if clocks else None
