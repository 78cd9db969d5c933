"""Per-sample NVML readings: folding polls, the sampler's thread, and throttled samples
dropped and counted (on injected readings; the NVML read itself only on a GPU)."""

from __future__ import annotations

import threading

import pytest

from cudaenv.grading import gpu_clocks
from cudaenv.grading.gpu_clocks import (
    GPU_IDLE,
    HW_SLOWDOWN,
    HW_THERMAL_SLOWDOWN,
    SW_POWER_CAP,
    SW_THERMAL_SLOWDOWN,
    ClockSampler,
    Poll,
    drop_throttled,
    fold,
    nvml_poller,
    throttled,
    timing,
)
from cudaenv.grading.verdict import ClockReading, Timing
from cudaenv.toolkit import has_gpu


def poll(sm: int = 1980, mem: int = 2619, temp: int = 45, reasons: int = 0) -> Poll:
    return Poll(sm_mhz=sm, mem_mhz=mem, temp_c=temp, reasons=reasons)


def reading(reasons: int = 0, sm: int = 1980) -> ClockReading:
    return ClockReading(
        sm_mhz_min=sm, sm_mhz_max=sm, mem_mhz_min=2619, temp_c_max=50, throttle_reasons=reasons
    )


def test_fold_leaves_idle_polls_out_of_the_clocks() -> None:
    polls = [
        poll(sm=345, temp=30, reasons=GPU_IDLE),  # set-up: the GPU idles at a low clock
        poll(sm=1980, temp=52),
        poll(sm=1755, mem=2600, temp=61, reasons=SW_POWER_CAP),
    ]
    r = fold(polls)
    assert r is not None
    assert (r.sm_mhz_min, r.sm_mhz_max, r.mem_mhz_min, r.temp_c_max) == (1755, 1980, 2600, 61)
    assert r.throttle_reasons == SW_POWER_CAP and r.polls == 3  # idle is not a reason
    only_idle = fold([poll(sm=345, reasons=GPU_IDLE)])
    assert only_idle is not None and only_idle.sm_mhz_min == 345
    assert fold([]) is None


def test_sampler_polls_on_a_thread_while_the_run_lasts() -> None:
    """A scripted device: cool and fast, then hot and thermally slowed once the run starts."""
    seen = threading.Event()
    script = iter([poll(temp=40)] + [poll(sm=1400, temp=88, reasons=SW_THERMAL_SLOWDOWN)] * 1000)

    def source() -> Poll | None:
        seen.set()
        return next(script)

    with ClockSampler(source, interval_s=0.001) as sampler:
        assert seen.wait(5)
        while sampler.reading is None and len(sampler._polls) < 5:  # the thread's polls
            threading.Event().wait(0.001)
    r = sampler.reading
    assert r is not None and r.polls >= 3
    assert r.sm_mhz_min == 1400 and r.temp_c_max == 88
    assert throttled(r)


def test_sampler_without_nvml_reads_none() -> None:
    with ClockSampler(lambda: None, interval_s=0.001) as s:
        pass
    assert s.reading is None


def test_throttled_samples_are_dropped_and_counted() -> None:
    samples = [10.0, 13.0, 10.1, 12.5, 9.9]
    readings = [
        reading(),
        reading(HW_THERMAL_SLOWDOWN, sm=1400),
        reading(SW_POWER_CAP),  # a power cap is recorded, not dropped
        reading(HW_SLOWDOWN),
        None,  # NVML could not be read: unknown, kept
    ]
    kept = drop_throttled(samples, readings)
    assert kept.samples_ms == [10.0, 10.1, 9.9] and kept.dropped == 2 and not kept.all_throttled
    t = timing(samples, readings, "region", l2_flush_bytes=100 << 20)
    assert isinstance(t, Timing)
    assert t.samples_ms == [10.0, 10.1, 9.9] and t.median_ms == 10.0
    assert t.throttled_dropped == 2 and t.clocks == readings and t.l2_flush_bytes == 100 << 20
    strict = drop_throttled(samples, readings, mask=HW_SLOWDOWN | SW_POWER_CAP)
    assert strict.samples_ms == [10.0, 13.0, 9.9] and strict.dropped == 2


def test_all_throttled_keeps_every_sample_and_says_so() -> None:
    samples = [12.0, 12.2]
    readings = [reading(SW_THERMAL_SLOWDOWN), reading(HW_SLOWDOWN)]
    kept = drop_throttled(samples, readings)
    assert kept.samples_ms == samples and kept.dropped == 0 and kept.all_throttled
    t = timing(samples, readings, "region")
    assert t.all_throttled and t.median_ms == pytest.approx(12.1)
    assert drop_throttled([], []).samples_ms == [] and not drop_throttled([], []).all_throttled
    with pytest.raises(ValueError, match="readings"):
        drop_throttled([1.0], [])


def test_median_clock_of_readings() -> None:
    assert gpu_clocks.median_sm_mhz([reading(sm=1800), None, reading(sm=1900)]) == 1850
    assert gpu_clocks.median_sm_mhz([None]) is None


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU: NVML is expected to answer")
def test_no_nvml_here_means_no_readings() -> None:
    assert nvml_poller() is None
    with ClockSampler() as s:
        pass
    assert s.reading is None


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU visible (nvidia-smi found none)")
def test_nvml_reads_the_device() -> None:
    read = nvml_poller()
    assert read is not None
    p = read()
    assert p is not None and p.sm_mhz > 0 and p.mem_mhz > 0 and 0 < p.temp_c < 120
    with ClockSampler(interval_s=0.005) as s:
        threading.Event().wait(0.05)
    assert s.reading is not None and s.reading.polls >= 2
