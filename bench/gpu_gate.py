"""The GPU gate (issue 20): every GPU-only path of the grader, in priority order, within a
time budget, with results written as each part finishes.

Stages (``--stages``, default all, in this order):

- ``gpu_tests``: the gpu-marked tests (``GPU_TESTS``, in order: the split harness's runner and
  trusted checker, the ComputeEval library groups, profiler, grader benchmark and sanitizer,
  NOP on a GPU, the speed exploits through real episodes, CUDA in the local sandbox, NVML
  readings);
- ``validate``: ``validate_problem`` on every bundled problem through ``grade`` (reference
  passes, NOP fails, reference not slower than baseline; the baseline-only pass writes the
  cache) plus, for every timed reference, SOL fraction <= 1 and no physics-floor trip;
- ``redteam``: ``cudaenv redteam``, every exploit's reward with the GPU stages live
  (``bench/gpu_gate_extra.py``);
- ``optimize``: five references graded in optimize mode with the profiler: speedup, SOL, and
  the grader's L2 flush before every timed sample (``Timing.l2_flush_bytes`` >= 2 x L2);
- ``sanitizer``: memcheck passes five references and fails two broken solutions (each reads
  past a buffer of its own, which no test notices);
- ``aa``: bench_timing_noise.py on eight problems (A/A: CV, false >= 1.05x rate);
- ``families``: the gpu-marked GPU gate of generated problems
  (``tests/families/test_gpu_gate.py``) on a sample of ``--families-sample`` (default 2) of
  its seeded 100, no problem started past the stage's cap; its rows land in
  ``DIR/gate/families-gpu-gate.jsonl`` as each problem finishes.
- ``questions``: ``scripts/questions_gpu.py``, the reasoning questions' check: a sample of C++
  exec-output kernels run and compared with the stored answers, the C++ race items under
  racecheck; rows in ``DIR/gate/questions.jsonl``, what agreed in
  ``DIR/questions_gpu_checked.json`` (copy it to ``cudaenv/questions/data/gpu_checked.json``
  to let those questions ship as verified).
- ``agreement``: ``bench/bench_computeeval_agreement.py`` on a staged ComputeEval corpus
  (``$GATE_CE_DIR``) or our own fixtures; ComputeEval's evaluator only where
  ``COMPUTE_EVAL_PYTHON`` is set (``bench/gpu_gate_extra.py``).

Every stage's rows are printed as tables at the end (``gpu_gate_extra.print_tables``);
``--dry-run`` prints the plan (stages and caps) and runs nothing.

    python bench/gpu_gate.py --out DIR [--budget-s 540] [--stages validate,aa]

Each stage gets ``min(its cap, what is left of the budget)``; a stage started late does less
(validate starts no problem, aa no problem, past its deadline) rather than overrun. Results:
``DIR/gate/<stage>.jsonl`` (a line per item, as it finishes) and ``DIR/gate.json`` (rewritten
after every stage). Exit 0 when every stage that ran is ok; 2 without a GPU (0 with --dry-run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_gate_extra

from cudaenv.grading import speed_of_light as sol
from cudaenv.grading.grader import grade
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.toolkit import has_gpu

ROOT = Path(__file__).resolve().parent.parent
# in priority order (the default --stages); the two calls of scripts/gpu-check.sh split them
CAPS_S = {
    "gpu_tests": 190, "validate": 210, "redteam": 90, "optimize": 45, "sanitizer": 70, "aa": 80,
    "families": 45, "questions": 40, "agreement": 30,
}  # fmt: skip
OPTIMIZE = ("fused-axpby", "reduce-sum", "cublas-sgemm-bias", "cub-device-scan", "py-vector-add")
SANITIZED = ("fused-axpby", "reduce-sum", "transpose", "scan-inclusive", "histogram-256")
# (task id, entry point, its parameters, the call's arguments): the reference, renamed, behind
# a wrapper that first reads one float past a 2-float buffer of its own (inside the
# allocation's padding: harmless on the device, an invalid read to memcheck)
BROKEN = (
    (
        "fused-axpby",
        "axpby",
        "int n, float alpha, const float* x, float beta, const float* y, float* z",
        "n, alpha, x, beta, y, z",
    ),
    ("reduce-sum", "reduce_sum", "const float* x, int n, float* out", "x, n, out"),
)
PROBE = """
__global__ void cudaenv_gate_probe(const float* p) {{ volatile float t = p[3]; (void)t; }}
void {name}({params}) {{
    static float* probe = nullptr;
    if (probe == nullptr) cudaMalloc(&probe, 2 * sizeof(float));
    cudaenv_gate_probe<<<1, 1>>>(probe);
    {name}_reference({args});
}}
"""


class Gate:
    def __init__(self, out: Path, budget_s: float) -> None:
        self.dir = out / "gate"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.summary_path = out / "gate.json"
        self.end = time.monotonic() + budget_s
        self.summary: dict[str, Any] = {}

    def left(self) -> float:
        return self.end - time.monotonic()

    def record(self, stage: str, item: dict[str, Any]) -> None:
        with (self.dir / f"{stage}.jsonl").open("a") as fh:
            fh.write(json.dumps(item, default=str) + "\n")

    def finish(self, stage: str, ok: bool, seconds: float, **detail: Any) -> None:
        self.summary[stage] = {"ok": ok, "seconds": round(seconds, 1), **detail}
        self.summary_path.write_text(json.dumps(self.summary, indent=1, default=str))
        print(f"== {stage}: {'ok' if ok else 'FAILED'} in {seconds:.0f} s {detail}", flush=True)


def bounded(
    fn: Callable[[Any], Any], items: list[Any], workers: int, deadline: float
) -> Iterator[tuple[Any, Any]]:
    """(item, result or exception) as each finishes; no item starts after ``deadline``."""
    todo = list(items)
    with ThreadPoolExecutor(workers) as pool:
        running: dict[Future[Any], Any] = {}
        while todo or running:
            while todo and len(running) < workers and time.monotonic() < deadline:
                item = todo.pop(0)
                running[pool.submit(fn, item)] = item
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                item = running.pop(fut)
                yield item, fut.exception() or fut.result()


# every gpu-marked test but the families' (its own stage), most important first: the split
# harness (runner + trusted checker) and the library groups, then the rest of the grader, the
# speed exploits, CUDA in the local sandbox; pytest runs the files in this order
GPU_TESTS = (
    "tests/grading/test_gpu_work.py", "tests/grading/test_computeeval_groups.py",
    "tests/grading/test_grader_gpu.py", "tests/grading/test_profiler.py",
    "tests/grading/test_profiler_flush.py", "tests/grading/test_gpu_clocks.py",
    "tests/redteam", "tests/sandbox/test_local_gpu.py", "tests/grading",
)  # fmt: skip


def stage_gpu_tests(gate: Gate, cap: float) -> None:
    started = time.monotonic()
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu", "-q",
        "-o", "addopts=--strict-markers -ra --import-mode=importlib", *GPU_TESTS,
    ]  # fmt: skip
    try:
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=cap)
        out, rc = res.stdout + res.stderr, res.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = f"{exc.stdout or ''}\n[timed out after {cap:.0f} s]", None
    (gate.dir / "gpu_tests.txt").write_text(out if isinstance(out, str) else out.decode())
    tail = [ln for ln in str(out).splitlines() if ln.strip()][-1:] or [""]
    gate.finish("gpu_tests", rc == 0, time.monotonic() - started, rc=rc, last=tail[0])


def _sol_row(problem: Problem, verdict: Any) -> dict[str, Any]:
    work = sol.work_of(problem)
    device = sol.match_device(verdict.gpu) if verdict is not None else None
    if work is None or device is None or not verdict.solution_ms:
        return {"sol_fraction": None}
    t_sol = sol.sol_ms(work, device)
    return {
        "solution_ms": verdict.solution_ms,
        "sol_ms": t_sol,
        "sol_fraction": t_sol / verdict.solution_ms,
        "floor_ms": sol.floor_ms(work, device),
        "sol_issues": sol.reference_issues(problem, verdict),
    }


def missing_sol(problem: Problem, row: dict[str, Any]) -> str | None:
    """The gate's rule: every benchmarked problem gets a speed-of-light fraction (its
    ``metadata.work`` on a device the table knows); a timed reference without one fails."""
    if not problem.has_benchmark or row.get("sol_fraction") is not None:
        return None
    if sol.work_of(problem) is None:
        return "benchmarked without metadata.work: no speed of light"
    return "no speed-of-light fraction (device not in the peaks table, or the reference untimed)"


def stage_validate(gate: Gate, cap: float, suite: list[Problem], workers: int, rounds: int):
    from cudaenv.grading.release_gate import validate_problem
    from cudaenv.sandbox.base import declare_workers

    started = time.monotonic()
    declare_workers(workers)
    order = sorted(suite, key=lambda p: (not p.has_benchmark, p.group, p.task_id))
    bad, done = [], 0
    for p, row in bounded(
        lambda p: validate_problem(p, rounds=rounds), order, workers, started + cap - 45
    ):
        done += 1
        if isinstance(row, BaseException):
            item = {"task_id": p.task_id, "ok": False, "problem": f"{type(row).__name__}: {row}"}
        else:
            ref = row.verdicts.get("reference")
            item = {"task_id": p.task_id, "ok": row.ok, "problem": row.problem}
            item |= {"speedup": row.speedup, **_sol_row(p, ref)}
            item["ok"] = item["ok"] and not item.get("sol_issues")
            if why := missing_sol(p, item):
                item["ok"], item["problem"] = False, "; ".join(filter(None, [item["problem"], why]))
        gate.record("validate", item)
        if not item["ok"]:
            bad.append(p.task_id)
    gate.finish(
        "validate", not bad and done == len(order), time.monotonic() - started,
        validated=done, of=len(order), failed=bad,
    )  # fmt: skip


def _l2_bytes() -> int | None:
    """The GPU's L2 size from the driver (ctypes on libcuda), None where it cannot be read."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        device, size = ctypes.c_int(), ctypes.c_int()
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), 0):
            return None
        if cuda.cuDeviceGetAttribute(ctypes.byref(size), 38, device):  # L2_CACHE_SIZE
            return None
        return size.value
    except OSError:
        return None


def stage_optimize(gate: Gate, cap: float, suite: dict[str, Problem]) -> None:
    started = time.monotonic()
    bad = []
    for task_id in OPTIMIZE:
        if time.monotonic() > started + cap:
            bad.append(f"{task_id} (not run: budget)")
            continue
        p = suite[task_id]
        v = sol.assess(grade(p, p.solution, mode="optimize", rounds=3), p)
        item = {
            "task_id": task_id,
            "passed": v.passed,
            "reason": v.reason,
            "timing": v.solution_timing and v.solution_timing.source,
            "speedup": v.speedup,
            "baseline_ms": v.baseline_ms,
            **_sol_row(p, v),
        }
        item["l2_flush_bytes"] = flush = v.solution_timing and v.solution_timing.l2_flush_bytes
        l2 = _l2_bytes()
        item["ok"] = bool(
            v.passed
            and v.speedup
            and v.speedup >= 0.9
            and not item.get("sol_issues")
            and flush
            and (l2 is None or flush >= 2 * l2)
        )
        gate.record("optimize", item)
        if not item["ok"]:
            bad.append(task_id)
    gate.finish("optimize", not bad, time.monotonic() - started, failed=bad)


def broken_solution(problem: Problem, name: str, params: str, args: str) -> Solution:
    """The reference with its entry point renamed, behind a wrapper that reads out of bounds."""
    assert problem.solution is not None
    files = []
    for f in problem.solution.files:
        text = f.content
        if f"void {name}(" in text:
            text = text.replace(f"void {name}(", f"void {name}_reference(", 1)
            text += PROBE.format(name=name, params=params, args=args)
        files.append(SourceFile(path=f.path, content=text))
    return Solution(task_id=problem.task_id, files=files)


def stage_sanitizer(gate: Gate, cap: float, suite: dict[str, Problem]) -> None:
    started = time.monotonic()
    cases = [(t, suite[t].solution, True) for t in SANITIZED]
    cases += [(t, broken_solution(suite[t], n, p, a), False) for t, n, p, a in BROKEN]
    bad = []
    for task_id, solution, should_pass in cases:
        label = f"{task_id} ({'reference' if should_pass else 'broken'})"
        if time.monotonic() > started + cap:
            bad.append(f"{label} not run: budget")
            continue
        v = grade(suite[task_id], solution, sanitizer=True, test_cache=False)
        stage = v.stages.get("sanitizer")
        status = stage.status if stage else None
        test = v.stages.get("test")
        ok = (
            v.passed is True and status == "ok"
            if should_pass  # a broken one passes its tests, then memcheck fails it
            else v.passed is False
            and status == "failed"
            and test is not None
            and test.status == "ok"
        )
        gate.record("sanitizer", {"case": label, "ok": ok, "sanitizer": status, "reason": v.reason})
        if not ok:
            bad.append(label)
    gate.finish("sanitizer", not bad, time.monotonic() - started, failed=bad)


def stage_aa(gate: Gate, cap: float) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_timing_noise

    started = time.monotonic()
    rows = gate.dir / "aa.jsonl"
    rc = bench_timing_noise.main(
        ["--limit", "8", "--gradings", "2", "--rounds", "3", "--budget-s", str(max(0, cap - 40)),
         "--jsonl", str(rows)]
    )  # fmt: skip
    done = len(rows.read_text().splitlines()) if rows.exists() else 0
    gate.finish("aa", rc == 0 and done == 8, time.monotonic() - started, problems=done, rc=rc)


def stage_families(gate: Gate, cap: float, sample: int) -> None:
    """The generated problems' GPU gate test on a small sample, stopped starting problems
    15 s before the cap (a problem can take that long to finish)."""
    started = time.monotonic()
    rows = gate.dir / "families-gpu-gate.jsonl"
    env = {
        **os.environ,
        "OUT": str(gate.dir),
        "CUDAENV_FAMILIES_GPU_SAMPLE": str(sample),
        "CUDAENV_FAMILIES_GPU_BUDGET_S": str(max(0.0, cap - 15)),
    }
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu", "-q", "-s",
        "-o", "addopts=--strict-markers -ra --import-mode=importlib",
        "tests/families/test_gpu_gate.py",
    ]  # fmt: skip
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=cap)
        out, rc = res.stdout + res.stderr, res.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = f"{exc.stdout or ''}\n[timed out after {cap:.0f} s]", None
    (gate.dir / "families.txt").write_text(out if isinstance(out, str) else out.decode())
    done = [json.loads(ln) for ln in rows.read_text().splitlines()] if rows.exists() else []
    failed = [r["task_id"] for r in done if not r["ok"] or r["mutants_passed"]]
    gate.finish(
        "families", rc == 0 and bool(done), time.monotonic() - started,
        rc=rc, problems=len(done), of=sample, failed=failed,
    )  # fmt: skip


def stage_questions(gate: Gate, cap: float) -> None:
    """The reasoning questions' GPU check (its own script), within the cap."""
    started = time.monotonic()
    cmd = [sys.executable, "scripts/questions_gpu.py", "--out", str(gate.dir.parent),
           "--budget-s", str(max(0.0, cap - 5))]  # fmt: skip
    try:
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=cap)
        out, rc = res.stdout + res.stderr, res.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = f"{exc.stdout or ''}\n[timed out after {cap:.0f} s]", None
    (gate.dir / "questions.txt").write_text(out if isinstance(out, str) else out.decode())
    rows_path = gate.dir / "questions.jsonl"
    rows = (
        [json.loads(ln) for ln in rows_path.read_text().splitlines()] if rows_path.exists() else []
    )
    gate.finish(
        "questions", rc == 0 and bool(rows), time.monotonic() - started, rc=rc, items=len(rows),
        agreed=sum(r["ok"] is True for r in rows),
        disagreed=[r["task_id"] for r in rows if r["ok"] is False],
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-gate-out")))
    ap.add_argument("--budget-s", type=float, default=540.0)
    ap.add_argument("--stages", default=",".join(CAPS_S))
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--validate-rounds", type=int, default=1)
    ap.add_argument("--families-sample", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true", help="print the plan; run nothing")
    args = ap.parse_args(argv)
    stages = [s for s in args.stages.replace(" ", ",").split(",") if s]
    unknown = set(stages) - set(CAPS_S)
    if unknown:
        raise SystemExit(f"unknown stages {sorted(unknown)}; choose from {list(CAPS_S)}")
    if args.dry_run or not has_gpu():
        why = "dry run" if args.dry_run else "skipped: no GPU (nvidia-smi found none)"
        print(f"GPU gate plan, budget {args.budget_s:g} s:")
        for stage in stages:
            print(f"  {stage:10} cap {CAPS_S[stage]:>4} s  {why}")
        if not args.dry_run:
            print("the GPU gate needs a GPU: nvidia-smi found none here.", file=sys.stderr)
        return 0 if args.dry_run else 2
    gate = Gate(args.out, args.budget_s)
    problems = list(load_suite("builtin"))
    by_id = {p.task_id: p for p in problems}
    for stage in stages:
        cap = min(CAPS_S[stage], gate.left())
        if cap < 20:
            gate.finish(stage, False, 0.0, not_run="budget spent")
            continue
        try:
            if stage == "gpu_tests":
                stage_gpu_tests(gate, cap)
            elif stage == "validate":
                stage_validate(gate, cap, problems, args.workers, args.validate_rounds)
            elif stage == "optimize":
                stage_optimize(gate, cap, by_id)
            elif stage == "sanitizer":
                stage_sanitizer(gate, cap, by_id)
            elif stage == "aa":
                stage_aa(gate, cap)
            elif stage == "questions":
                stage_questions(gate, cap)
            elif stage == "redteam":
                gpu_gate_extra.stage_redteam(gate, cap)
            elif stage == "agreement":
                gpu_gate_extra.stage_agreement(gate, cap)
            else:
                stage_families(gate, cap, args.families_sample)
        except Exception as exc:  # one stage's crash must not lose the others' results
            gate.finish(stage, False, 0.0, error=f"{type(exc).__name__}: {exc}")
    gpu_gate_extra.print_tables(args.out)
    return 0 if all(s["ok"] for s in gate.summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
