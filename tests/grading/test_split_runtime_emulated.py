"""cuda-runtime runners run for real on the CPU: built with g++ against the CPU emulator
(tests/families/cuemu) plus the runtime calls these problems make (``cuemu_runtime.h``: two
devices, streams, pinned and managed memory, pointer attributes), run on their checker's
inputs, judged by the checker, the way the grader runs a split harness. The reference and the
baseline pass; a solution that does nothing fails. This shows that runner and checker agree
(names, dtypes, shapes, what each observation means), which only a GPU could show otherwise.

Emulated: device-query (the checker's stand-in device query prints the emulator's two
devices), error-handling, streams-pipeline, unified-memory. Not emulated: events-timing (its
checks are about GPU time against the wall clock: an emulator would only time itself) and
graph-capture (stream capture records launches into a graph; cuemu runs each launch at once).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem, SourceFile
from tests.families.cuemu import emulate
from tests.grading.split_answers import Checked, fake_device_query

pytestmark = pytest.mark.skipif(bool(emulate.available()), reason=str(emulate.available()))

SUITE = load_suite("builtin")
SEED = 20_261_206
RUNTIME_H = Path(__file__).with_name("cuemu_runtime.h")
FLAGS = ["-std=c++17", "-O1", "-w", "-D__CUDACC__", "-x", "c++"]
# the emulator's devices (cuemu_runtime.h), as the trusted query would print them
EMULATED_DEVICES = [
    ("Emulated GPU Zero", [9, 0, 132, 32, 1024, 2048, 49152, 232448, 85899345920, 52428800]),
    ("Emulated GPU One", [8, 0, 108, 32, 1024, 2048, 49152, 166912, 42949672960, 41943040]),
]

# solutions that do nothing (they link, return, and leave every output as it was)
NOTHING = {
    "device-query": '#include "device_summary.h"\nint query_device(int, DeviceSummary*) { return 0; }\n',
    "error-handling": (
        '#include "checked_launch.h"\n'
        "LaunchStatus checked_axpy(float, const float*, float*, int, dim3, dim3) { return LAUNCH_OK; }\n"
    ),
    "streams-pipeline": '#include "stream_pipeline.h"\nvoid pipeline_process(const float*, float*, size_t) {}\n',
    "unified-memory": '#include "forest_depth.h"\nint* forest_depths(const int*, int) { return nullptr; }\n',
}  # fmt: skip
# the cases run here (all when not listed): the emulator runs a thread at a time
CASES = {
    "streams-pipeline": ["n0", "n1", "n1000", "n65537"],
    "unified-memory": [
        "empty",
        "single-root",
        "two-nodes",
        "star",
        "one-long-chain",
        "short-chains",
    ],
}


def _write(root: Path, files: list[SourceFile]) -> None:
    for f in files:
        path = root / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            emulate.rewrite_launches(f.content) if f.path.endswith(".cu") else f.content
        )


def _compile(work: Path, source: str) -> Path:
    obj = work / (source.replace("/", "_") + ".o")
    cmd = ["g++", *FLAGS, "-I", str(emulate.HERE / "include"), "-I", str(work / "include")]
    cmd += ["-DCUEMU_RUNTIME_DEVICES"]  # cuemu's one small device gives way to RUNTIME_H's two
    cmd += ["-include", str(emulate.HERE / "cuemu.h"), "-include", str(RUNTIME_H)]
    done = subprocess.run(
        [*cmd, "-c", "-o", str(obj), str(work / source)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return obj


def _runner(task_id: str, root: Path) -> Path:
    """The problem's runner compiled (its object, linked with each solution)."""
    p = SUITE[task_id]
    _write(root, [*p.context_files, *p.test_files])
    (runner,) = (f.path for f in p.test_files if f.path.startswith("test/runner."))
    return _compile(root, runner)


def _build(p: Problem, files: list[SourceFile], work: Path, runner: Path) -> Path:
    _write(work, [*p.context_files, *files])
    objects = [str(_compile(work, f.path)) for f in files if f.path.endswith(".cu")]
    out = work / "test.out"
    linked = subprocess.run(
        ["g++", "-o", str(out), str(runner), *objects], capture_output=True, text=True
    )
    assert linked.returncode == 0, linked.stderr[-3000:]
    return out


def _run(run: Checked, inputs: Path, binary: Path) -> dict:
    """The runner on ``inputs`` (a run's, or some of its cases) in its folder; the checker's
    decision on its outputs."""
    io = binary.parent / ".cudaenv-io"
    shutil.rmtree(io, ignore_errors=True)
    shutil.copytree(inputs, io / "in")
    env = {**os.environ, "CUDAENV_IO": ".cudaenv-io"}
    ran = subprocess.run(
        [str(binary)], cwd=binary.parent, env=env, capture_output=True, text=True, timeout=900
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    return run.box.verify("test", run.seed, inputs, io / "out")


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(NOTHING))
def test_reference_and_baseline_pass_and_doing_nothing_fails_emulated(
    task_id: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    p = SUITE[task_id]
    root = tmp_path_factory.mktemp(f"emulated-{task_id}")
    run = Checked(p, root / "checker", SEED)
    if task_id == "device-query":
        fake_device_query(run.box.root / "check" / "query.out", EMULATED_DEVICES)
    inputs = run.subset(CASES[task_id]) if task_id in CASES else run.folder
    cases = len(CASES.get(task_id, run.inputs))
    runner = _runner(task_id, root / "runner")
    assert p.solution is not None
    solutions = {"reference": p.solution.files}
    if p.baseline_solution is not None:
        solutions["baseline"] = p.baseline_solution.files
    for name, files in solutions.items():
        report = _run(run, inputs, _build(p, files, root / name, runner))
        assert report["passed"] and report["cases"] == cases, (name, report)
    nothing = [SourceFile(path=p.solution.files[0].path, content=NOTHING[task_id])]
    report = _run(run, inputs, _build(p, nothing, root / "nothing", runner))
    assert not report["passed"] and report["failures"], report
