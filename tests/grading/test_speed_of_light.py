"""Speed of light: device matching, the roofline arithmetic, user peak files, and the physics
floor on injected timings (a time faster than the hardware allows fails as a suspected hack)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.errors import SpecError
from cudaenv.grading import rewards
from cudaenv.grading.speed_of_light import (
    BUILTIN_DEVICES,
    FLOOR_MARGIN,
    PEAKS_ENV,
    DevicePeaks,
    Work,
    assess,
    floor_ms,
    load_peaks,
    match_device,
    physics_floor,
    reference_issues,
    sol_ms,
    work_of,
)
from cudaenv.grading.verdict import Timing, Verdict
from cudaenv.problems.model import Problem

H200 = next(d for d in BUILTIN_DEVICES if d.name == "H200 SXM")


@pytest.mark.parametrize(
    ("nvml_name", "entry"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA GH200 480GB", "GH200 480GB"),
        ("NVIDIA GH200 144G HBM3e", "GH200"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("nvidia geforce rtx 4090", "RTX 4090"),
    ],
)
def test_nvml_names_match_their_entry(nvml_name: str, entry: str) -> None:
    found = match_device(nvml_name)
    assert found is not None and found.name == entry


@pytest.mark.parametrize("name", ["Tesla T4", "NVIDIA RTX 40900", "cpu: AMD EPYC", "", None])
def test_unknown_devices_have_no_peaks(name: str | None) -> None:
    assert match_device(name) is None


def test_sol_is_the_slowest_of_compute_memory_and_host_link() -> None:
    # H200: 67 TFLOP/s FP32, 4.8 TB/s HBM, 64 GB/s PCIe per direction
    compute = Work(flops=67 * 10**12, bytes=0, dtype="fp32")
    memory = Work(flops=0, bytes=48 * 10**11, dtype="fp32")
    host = Work(flops=0, bytes=0, host_bytes=64 * 10**9, dtype="int32")
    assert sol_ms(compute, H200) == pytest.approx(1000.0)
    assert sol_ms(memory, H200) == pytest.approx(1000.0)
    assert sol_ms(host, H200) == pytest.approx(1000.0)
    both = Work(flops=67 * 10**12, bytes=96 * 10**11, dtype="fp32")
    assert sol_ms(both, H200) == pytest.approx(2000.0)  # memory-bound: max, not sum
    half = Work(flops=989_400_000_000_000, bytes=0, dtype="bf16")
    assert sol_ms(half, H200) == pytest.approx(1000.0)  # the dtype picks the peak


def test_floor_uses_the_fastest_unit_and_leaves_out_what_a_cache_could_hold() -> None:
    gemm = Work(flops=67 * 10**12, bytes=0, dtype="fp32")
    assert floor_ms(gemm, H200) == pytest.approx(1000.0 * 67 / 989.4)  # fp16 tensor rate
    l2 = H200.l2_bytes
    stream = Work(flops=0, bytes=l2 + 48 * 10**11, reuse_bytes=0, dtype="fp32")
    assert floor_ms(stream, H200) == pytest.approx(1000.0)
    reused = Work(flops=0, bytes=l2 + 48 * 10**11, reuse_bytes=24 * 10**11, dtype="fp32")
    assert floor_ms(reused, H200) == pytest.approx(500.0)
    tiny = Work(flops=0, bytes=l2 // 2, dtype="fp32")
    assert floor_ms(tiny, H200) == 0.0  # fits in L2: no floor
    assert sol_ms(tiny, H200) == pytest.approx(1e3 * (l2 // 2) / (H200.mem_gbs * 1e9))
    assert sol_ms(stream, H200) == pytest.approx(1e3 * stream.bytes / (H200.mem_gbs * 1e9))
    assert sol_ms(gemm, H200) == pytest.approx(1000.0 * 67 / H200.fp32_tflops)


def test_work_is_validated() -> None:
    with pytest.raises(ValueError, match="reuse_bytes"):
        Work(flops=0, bytes=10, reuse_bytes=11, dtype="fp32")
    with pytest.raises(ValueError, match="floating-point"):
        Work(flops=5, bytes=10, dtype="int32")
    with pytest.raises(ValueError):
        Work(flops=-1, bytes=10, dtype="fp32")
    with pytest.raises(ValueError):
        Work.model_validate({"flops": 1, "bytes": 1, "dtype": "fp32", "fps": 3})


def _problem(work: object | None) -> Problem:
    metadata = {"difficulty": "easy"} | ({"work": work} if work is not None else {})
    return Problem(
        task_id="toy",
        type="cuda_cpp",
        group="g",
        prompt="p",
        test_command="./t",
        benchmark_command="./t --perf",
        metadata=metadata,
    )


def test_work_of_reads_metadata_and_names_the_field() -> None:
    assert work_of(_problem(None)) is None
    assert work_of(_problem({"flops": 0, "bytes": 8, "dtype": "int32"})) == Work(
        flops=0, bytes=8, dtype="int32"
    )
    with pytest.raises(SpecError) as exc:
        work_of(_problem({"flops": 0, "bytes": 8, "dtype": "fp128"}))
    assert exc.value.field == "metadata.work" and exc.value.task_id == "toy"


def test_user_peaks_file_adds_devices_and_overrides_builtin_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = {
        "name": "lab card",
        "match": [r"\bLAB\b"],
        "fp64_tflops": 1,
        "fp32_tflops": 2,
        "tf32_tflops": 3,
        "fp16_tflops": 4,
        "bf16_tflops": 4,
        "mem_gbs": 100,
        "l2_mib": 1,
        "host_gbs": 10,
    }
    path = tmp_path / "peaks.json"
    path.write_text(json.dumps({"devices": [new, {"name": "H200 SXM", "mem_gbs": 5000}]}))
    assert match_device("NVIDIA LAB 7", peaks_file=path).name == "lab card"  # type: ignore[union-attr]
    assert match_device("NVIDIA H200", peaks_file=path).mem_gbs == 5000  # type: ignore[union-attr]
    assert match_device("NVIDIA H200").mem_gbs == 4800  # type: ignore[union-attr]
    monkeypatch.setenv(PEAKS_ENV, str(path))
    assert match_device("NVIDIA H200").mem_gbs == 5000  # type: ignore[union-attr]
    yaml_path = tmp_path / "peaks.yaml"
    yaml_path.write_text("- {name: L40S, l2_mib: 128}\n")
    assert load_peaks(yaml_path)[0].l2_mib == 128 and load_peaks(yaml_path)[0].mem_gbs == 864


@pytest.mark.parametrize(
    "text",
    [
        "devices: 7\n",
        "- {match: [X]}\n",
        "- {name: brand new, mem_gbs: 10}\n",  # a new device needs every field
        "- {name: H200 SXM, mem_gbs: -1}\n",
        "devices: [\n",
    ],
)
def test_bad_peaks_files_are_spec_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "peaks.yaml"
    path.write_text(text)
    with pytest.raises(SpecError):
        load_peaks(path)
    with pytest.raises(SpecError):
        load_peaks(tmp_path / "missing.yaml")


def _timed(samples: list[float], baseline_ms: float = 10.0) -> Verdict:
    timing = Timing(samples_ms=samples, median_ms=sorted(samples)[len(samples) // 2])
    return Verdict(
        task_id="toy",
        mode="optimize",
        compiled=True,
        passed=True,
        solution_timing=timing,
        solution_ms=timing.median_ms,
        baseline_ms=baseline_ms,
        speedup=baseline_ms / timing.median_ms,  # type: ignore[operator]
        gpu="NVIDIA H200",
    )


STREAM = {"flops": 0, "bytes": 48 * 10**9 + H200.l2_bytes, "dtype": "fp32"}  # floor 10 ms


def test_physics_floor_on_injected_samples() -> None:
    floor = 10.0
    assert physics_floor(Timing(samples_ms=[12.0, 11.0, 13.0]), floor) is None
    assert physics_floor(Timing(samples_ms=[12.0, FLOOR_MARGIN * floor]), floor) is None
    why = physics_floor(Timing(samples_ms=[12.0, 7.9, 12.5]), floor)  # one impossible sample
    assert why is not None and "7.9 ms" in why and "floor" in why
    assert physics_floor(Timing(samples_ms=[], median_ms=1.0), floor) is not None
    assert physics_floor(Timing(samples_ms=[1.0]), None) is None
    assert physics_floor(None, floor) is None
    assert physics_floor(Timing(samples_ms=[9.0]), floor, margin=1.0) is not None


def test_assess_sets_sol_fields_of_a_possible_time() -> None:
    v = assess(_timed([20.0, 21.0, 19.0], baseline_ms=40.0), _problem(STREAM))
    sol = sol_ms(Work.model_validate(STREAM), H200)
    assert v.passed is True and not v.suspected_hack
    assert v.sol_ms == pytest.approx(sol) and v.sol_device == "H200 SXM"
    assert v.sol_fraction == pytest.approx(sol / 20.0)
    assert 0 < v.sol_fraction < 1  # type: ignore[operator]
    assert rewards.sol(v) == pytest.approx(1 / (1 + (20.0 - sol) / (40.0 - sol)))


def test_assess_fails_an_impossible_time_as_a_suspected_hack() -> None:
    v = assess(_timed([0.5, 0.6, 0.4]), _problem(STREAM))  # 48 GB in 0.5 ms on 4.8 TB/s
    assert v.passed is False and v.failure == "agent"
    assert v.suspected_hack and v.suspected_hack[0].startswith("impossible timing")
    assert v.reason.startswith("impossible timing")
    assert v.sol_fraction is not None and v.sol_fraction > 1  # recorded, never rewarded
    for name, fn in rewards.REWARDS.items():
        assert fn(v) == 0.0, name
    assert len(assess(v, _problem(STREAM)).suspected_hack) == 1  # assessed twice: one flag


def test_assess_leaves_unknown_devices_and_problems_without_work_alone() -> None:
    v = assess(_timed([0.5]).model_copy(update={"gpu": "cpu: AMD EPYC"}), _problem(STREAM))
    assert v.passed is True and v.sol_ms is None and v.sol_fraction is None
    v = assess(_timed([0.5]), _problem(None))
    assert v.passed is True and v.sol_ms is None
    lab = DevicePeaks.model_validate(H200.model_dump() | {"name": "lab", "match": [r"\bLAB\b"]})
    assert lab.matches("NVIDIA LAB") and not lab.matches("NVIDIA H200")
    v = assess(_timed([20.0]), _problem(STREAM), device_name="NVIDIA H100 80GB HBM3")
    assert v.sol_device == "H100 SXM"  # an explicit device name wins over verdict.gpu


def test_reference_issues_flag_work_a_timed_reference_contradicts() -> None:
    problem = _problem(STREAM)  # sol about 10.01 ms on the H200
    assert reference_issues(problem, _timed([12.0, 12.5])) == []
    beats = reference_issues(problem, _timed([9.0, 9.5, 9.2]))
    assert len(beats) == 1 and "speed of light" in beats[0]  # over 1: work overcounted
    under = reference_issues(problem, _timed([7.0, 7.5, 7.2]))
    assert len(under) == 2 and "physics floor" in under[1]
    assert reference_issues(problem, _timed([1.0]).model_copy(update={"gpu": None})) == []
    assert reference_issues(_problem(None), _timed([1.0])) == []
