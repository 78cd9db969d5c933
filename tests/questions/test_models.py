"""The models behind the computed kinds: bank conflicts and sectors on hand-checked cases, the
occupancy calculator against CUDA's own ``cuda_occupancy.h`` (built for the host with g++) and
on ``nvcc --resource-usage`` output, the shipped resource table still matching the sources, and
the C++ launch closed forms against the host code run with a recording runtime stub."""

from __future__ import annotations

import hashlib
import itertools
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cudaenv.questions import adapter, hostrun, launches, memory, occupancy
from cudaenv.questions.kinds_launch import sizes_for
from cudaenv.questions.kinds_occupancy import SIZES, kernel_name
from cudaenv.toolkit import cuda_home

CUDA_INCLUDE = (cuda_home() or Path("cuda-not-found")) / "include"


def _warp(stride_words: int) -> list[int]:
    return [4 * stride_words * t for t in range(32)]


@pytest.mark.parametrize(
    ("stride", "ways"),
    [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16), (32, 32), (33, 1), (64, 32)],
)
def test_bank_conflicts_of_strided_words(stride: int, ways: int) -> None:
    assert memory.bank_ways(_warp(stride)) == ways


def test_bank_conflicts_of_tiles_and_broadcasts() -> None:
    column = [4 * (t * 32 + 5) for t in range(32)]  # tile[threadIdx.x][5] of a [32][32] tile
    padded = [4 * (t * 33 + 5) for t in range(32)]  # the same read of a [32][33] tile
    assert memory.bank_ways(column) == 32 and memory.bank_ways(padded) == 1
    assert memory.bank_ways([4 * (t // 2) for t in range(32)]) == 1  # pairs share a word
    assert memory.bank_ways([4 * 32 * (t % 4) for t in range(32)]) == 4  # 4 words, one bank
    assert memory.bank_ways([4 * t if t % 2 else None for t in range(32)]) == 1
    with pytest.raises(ValueError):
        memory.bank_ways([2, 6], access_bytes=4)


def test_sectors_of_a_warp() -> None:
    assert memory.sectors([4 * t for t in range(32)], 4) == 4  # 128 aligned bytes
    assert memory.sectors([4 * (t + 1) for t in range(32)], 4) == 5  # shifted by one float
    assert memory.sectors([8 * t for t in range(32)], 8) == 8  # doubles
    assert memory.sectors([8 * t for t in range(32)], 4) == 8  # every other float
    assert memory.sectors([4 * 1024 * t for t in range(32)], 4) == 32  # a column
    assert memory.sectors([2 * t for t in range(32)], 2) == 2  # halves
    assert memory.sectors([12 * t + 4 for t in range(32)], 4) == 12  # p[i].y of {x, y, z}
    assert memory.lanes(16, 1)[:2] == [(0, 2), (1, 2)]  # warp 1 of a 16-wide block


def test_occupancy_hand_checked() -> None:
    a100, h100, l4 = (occupancy.DEVICES[n] for n in ("A100", "H100", "L4"))
    # warps: 2048 threads / 256 = 8 blocks; registers: 32 regs fit 64 warps
    assert occupancy.blocks_per_sm(a100, registers=32, static_smem=0, block=256) == 8
    # 128 registers: 4096 per warp, 4 warps per sub-partition, 16 warps = 2 blocks of 256
    assert occupancy.blocks_per_sm(a100, registers=128, static_smem=0, block=256) == 2
    # shared memory: 48 KB + 1 KB reserved per block, 164 KB per SM: 3 blocks
    assert occupancy.blocks_per_sm(a100, registers=16, static_smem=48 * 1024, block=64) == 3
    assert occupancy.blocks_per_sm(h100, registers=16, static_smem=48 * 1024, block=64) == 4
    # the block limit: 24 on sm_89 even for tiny blocks
    assert occupancy.blocks_per_sm(l4, registers=16, static_smem=0, block=32) == 24
    assert occupancy.blocks_per_sm(a100, registers=16, static_smem=0, block=2048) == 0


def _occ_program(cases: list[tuple[str, int, int, int, int, int]]) -> str:
    rows = []
    for name, regs, smem, block, dyn, bars in cases:
        d = occupancy.DEVICES[name]
        major, minor = int(d.arch[3]), int(d.arch[4])
        rows.append(
            f"{{{major}, {minor}, {d.max_threads_per_sm}, {d.smem_per_sm}, {regs}, {smem}, {block}, {dyn}, {bars}}}"
        )
    return (
        """#include <cstdio>
#include "cuda_occupancy.h"
struct C { int major, minor, threads; size_t smem_sm; int regs; size_t smem; int block; size_t dyn; int bars; };
static const C cases[] = {"""
        + ",\n".join(rows)
        + """};
int main() {
    for (const C& c : cases) {
        cudaOccDeviceProp prop;
        prop.computeMajor = c.major; prop.computeMinor = c.minor;
        prop.maxThreadsPerBlock = 1024; prop.maxThreadsPerMultiprocessor = c.threads;
        prop.regsPerBlock = 65536; prop.regsPerMultiprocessor = 65536; prop.warpSize = 32;
        prop.sharedMemPerBlock = 49152; prop.sharedMemPerMultiprocessor = c.smem_sm;
        prop.numSms = 100; prop.sharedMemPerBlockOptin = c.smem_sm - 1024;
        prop.reservedSharedMemPerBlock = 1024;
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024; attr.numRegs = c.regs; attr.sharedSizeBytes = c.smem;
        attr.numBlockBarriers = c.bars;
        cudaOccDeviceState state;
        cudaOccResult result;
        cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, c.block, c.dyn);
        printf("%d\\n", err == CUDA_OCC_SUCCESS ? result.activeBlocksPerMultiprocessor : -1);
    }
    return 0;
}
"""
    )


@pytest.mark.skipif(not (CUDA_INCLUDE / "cuda_occupancy.h").exists() or not shutil.which("g++"),
                    reason="needs the CUDA toolkit's cuda_occupancy.h and g++")  # fmt: skip
def test_calculator_agrees_with_cuda_occupancy_h(tmp_path: Path) -> None:
    rng = random.Random(4)
    cases = [(dev, regs, smem, block, dyn, bars)
             for dev, regs, block, bars in itertools.product(occupancy.DEVICES, (16, 32, 40, 64, 96, 128, 255),
                                                             (32, 64, 96, 128, 256, 512, 1024), (0, 1))
             for smem, dyn in [(rng.choice((0, 1056, 8448, 16640, 40000)), rng.choice((0, 2048, 6144, 20000)))]]  # fmt: skip
    (tmp_path / "occ.cpp").write_text(_occ_program(cases))
    subprocess.run(["g++", "-std=c++14", "-I", str(CUDA_INCLUDE), "-o", "occ", "occ.cpp"], cwd=tmp_path, check=True,
                   capture_output=True, text=True)  # fmt: skip
    theirs = [
        int(v)
        for v in subprocess.run(
            ["./occ"], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.split()
    ]
    ours = [occupancy.blocks_per_sm(occupancy.DEVICES[d], registers=r, static_smem=s, block=b, dynamic_smem=y, barriers=k)
            for d, r, s, b, y, k in cases]  # fmt: skip
    assert len(cases) > 300 and ours == theirs


def test_resource_usage_is_read_from_ptxas_output() -> None:
    text = """ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_90'
ptxas info    : Function properties for _Z6kernelPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 38 registers, used 1 barriers, 4224 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function '_Z4copyPKfPf' for 'sm_90'
ptxas info    : Used 8 registers, 368 bytes cmem[0]"""
    assert occupancy.parse_resource_usage(text) == [
        occupancy.Usage("_Z6kernelPfi", "sm_90", 38, 4224, 1),
        occupancy.Usage("_Z4copyPKfPf", "sm_90", 8, 0, 0),
    ]


def test_the_resource_table_matches_the_sources_and_the_shared_memory_closed_forms() -> None:
    table = occupancy.load_table()
    assert table["kernels"] and table["nvcc"].startswith("V")
    checked = 0
    for entry in table["kernels"]:
        r = adapter.render(entry["family"], entry["params"])
        assert hashlib.sha256(r.reference.source.encode()).hexdigest() == entry["source_sha256"], (
            entry["params"]
        )
        modelled = {
            la.kernel: la.shared_bytes
            for s in SIZES
            for la in launches.plan(entry["family"], entry["params"], s).launches
        }
        for k in entry["kernels"]:
            want = modelled.get(kernel_name(k["pretty"]))
            if want is not None:  # ptxas's static shared memory is the closed form's
                assert k["static_smem"] == want, (entry["family"], k["pretty"], k["arch"])
                checked += 1
    assert checked >= 40


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU)")
def test_measuring_a_kernel_with_nvcc(tmp_path: Path) -> None:
    entry = next(e for e in occupancy.load_table()["kernels"] if e["family"] == "elementwise")
    r = adapter.render("elementwise", entry["params"])
    usage = occupancy.measure(r.reference.source, r.headers, ["sm_90"])
    stored = [k for k in entry["kernels"] if k["arch"] == "sm_90"]
    assert [(u.kernel, u.registers, u.static_smem) for u in usage] == [
        (k["name"], k["registers"], k["static_smem"]) for k in stored
    ]


@pytest.mark.skipif(
    not (shutil.which("nvcc") and shutil.which("gcc")), reason="needs nvcc and gcc (no GPU)"
)
def test_cpp_launch_closed_forms_are_what_the_host_code_launches() -> None:
    rng = random.Random(9)
    while True:  # a column reduction split over the rows: two kernels, the split computed
        r = adapter.render("reduce-axis", adapter.draw_params("reduce-axis", rng))
        sizes = sizes_for(r, rng) or {}
        plan = launches.plan("reduce-axis", r.params, sizes)
        if len(plan.launches) > 1 and plan.launches[0].grid[1] > 1:
            break
    got = hostrun.host_launches(r.reference.source, r.headers, r.interface, sizes)
    assert got == [(la.grid, la.block, 0) for la in plan.launches], (r.params, sizes)
