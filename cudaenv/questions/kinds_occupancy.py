"""The ``occupancy`` kind: a C++ reference kernel, what ``nvcc --resource-usage`` reports for
it, a block size and a device; how many blocks can be resident on one SM.

Truth: :func:`cudaenv.questions.occupancy.blocks_per_sm` over the device's published limits,
with the registers, static shared memory and barriers ptxas reported (the shipped table,
``data/resources.json``, written by ``scripts/questions_resources.py``; an entry is used only
while the family renders the very source it measured).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from typing import Any

from cudaenv.questions import occupancy, text
from cudaenv.questions.adapter import render
from cudaenv.questions.launches import plan
from cudaenv.questions.model import Question

#: sizes at which every kernel of a family's reference is launched (its block size is read there)
_BIG = {"rows": 4096, "cols": 4096, "batch": 64, "n": 1 << 20, "M": 1024, "N": 1024, "K": 1024,
        "d0": 64, "d1": 64, "d2": 64, "d3": 64}  # fmt: skip
SIZES = [_BIG, {**_BIG, "cols": 512, "batch": 1}]  # short rows: rownorm's other kernel


@functools.cache
def _entries() -> tuple[dict[str, Any], ...]:
    return tuple(occupancy.load_table().get("kernels", []))


def eligible(family: str) -> bool:
    return any(e["family"] == family for e in _entries())


def _block_of(family: str, params: dict[str, Any], kernel: str) -> int | None:
    for sizes in SIZES:
        for launch in plan(family, params, sizes).launches:
            if launch.kernel == kernel:
                return int(launch.block[0] * launch.block[1] * launch.block[2])
    return None


def kernel_name(pretty: str) -> str:
    head = pretty.split("(")[0]
    return head.split(" ")[-1]


def make_occupancy(family: str, rng: random.Random) -> Question | None:
    entries = [e for e in _entries() if e["family"] == family]
    if not entries:
        return None
    entry = rng.choice(entries)
    r = render(family, entry["params"])
    source = r.reference.source
    if hashlib.sha256(source.encode()).hexdigest() != entry["source_sha256"]:
        return None  # the family renders another source now: the measurement is stale
    device = rng.choice(list(occupancy.DEVICES.values()))
    kernels = [k for k in entry["kernels"] if k["arch"] == device.arch]
    if not kernels:
        return None
    k = rng.choice(kernels)
    name = kernel_name(k["pretty"])
    host_block = _block_of(family, r.params, name)
    if host_block is None:
        return None
    block = rng.choice([b for b in (host_block, 128, 64, 32) if b <= host_block])
    dynamic = rng.choice((0, 0, 0, 2048, 6144, 12288, 20000, 40000))
    blocks = occupancy.blocks_per_sm(device, registers=k["registers"], static_smem=k["static_smem"],
                                     block=block, dynamic_smem=dynamic, barriers=k["barriers"])  # fmt: skip
    dyn = (
        f" and {dynamic} bytes of dynamic shared memory"
        if dynamic
        else " and no dynamic shared memory"
    )
    body = (
        f"Here is `{r.solution_path}`:\n\n{text.listing(source, r.language)}\n\n"
        f"`nvcc --resource-usage` compiling it for {device.arch} reports, for the kernel "
        f"`{k['pretty']}`: {k['registers']} registers per thread, {k['static_smem']} bytes of "
        f"static shared memory, {k['barriers']} barrier(s).\n\nThe device: {device.limits_text()}\n\n"
        f"How many blocks of this kernel can be resident on one SM at the same time when it is "
        f"launched with {block} threads per block{dyn}?"
    )
    return Question(
        task_id="",
        kind="occupancy",
        question=body,
        answer_format="integer",
        format_text="an integer (0 if a block cannot be launched at all).",
        expected=blocks,
        chance=round(1 / (device.max_blocks_per_sm + 1), 6),
        family=family,
        language="cuda_cpp",
        verified=True,
        verification=(f"ptxas resource usage (nvcc {occupancy.load_table().get('nvcc')}, no GPU) and the "
                      "occupancy calculator over published limits; the tests compare it with cuda_occupancy.h"),
        metadata={"source_task_id": r.task_id, "params": r.params, "device": device.name,
                  "kernel": k["name"], "block": block, "dynamic_smem": dynamic,
                  "usage": {x: k[x] for x in ("registers", "static_smem", "barriers")},
                  "entry": json.dumps(entry["params"], sort_keys=True)},
    )  # fmt: skip


__all__ = ["SIZES", "eligible", "kernel_name", "make_occupancy"]
