"""Speed of light: the least time a device can take for a problem's benchmark, and the floor
below which a measured time is physically impossible.

A benchmarked problem declares the work of its timed region in ``metadata.work`` (see
docs/AUTHORING.md, "Work and speed of light", for how flops and bytes are counted)::

    work: {flops: 687194767360, bytes: 1006632960, dtype: fp32}

``sol_ms(work, device) = max(flops / peak[dtype], bytes / memory bandwidth, host_bytes / host
link bandwidth)``, the roofline bound on the device NVML names (table below, overridable with
``$CUDAENV_DEVICE_PEAKS`` or ``peaks_file=``: a YAML or JSON file, see :func:`load_peaks`).

The **physics floor** is stricter than ``sol_ms`` on purpose, so that no correct solution can
ever fall below it: the compute term uses the device's fastest arithmetic (any emulation of
the problem's data type runs on some unit), the memory term leaves out what the L2 could hold
from before the region and what ``reuse_bytes`` says later calls may find in cache. A timed
sample below ``FLOOR_MARGIN`` times that floor cannot be a real measurement of a correct run:
the verdict becomes a suspected hack and fails (reward 0).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cudaenv.errors import SpecError
from cudaenv.grading.verdict import Timing, Verdict
from cudaenv.problems.model import Problem

DType = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "int8", "uint8", "int32", "int64"]
FLOAT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16")
PEAKS_ENV = "CUDAENV_DEVICE_PEAKS"
#: a sample below this fraction of the physics floor is impossible. The floor itself is
#: already a strict bound; the margin absorbs a table entry a little below a device's real
#: peak (a faster bin of the same name, a rounded datasheet figure).
FLOOR_MARGIN = 0.8
MIB = 1 << 20


class Work(BaseModel):
    """What a benchmark's timed region must do: counted once, at its compulsory minimum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flops: int = Field(ge=0, description="floating-point operations (an FMA is 2)")
    bytes: int = Field(ge=0, description="compulsory device-memory (DRAM) traffic, every call cold")
    dtype: DType = Field(description="the dominant data type; it picks the peak for flops")
    host_bytes: int = Field(default=0, ge=0, description="host-link bytes, busier direction")
    reuse_bytes: int = Field(
        default=0,
        ge=0,
        description="part of bytes that later calls re-read and an L2 might still hold",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Work:
        if self.reuse_bytes > self.bytes:
            raise ValueError("reuse_bytes cannot exceed bytes")
        if self.flops and self.dtype not in FLOAT_DTYPES:
            raise ValueError(f"flops count floating-point work; dtype {self.dtype} has none")
        return self


class DevicePeaks(BaseModel):
    """One device's datasheet peaks: dense (no 2:4 sparsity) throughput at boost clock."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    match: tuple[str, ...] = Field(description="regexes that must all match the NVML name")
    fp64_tflops: float = Field(gt=0)
    fp32_tflops: float = Field(gt=0)
    tf32_tflops: float = Field(gt=0)
    fp16_tflops: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0)
    mem_gbs: float = Field(gt=0, description="memory bandwidth, GB/s (10^9 bytes)")
    l2_mib: float = Field(gt=0)
    host_gbs: float = Field(gt=0, description="host link, GB/s per direction")

    def tflops(self, dtype: str) -> float:
        """The peak for ``dtype``; integer types have no float peak (their work is bytes)."""
        return float(getattr(self, f"{dtype}_tflops", 0.0))

    @property
    def fastest_tflops(self) -> float:
        return max(self.tflops(d) for d in FLOAT_DTYPES)

    @property
    def l2_bytes(self) -> int:
        return int(self.l2_mib * MIB)

    def matches(self, device_name: str) -> bool:
        norm = normalise_name(device_name)
        return bool(self.match) and all(re.search(p, norm, re.IGNORECASE) for p in self.match)


def _d(
    name: str, match: Iterable[str], fp: tuple[float, ...], mem: float, l2: float, host: float
) -> DevicePeaks:
    fp64, fp32, tf32, fp16, bf16 = fp
    return DevicePeaks(
        name=name,
        match=tuple(match),
        fp64_tflops=fp64,
        fp32_tflops=fp32,
        tf32_tflops=tf32,
        fp16_tflops=fp16,
        bf16_tflops=bf16,
        mem_gbs=mem,
        l2_mib=l2,
        host_gbs=host,
    )


# NVIDIA datasheet figures (FP64 is the tensor-core rate where it is the higher one; FP16 and
# BF16 the dense tensor-core rate; host: PCIe 4.0/5.0 x16 or NVLink-C2C, per direction).
# First match wins, so the more specific names come first (GH200 before H200, PCIe before
# SXM). Where a name covers several memory configurations the faster one is listed: a
# slightly optimistic peak only makes the floor safer.
_H100 = (67.0, 67.0, 494.7, 989.4, 989.4)
BUILTIN_DEVICES: tuple[DevicePeaks, ...] = (
    _d("GB200", [r"\bGB200\b"], (45.0, 90.0, 1250.0, 2500.0, 2500.0), 8000.0, 126.0, 450.0),
    _d("B200", [r"\bB200\b"], (40.0, 80.0, 1125.0, 2250.0, 2250.0), 8000.0, 126.0, 64.0),
    _d("GH200 480GB", [r"\bGH200\b", r"\b480GB\b"], _H100, 4000.0, 50.0, 450.0),
    _d("GH200", [r"\bGH200\b"], _H100, 4900.0, 50.0, 450.0),
    _d("H200 NVL", [r"\bH200\b", r"\bNVL\b"], (60.0, 60.0, 417.5, 835.5, 835.5), 4800.0, 50.0, 64.0),
    _d("H200 SXM", [r"\bH200\b"], _H100, 4800.0, 50.0, 64.0),
    _d("H100 NVL", [r"\bH100\b", r"\bNVL\b"], (60.0, 60.0, 417.5, 835.5, 835.5), 3900.0, 50.0, 64.0),
    _d("H100 PCIe", [r"\bH100\b", r"\bPCIE\b"], (51.0, 51.0, 378.0, 756.0, 756.0), 2000.0, 50.0, 64.0),
    _d("H100 SXM", [r"\bH100\b"], _H100, 3350.0, 50.0, 64.0),
    _d("A100 PCIe 80GB", [r"\bA100\b", r"\b80GB\b", r"\bPCIE\b"], (19.5, 19.5, 156.0, 312.0, 312.0), 1935.0, 40.0, 32.0),
    _d("A100 SXM 80GB", [r"\bA100\b", r"\b80GB\b"], (19.5, 19.5, 156.0, 312.0, 312.0), 2039.0, 40.0, 32.0),
    _d("A100 40GB", [r"\bA100\b"], (19.5, 19.5, 156.0, 312.0, 312.0), 1555.0, 40.0, 32.0),
    _d("L40S", [r"\bL40S\b"], (1.43, 91.6, 183.0, 362.0, 362.0), 864.0, 96.0, 32.0),
    _d("RTX 4090", [r"\bRTX 4090\b"], (1.29, 82.6, 82.6, 330.3, 330.3), 1008.0, 72.0, 32.0),
)  # fmt: skip


def normalise_name(name: str) -> str:
    """``NVIDIA A100-SXM4-80GB`` -> ``NVIDIA A100 SXM4 80GB``: separators become spaces."""
    return " ".join(re.sub(r"[-_/,()]+", " ", name).upper().split())


def load_peaks(path: str | Path) -> list[DevicePeaks]:
    """Devices from a YAML/JSON file: ``{devices: [...]}`` or a bare list. An entry whose
    ``name`` is a built-in device's may give only the fields it changes; a new device needs
    every field, ``match`` included."""
    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"cannot read device peaks: {exc}", source=where) from None
    entries = raw.get("devices") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise SpecError("expected a list of devices (or {devices: [...]})", source=where)
    builtin = {d.name: d for d in BUILTIN_DEVICES}
    out: list[DevicePeaks] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry:
            raise SpecError("every device needs a name", source=where, field=f"devices[{i}]")
        base: dict[str, Any] = {}
        if entry["name"] in builtin:
            base = builtin[entry["name"]].model_dump()
        try:
            out.append(DevicePeaks.model_validate(base | entry))
        except ValidationError as exc:
            raise SpecError(str(exc), source=where, field=f"devices[{i}]") from None
    return out


def device_table(peaks_file: str | Path | None = None) -> list[DevicePeaks]:
    """The user's devices (``peaks_file``, else ``$CUDAENV_DEVICE_PEAKS``) before the built-in
    ones, so a user's entry wins."""
    path = peaks_file or os.environ.get(PEAKS_ENV)
    return [*(load_peaks(path) if path else []), *BUILTIN_DEVICES]


def match_device(name: str | None, peaks_file: str | Path | None = None) -> DevicePeaks | None:
    """The peaks for an NVML device name, or None for a device the table does not know."""
    if not name:
        return None
    return next((d for d in device_table(peaks_file) if d.matches(name)), None)


def work_of(problem: Problem) -> Work | None:
    """The problem's ``metadata.work``, or None when it declares none."""
    raw = getattr(problem.metadata, "work", None)
    if raw is None:
        return None
    try:
        return Work.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(str(exc), task_id=problem.task_id, field="metadata.work") from None


def sol_ms(work: Work, device: DevicePeaks) -> float:
    """The roofline time: the slowest of compute, device memory and host link, in ms."""
    compute = work.flops / (device.tflops(work.dtype) * 1e12) if work.flops else 0.0
    memory = work.bytes / (device.mem_gbs * 1e9)
    host = work.host_bytes / (device.host_gbs * 1e9)
    return 1e3 * max(compute, memory, host)


def floor_ms(work: Work, device: DevicePeaks) -> float:
    """A bound no correct run can beat (module docstring): fastest arithmetic, and the bytes
    an L2 could already hold or keep between calls left out."""
    compute = work.flops / (device.fastest_tflops * 1e12)
    cold = max(0, work.bytes - work.reuse_bytes - device.l2_bytes)
    return 1e3 * max(
        compute, cold / (device.mem_gbs * 1e9), work.host_bytes / (device.host_gbs * 1e9)
    )


def physics_floor(
    timing: Timing | None, floor: float | None, margin: float = FLOOR_MARGIN
) -> str | None:
    """Why ``timing`` is impossible (its fastest sample below ``margin`` x ``floor`` ms), or
    None. Noise only ever adds time, so one impossible sample is enough."""
    if timing is None or not floor or floor <= 0:
        return None
    fastest = min(timing.samples_ms) if timing.samples_ms else timing.median_ms
    if fastest is None or fastest >= margin * floor:
        return None
    return (
        f"measured {fastest:.4g} ms, below the physical floor of this device "
        f"({floor:.4g} ms; impossible under {margin:g} x floor)"
    )


def assess(
    verdict: Verdict,
    problem: Problem,
    device_name: str | None = None,
    *,
    peaks_file: str | Path | None = None,
) -> Verdict:
    """Set ``sol_ms``, ``sol_device`` and ``sol_fraction`` on a benchmarked verdict and apply
    the physics floor (in place, idempotent; returned for chaining). Nothing changes for a
    problem without ``metadata.work`` or a device the table does not know (e.g. a CPU)."""
    work = work_of(problem)
    device = match_device(device_name or verdict.gpu, peaks_file)
    if work is None or device is None:
        return verdict
    verdict.sol_ms = sol_ms(work, device)
    verdict.sol_device = device.name
    if verdict.solution_ms:
        verdict.sol_fraction = verdict.sol_ms / verdict.solution_ms
    why = physics_floor(verdict.solution_timing, floor_ms(work, device))
    if why:
        flag = f"impossible timing: {why}"
        if flag not in verdict.suspected_hack:  # assessed twice: flagged once
            verdict.suspected_hack.append(flag)
        verdict.passed = False
        verdict.failure = "agent"
        verdict.reason = flag
    return verdict


def reference_issues(
    problem: Problem,
    verdict: Verdict,
    device_name: str | None = None,
    *,
    peaks_file: str | Path | None = None,
) -> list[str]:
    """What a timed reference says about the problem's declared work: its SOL fraction above
    1 (the reference beats the bound: ``work`` overcounts) or a sample under the physics floor
    (the floor is wrong). Empty when the reference was not timed or the device is unknown."""
    work = work_of(problem)
    device = match_device(device_name or verdict.gpu, peaks_file)
    if work is None or device is None or not verdict.solution_ms:
        return []
    issues = []
    fraction = sol_ms(work, device) / verdict.solution_ms
    if fraction > 1.0:
        issues.append(f"reference at {fraction:.2f}x the speed of light on {device.name}")
    if why := physics_floor(verdict.solution_timing, floor_ms(work, device)):
        issues.append(f"reference under the physics floor: {why}")
    return issues


__all__ = [
    "BUILTIN_DEVICES",
    "FLOOR_MARGIN",
    "PEAKS_ENV",
    "DType",
    "DevicePeaks",
    "Work",
    "assess",
    "device_table",
    "floor_ms",
    "load_peaks",
    "match_device",
    "normalise_name",
    "physics_floor",
    "reference_issues",
    "sol_ms",
    "work_of",
]
