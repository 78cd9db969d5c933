"""The bundled cuda-runtime problems as split harnesses, without a GPU.

Their checks are about process state, which only the solution's process can observe: the
runners report it (the status returned, ``cudaGetLastError()`` after the call, the current
device, the wall time of the call, the launch log, whether a buffer is managed memory, what
the host buffer held the moment the call returned) and the checkers judge it. Each checker's
cases, answered here independently (NumPy written here, the old harnesses' expected statuses),
pass ``verify``; a mutant per kind of check fails it, naming case and output. device-query's
checker believes only its own trusted query of the device (``check/query.out``): here a
stand-in program prints a two-GPU machine. The runners build with each reference and baseline
(``slow``: real nvcc through the grader, which runs them too where a GPU is). Here:
error-handling, events-timing, device-query; test_split_runtime_data.py: graph-capture,
streams-pipeline, unified-memory; test_split_runtime_emulated.py runs runners on the CPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import cudaenv
from cudaenv.grading.release_gate import nop_solution
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from tests.grading.split_answers import (
    Checked,
    Inputs,
    Mutation,
    Outputs,
    changing,
    drop,
    fake_device_query,
    judged,
    retype,
    scalar,
    setting,
)

SUITE = load_suite("builtin")
SEED = 1_234_567_891
RUNTIME = sorted(p.task_id for p in SUITE if p.group == "cuda-runtime")
#: the runners that launch kernels of their own (a .cu); the others are host code (a .cpp)
KERNEL_RUNNERS = {"error-handling", "events-timing"}


def test_every_runtime_problem_is_split() -> None:
    assert RUNTIME == [
        "device-query",
        "error-handling",
        "events-timing",
        "graph-capture",
        "streams-pipeline",
        "unified-memory",
    ]
    for task_id in RUNTIME:
        p = SUITE[task_id]
        runner = "test/runner.cu" if task_id in KERNEL_RUNNERS else "test/runner.cpp"
        assert p.split and {f.path for f in p.test_files} == {runner, "test/cudaenv_runner.h"}
        assert not any("COMPLETION_TOKEN" in f.content for f in p.test_files), task_id


# --- error-handling ---------------------------------------------------------------------------

# the old harness's expected status of each of its cases (0 OK, 1 null pointer, 2 empty
# configuration, 3 block too large, 4 grid too large)
STATUS = {
    "1d-exact-fit": 0,
    "1d-ragged": 0,
    "grid-smaller-than-n": 0,
    "3d-grid-and-block": 0,
    "3d-large-n": 0,
    "max-block": 0,
    "max-block-z": 0,
    "more-threads-than-n": 0,
    "single-element": 0,
    "n-0": 0,
    "n-0-null-pointers": 0,
    "stale-error-before-valid-launch": 0,
    "null-x": 1,
    "null-y": 1,
    "null-beats-empty-grid": 1,
    "grid-x-0": 2,
    "grid-z-0": 2,
    "block-y-0": 2,
    "n-0-and-empty-grid": 2,
    "empty-beats-oversized-block": 2,
    "stale-error-before-empty-grid": 2,
    "block-x-too-large": 3,
    "block-product-too-large": 3,
    "block-z-too-large": 3,
    "block-beats-grid": 3,
    "grid-y-too-large": 4,
    "grid-z-too-large": 4,
    "stale-error-before-large-grid": 4,
    "valid-after-failures": 0,
}


def _status(c: Inputs) -> int:
    """The task's rules, written again: the limits of every device of compute capability 3.0
    and later."""
    n, grid, block = int(c["n"]), c["grid"].astype(np.int64), c["block"].astype(np.int64)
    if n > 0 and (c["null_x"] or c["null_y"]):
        return 1
    if grid.min() == 0 or block.min() == 0:
        return 2
    if (block > [1024, 1024, 64]).any() or block.prod() > 1024:
        return 3
    return 4 if (grid > [2**31 - 1, 65535, 65535]).any() else 0


def _launch(c: Inputs) -> Outputs:
    status = _status(c)
    y = c["y"].copy()
    n = int(c["n"])
    if status == 0:
        y[:n] = np.float32(c["a"]) * c["x"][:n] + y[:n]
    return {
        "status": scalar(status, np.int32),
        "pending": scalar(0, np.int32),
        "sync": scalar(0, np.int32),
        "stale_pending": scalar(int(c["stale"]), np.int32),
        "y": y,
    }


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    return Checked(SUITE["error-handling"], tmp_path_factory.mktemp("error-handling"), SEED)


def test_error_handling_expects_the_old_harness_statuses(launches: Checked) -> None:
    assert {name: _status(c) for name, c in launches.inputs.items()} == STATUS
    assert list(launches.inputs) == list(STATUS)  # in the old harness's order
    outputs = {name: _launch(c) for name, c in launches.inputs.items()}
    assert launches.verify(outputs) == {"passed": True, "cases": len(STATUS), "failures": []}


def test_error_handling_mistakes_fail(launches: Checked) -> None:
    def stray(y: np.ndarray) -> None:
        y[-1] += 1.0  # past n, or anywhere after an error

    judged(
        launches,
        _launch,
        [
            ("other-error", "max-block", setting("status", 5), "returned LAUNCH_OTHER_ERROR"),
            ("order", "null-beats-empty-grid", setting("status", 2), "expected LAUNCH_NULL"),
            ("ok-on-error", "grid-z-too-large", setting("status", 0), "returned LAUNCH_OK"),
            ("pending", "grid-x-0", setting("pending", 9), "left pending after the call"),
            ("stale-kept", "stale-error-before-empty-grid", setting("pending", 9), "pending"),
            ("sync", "1d-ragged", setting("sync", 700), "cudaDeviceSynchronize after the call"),
            ("no-stale", "stale-error-before-valid-launch", setting("stale_pending", 0), "stale"),
            ("wrong-y", "3d-grid-and-block", changing("y", lambda y: y.__setitem__(5, 2.0)),
             "y[:n]: 1 of 100003 elements wrong"),
            ("doubled", "single-element", changing("y", lambda y: y.__setitem__(0, y[0] * 2 + 1)),
             "y[:n]: 1 of 1 elements wrong"),
            ("past-n", "more-threads-than-n", changing("y", stray), "y past n (written)"),
            ("changed-on-error", "null-x", changing("y", stray), "changed by a call that returned"),
            ("missing", "n-0", drop("y"), "y.npy is missing"),
            ("wrong-dtype", "block-y-0", retype("status", np.int64), "status: dtype <i8"),
        ],
    )  # fmt: skip


# --- events-timing ----------------------------------------------------------------------------

KHZ = 1_410_000.0  # a device's peak SM clock


def _times(c: Inputs) -> Outputs:
    """A plausible run: each phase 2% slower than the peak clock allows, a 3 us gap."""
    ms = [float(c["ms_first"]), float(c["ms_second"])]
    cycles = np.array([int(m * KHZ) for m in ms], np.int64)
    first, second = 1.02 * cycles[0] / KHZ, 1.02 * cycles[1] / KHZ
    total = first + second + 0.003
    return {
        "clock_khz": scalar(KHZ, np.float64),
        "asked_cycles": cycles,
        "launches": scalar(2, np.int32),
        "launched_cycles": cycles.copy(),
        "same_stream": scalar(1, np.int32),
        "done": np.array([1, 1], np.int32),
        "times_ms": np.array([first, second, total], np.float32),
        "host_ms": scalar(total + 0.2, np.float64),
        "pending": scalar(0, np.int32),
    }


def _time(index: int, scale: float) -> Mutation:
    return changing("times_ms", lambda t: t.__setitem__(index, t[index] * scale))


def _phases(first: float, second: float) -> Mutation:
    """Phases scaled, total and the call's wall time following them (consistent)."""

    def mutate(out: Outputs, _: Inputs) -> None:
        t = out["times_ms"]
        t[0] *= first  # type: ignore[index]
        t[1] *= second  # type: ignore[index]
        t[2] = t[0] + t[1] + 0.003  # type: ignore[index]
        out["host_ms"] = scalar(float(t[2]) + 0.2, np.float64)  # type: ignore[index]

    return mutate


def test_events_timing_judges_the_calls_observations(tmp_path: Path) -> None:
    run = Checked(SUITE["events-timing"], tmp_path, SEED)
    assert list(run.inputs) == ["10-30", "40-8", "5-5", "2-24", "random"]
    other = Checked(SUITE["events-timing"], tmp_path / "other", SEED + 1).inputs["random"]
    assert float(other["ms_first"]) != float(run.inputs["random"]["ms_first"])  # drawn per run
    outputs = {name: _times(c) for name, c in run.inputs.items()}
    assert run.verify(outputs)["passed"]
    judged(
        run,
        _times,
        [
            ("three-launches", "10-30", setting("launches", 3), "called 3 times, not exactly twice"),
            ("swapped", "40-8", changing("launched_cycles", lambda c: c.__setitem__(slice(None), c[::-1].copy())),
             "wrong order or with wrong cycles"),
            ("two-streams", "5-5", setting("same_stream", 0), "the same stream"),
            ("early-return", "2-24", setting("done", [1, 0]), "returned before the busy kernels"),
            ("too-fast", "2-24", _phases(0.7, 1.0), "first_ms implausible"),
            ("too-slow", "5-5", _phases(25.0, 25.0), ("first_ms implausible", "second_ms implausible")),
            ("ratio", "40-8", _phases(1.0, 1.8), "does not match the work ratio"),
            ("total-short", "5-5", _time(2, 0.8), "total_ms inconsistent"),
            ("nan", "2-24", _time(2, np.nan), "non-finite time"),
            ("longer-than-call", "random", setting("host_ms", 1.0), "exceeds the host time"),
            ("pending", "10-30", setting("pending", 1), "left pending"),
            ("misconverted", "40-8", setting("asked_cycles", [1, 2]), "the runner asked for"),
        ],
    )  # fmt: skip


# --- device-query -----------------------------------------------------------------------------

# the stand-in for the trusted query on a two-GPU machine (check/query.cu's format)
DEVICES = [
    ("NVIDIA H100 80GB HBM3", [9, 0, 132, 32, 1024, 2048, 49152, 232448, 85020000256, 52428800]),
    ("NVIDIA A100-SXM4-40GB", [8, 0, 108, 32, 1024, 2048, 49152, 166912, 42298834944, 41943040]),
]


def _summary(device: int) -> tuple[np.ndarray, np.ndarray]:
    name, values = DEVICES[device]
    raw = np.full(256, 0x33, np.uint8)  # what follows the terminating NUL does not matter
    raw[: len(name) + 1] = np.frombuffer(name.encode() + b"\0", np.uint8)
    warps = values[2] * values[5] // values[3]
    return raw, np.array([*values, warps], np.int64)


def _queried(c: Inputs) -> Outputs:
    count = len(DEVICES)
    every = bool(c["every_device"])
    ordinals = (
        list(range(count)) if every else [int(c["ordinal"]) + (count if c["relative"] else 0)]
    )
    ok = [0 <= d < count and not c["null_out"] for d in ordinals]
    names, fields = [], []
    for d, valid in zip(ordinals, ok, strict=True):
        raw, values = (
            _summary(d)
            if valid
            else (np.full(256, 0x5A, np.uint8), np.full(11, 0x5A5A5A5A, np.int64))
        )
        names.append(raw)
        fields.append(values)
    k = len(ordinals)
    return {
        "count": scalar(count, np.int32),
        "ordinal": np.array(ordinals, np.int64),
        "rc": np.array([0 if v else -1 for v in ok], np.int32),
        "pending": np.zeros(k, np.int32),
        "current": np.full(k, count - 1, np.int32),
        "untouched": np.array([not v for v in ok], np.int32),
        "name": np.stack(names),
        "fields": np.stack(fields),
    }  # fmt: skip


def test_device_query_believes_only_its_own_query(tmp_path: Path) -> None:
    run = Checked(SUITE["device-query"], tmp_path, SEED)
    fake_device_query(run.box.root / "check" / "query.out", DEVICES)
    assert next(iter(run.inputs)) == "every-device" and "null-out" in run.inputs
    assert run.verify({n: _queried(c) for n, c in run.inputs.items()})["passed"]

    def row(name: str, k: int, index: int, value: object) -> Mutation:
        return changing(name, lambda a: a.__setitem__((k, index) if a.ndim == 2 else k, value))

    judged(
        run,
        _queried,
        [
            ("sm-count", "every-device", row("fields", 1, 2, 100), "device 1: sm_count = 100, expected 108"),
            ("warps", "device-0-again", row("fields", 0, 10, 1), "max_resident_warps = 1"),
            ("name", "every-device", row("name", 0, 0, ord("X")), "device 0: name mismatch"),
            ("no-nul", "device-0-again", setting("name", np.full((1, 256), 65, np.uint8)), "name mismatch"),
            ("ok-on-invalid", "count", setting("rc", 0), "returned 0, expected -1"),
            ("minus-one-on-valid", "device-0-again", setting("rc", -1), "returned -1, expected 0"),
            ("out-modified", "minus-one", setting("untouched", 0), "*out was modified on failure"),
            ("device-switched", "null-out", setting("current", 0), "current device changed from 1 to 0"),
            ("pending", "far-above", setting("pending", 101), "left pending"),
            ("other-ordinal", "count-plus-7", setting("ordinal", 8), "the ordinals the runner queried"),
            ("count-lies", "minus-1000", setting("count", 3), "the runner saw 3 devices, the checker 2"),
        ],
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_device_querys_trusted_query_builds_with_the_checkers_build_command(tmp_path: Path) -> None:
    p = SUITE["device-query"]
    assert p.checker is not None and p.checker.needs_gpu and p.checker.build_command
    for f in p.check_files:
        (tmp_path / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f.path).write_text(f.content)
    built = subprocess.run(
        p.checker.build_command.split(), cwd=tmp_path, capture_output=True, timeout=600
    )
    assert built.returncode == 0, built.stderr
    assert os.access(tmp_path / "check" / "query.out", os.X_OK)


# --- the runners build with the references and baselines --------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("task_id", RUNTIME)
def test_the_runner_builds_with_reference_and_baseline_and_the_nop_fails(
    task_id: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through the grader: built (and, where a GPU is, run and judged by the checker)."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    p: Problem = SUITE[task_id]
    assert p.solution is not None
    solutions = [(p.solution, True)]
    if p.baseline_solution is not None:
        solutions.append((p.baseline_solution, False))
    for solution, refs in solutions:
        v = cudaenv.grade(p, solution, check_references=refs, test_cache=False)
        assert v.compiled, v.reason
        assert v.passed is True or (v.passed is None and "no GPU" in v.stages["test"].reason), v
    nop = cudaenv.grade(p, nop_solution(p))
    assert nop.passed is False and not nop.compiled
