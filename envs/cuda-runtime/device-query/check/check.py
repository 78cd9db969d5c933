"""device-query's checker: decides on what the runner's calls of query_device returned and
left behind (trusted: it never sees solution code).

What it trusts: the device's properties as its own program reads them (check/query.cu, built
by the checker's build_command and run here, in the checker's sandbox, on the same GPU: the
checker needs the GPU). What it takes from the runner, which only the solution's process can
observe: each call's return value and summary, cudaGetLastError() after it, the current device
after it (the runner made the last device current first) and whether *out stayed untouched
(the runner filled it with 0x5A bytes). No value the runner reports about the device is
believed: its device count and every field are compared with the trusted query's.
"""

import os
import subprocess

import numpy as np
from cudaenv_check import Case, exact, main

QUERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "query.out")
NAME_BYTES = 256  # DeviceSummary::name
FIELDS = [
    "cc_major",
    "cc_minor",
    "sm_count",
    "warp_size",
    "max_threads_per_block",
    "max_threads_per_sm",
    "shared_mem_per_block",
    "shared_mem_per_block_optin",
    "total_global_mem",
    "l2_cache_bytes",
    "max_resident_warps",
]


def call(ordinal=0, relative=False, null_out=False, every_device=False):
    """A case's inputs: every device in turn, or one call on ordinal (+ the device count when
    relative), with out = nullptr when null_out."""
    return {
        "every_device": np.int32(every_device),
        "ordinal": np.int64(ordinal),
        "relative": np.int32(relative),
        "null_out": np.int32(null_out),
    }


def cases(stage, rng):
    """Every device, then invalid ordinals (fixed edges and two drawn per run), a null out,
    and device 0 again (it still works after the failures)."""
    return [
        Case("every-device", call(every_device=True)),
        Case("minus-one", call(-1)),
        Case("count", call(0, relative=True)),
        Case("count-plus-7", call(7, relative=True)),
        Case("minus-1000", call(-1000)),
        Case("far-above", call(int(rng.integers(8, 1000)), relative=True)),
        Case("far-below", call(int(rng.integers(-(2**31), -1000)))),
        Case("null-out", call(0, null_out=True)),
        Case("device-0-again", call(0)),
    ]


def devices():
    """[(name bytes, fields)] per device, as the trusted query reads them (run once)."""
    if not hasattr(devices, "found"):
        text = subprocess.run([QUERY], capture_output=True, text=True, check=True, timeout=120)
        lines = text.stdout.split("\n")
        count = int(lines[0].split()[1])
        found = []
        for line in lines[1 : count + 1]:
            index, name, *numbers = line.split()
            values = [int(v) for v in numbers]
            sm, per_sm, warp = values[2], values[5], values[3]
            found.append((bytes.fromhex(name[1:]), [*values, sm * per_sm // warp]))
        devices.found = found
    return devices.found


def expect_summary(name_row, fields_row, device, where):
    want_name, want_fields = devices()[device]
    found = []
    raw = name_row.tobytes()
    if b"\0" not in raw or raw.split(b"\0", 1)[0] != want_name:
        found.append(f"{where}: name mismatch (expected {want_name.decode(errors='replace')!r})")
    for field, got, want in zip(FIELDS, fields_row.tolist(), want_fields):
        if got != want:
            found.append(f"{where}: {field} = {got}, expected {want}")
    return found


def check(case, out):
    count = len(devices())
    if (seen := int(out.array("count", np.int32, ()))) != count:
        return [f"the runner saw {seen} devices, the checker {count}"]
    every = bool(case["every_device"])
    calls = count if every else 1
    rows = {k: out.array(k, np.int32, (calls,)) for k in ("rc", "pending", "current", "untouched")}
    ordinal = out.array("ordinal", np.int64, (calls,))
    names = out.array("name", np.uint8, (calls, NAME_BYTES))
    fields = out.array("fields", np.int64, (calls, len(FIELDS)))
    if every:
        want = np.arange(count)
    else:
        want = np.array([int(case["ordinal"]) + (count if case["relative"] else 0)])
    found = exact(ordinal, want, "the ordinals the runner queried")
    valid = [0 <= int(d) < count and not case["null_out"] for d in want]
    for k, d in enumerate(want.tolist()):
        where = f"device {d}" + (", out = nullptr" if case["null_out"] else "")
        if (pending := int(rows["pending"][k])) != 0:
            found.append(f"{where}: a CUDA error was left pending (cudaError_t {pending})")
        if (current := int(rows["current"][k])) != count - 1:
            found.append(f"{where}: the current device changed from {count - 1} to {current}")
        rc = int(rows["rc"][k])
        if not valid[k]:
            if rc != -1:
                found.append(f"{where}: returned {rc}, expected -1")
            if not rows["untouched"][k]:
                found.append(f"{where}: *out was modified on failure")
        elif rc != 0:
            found.append(f"{where}: returned {rc}, expected 0")
        else:
            found += expect_summary(names[k], fields[k], d, where)
    return found


if __name__ == "__main__":
    main(cases, check)
