"""Resident blocks per SM: a kernel's resource usage from ``nvcc --resource-usage`` (no GPU
needed) and an occupancy calculator over the devices' published limits.

The calculator follows the rules CUDA's own calculator applies (``cuda_occupancy.h``) for the
devices listed here, at the default shared-memory carveout: warps per SM; blocks per SM;
registers allocated per warp in units of 256 from four sub-partitions of 16,384 each;
shared memory per block (static + dynamic + 1 KB reserved by the driver) in 128-byte units
against the SM's shared memory; barriers. The tests compare it with ``cuda_occupancy.h``
itself, compiled for the host with g++.

>>> blocks_per_sm(DEVICES["A100"], registers=32, static_smem=0, block=256)
8
>>> blocks_per_sm(DEVICES["A100"], registers=64, static_smem=0, block=256)
4
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESOURCES = Path(__file__).with_name("data") / "resources.json"


@dataclass(frozen=True)
class Device:
    """Published per-SM limits (CUDA C++ Programming Guide, compute capabilities table)."""

    name: str
    arch: str  # "sm_80"
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    register_unit: int = 256  # registers are allocated per warp in units of this
    sub_partitions: int = 4
    max_registers_per_thread: int = 255
    smem_per_sm: int = 0  # bytes usable by blocks at the largest carveout
    smem_per_block: int = 48 * 1024  # without opting in to more
    smem_reserved_per_block: int = 1024
    smem_unit: int = 128
    barriers_per_block_slot: int = 2  # block barriers available per resident block slot

    def limits_text(self) -> str:
        return (
            f"{self.name} ({self.arch}): at most {self.max_threads_per_sm} threads and "
            f"{self.max_blocks_per_sm} blocks per SM; {self.registers_per_sm} 32-bit registers "
            f"per SM in {self.sub_partitions} sub-partitions of {self.registers_per_sm // self.sub_partitions}, "
            f"allocated per warp in units of {self.register_unit}; {self.smem_per_sm} bytes of shared "
            f"memory per SM (the default carveout gives blocks all of it), each block's "
            f"shared memory (static + dynamic + {self.smem_reserved_per_block} bytes reserved by the "
            f"driver) allocated in units of {self.smem_unit} bytes."
        )


DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("A100", "sm_80", 2048, 32, smem_per_sm=167936),
        Device("A10", "sm_86", 1536, 16, smem_per_sm=102400, barriers_per_block_slot=1),
        Device("L4", "sm_89", 1536, 24, smem_per_sm=102400, barriers_per_block_slot=1),
        Device("H100", "sm_90", 2048, 32, smem_per_sm=233472),
    )
}
ARCHS = sorted({d.arch for d in DEVICES.values()})


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def blocks_per_sm(dev: Device, *, registers: int, static_smem: int, block: int,
                  dynamic_smem: int = 0, barriers: int = 1) -> int:  # fmt: skip
    """Blocks of ``block`` threads that fit on one SM of ``dev`` at once."""
    warps = -(-block // 32)
    if block > 1024 or registers > dev.max_registers_per_thread:
        return 0
    limits = [dev.max_blocks_per_sm, (dev.max_threads_per_sm // 32) // warps]
    per_warp = _up(registers * 32, dev.register_unit)
    if per_warp * _up(warps, dev.sub_partitions) > dev.registers_per_block:
        return 0
    if per_warp:
        per_sub = (dev.registers_per_sm // dev.sub_partitions) // per_warp
        limits.append(per_sub * dev.sub_partitions // warps)
    smem = _up(static_smem + dynamic_smem + dev.smem_reserved_per_block, dev.smem_unit)
    if smem > dev.smem_per_block + dev.smem_reserved_per_block:
        return 0
    limits.append(dev.smem_per_sm // smem)
    if barriers:
        limits.append(dev.max_blocks_per_sm * dev.barriers_per_block_slot // barriers)
    return min(limits)


@dataclass(frozen=True)
class Usage:
    """What ptxas reports for one kernel compiled for one architecture."""

    kernel: str  # mangled name
    arch: str
    registers: int
    static_smem: int
    barriers: int


_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+)'")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_resource_usage(text: str) -> list[Usage]:
    """The kernels of ``nvcc --resource-usage`` (ptxas -v) output."""
    out: list[Usage] = []
    current: tuple[str, str] | None = None
    for line in text.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = (entry.group(1), entry.group(2))
            continue
        used = _USED.search(line)
        if used and current:
            smem = re.search(r"(\d+) bytes smem", line)
            out.append(Usage(current[0], current[1], int(used.group(1)),
                             int(smem.group(1)) if smem else 0, int(used.group(2) or 0)))  # fmt: skip
            current = None
    return out


def measure(source: str, headers: dict[str, str], archs: list[str] = ARCHS,
            nvcc: str = "nvcc") -> list[Usage]:  # fmt: skip
    """Compile ``source`` (with its include files) for ``archs`` and read ptxas's report."""
    with tempfile.TemporaryDirectory(prefix="cudaenv-ru-") as tmp:
        root = Path(tmp)
        for path, content in headers.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(content)
        (root / "solution.cu").write_text(source)
        gencode = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
        proc = subprocess.run(
            [
                nvcc,
                "-I",
                "include",
                "-c",
                "solution.cu",
                "-o",
                "solution.o",
                "--resource-usage",
                *gencode,
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed: {proc.stderr[-2000:]}")
        return parse_resource_usage(proc.stdout + proc.stderr)


def nvcc_version(nvcc: str = "nvcc") -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"release [\d.]+, (V[\d.]+)", out)
    return found.group(1) if found else out.strip().splitlines()[-1]


def demangle(names: list[str]) -> dict[str, str]:
    proc = subprocess.run(
        ["c++filt"], input="\n".join(names), capture_output=True, text=True, timeout=60
    )
    return dict(zip(names, proc.stdout.splitlines(), strict=True))


def load_table(path: Path = RESOURCES) -> dict[str, Any]:
    """The shipped table of measured kernels (``scripts/questions_resources.py`` writes it)."""
    return json.loads(path.read_text()) if path.exists() else {"kernels": []}


__all__ = [
    "ARCHS",
    "DEVICES",
    "RESOURCES",
    "Device",
    "Usage",
    "blocks_per_sm",
    "demangle",
    "load_table",
    "measure",
    "nvcc_version",
    "parse_resource_usage",
]
