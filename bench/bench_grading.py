"""Grading cost: the suite's reference solutions graded cold, warm, and by ComputeEval, side by side.

Why: every episode ends in a grading, so its cost bounds rollout throughput. The build cache
should make a second grading of the same files at least 10x cheaper (target: warm >= 10x),
and a cold grading should cost no more than ComputeEval's own local evaluator doing the same
work with the same number of workers (target: cold / ComputeEval <= 1.0).

    python bench/bench_grading.py [--workers 2] [--ids a,b] [--limit 8] [--rounds 1] [--ce-python PATH]

Cold uses a fresh temporary CUDAENV_CACHE_DIR (an empty build cache); warm grades the same
solutions again with that cache. ComputeEval (``nvidia-compute-eval[eval]``, in its own
Python >= 3.12 venv, default /tmp/ce-venv) evaluates the same problems and reference
solutions through ``compute_eval evaluate_functional_correctness --mode=local``, from
datapacks this script writes. Without a GPU both systems can only build: cudaenv skips the
GPU stages, ComputeEval runs each test binary, which fails at once (every solution is reported
failed; only the wall time matters here). ComputeEval skips, without building, every problem
whose compute capability it cannot check, so the copy it gets has ``compute_capability``
cleared; its ``group`` field only takes its own group names, so problems of other groups
(``cuda-python``) are graded by cudaenv only and reported on their own row. ComputeEval's
process gets the toolkit variables cudaenv's builds get (the cuBLAS wheel), so both build the
same problems.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv import load_suite
from cudaenv.grading.grader import grade
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.datapack import write_problem_datapack, write_solution_datapack
from cudaenv.problems.model import Problem
from cudaenv.toolkit import toolkit_env

# Runs inside ComputeEval's venv: the CLI's own entry point, with the import time apart.
CE_RUNNER = """
import json, sys, time
t0 = time.perf_counter()
from compute_eval.evaluation.cli import main
t1 = time.perf_counter()
sys.argv = ["compute_eval", *sys.argv[1:]]
main()
t2 = time.perf_counter()
with open(OUT, "w") as fh:
    json.dump({"import_s": t1 - t0, "evaluate_s": t2 - t1}, fh)
"""


def default_ce_python() -> str:
    return str(Path("/tmp/ce-venv/bin/python"))


def grade_all(problems: Sequence[Problem], workers: int) -> tuple[float, list[Verdict]]:
    """Wall time of grading every reference solution with ``workers`` threads."""
    if not problems:
        return 0.0, []
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        verdicts = list(pool.map(lambda p: grade(p, p.solution), problems))
    return time.perf_counter() - start, verdicts


def ce_groups(ce_python: str) -> set[str]:
    """The group names ComputeEval's Problem model accepts (its ``ValidGroup`` Literal)."""
    code = (
        "from typing import get_args; from compute_eval.data.data_model import ValidGroup; "
        "print(','.join(get_args(ValidGroup)))"
    )
    out = subprocess.run([ce_python, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.strip().split(","))


def for_computeeval(p: Problem) -> Problem:
    """The copy ComputeEval gets: no compute capability to check (it would skip, not build)."""
    return p.model_copy(update={"compute_capability": None, "requires_datacenter_gpu": False})


def run_computeeval(
    ce_python: str, problems: Sequence[Problem], workers: int, work: Path
) -> dict[str, float | int]:
    """Run ComputeEval's local evaluator on ``problems``; wall time and what it did."""
    work.mkdir(parents=True, exist_ok=True)
    packs = work / "problems.tar.gz"
    sols = work / "reference-solutions.tar.gz"
    write_problem_datapack([for_computeeval(p) for p in problems], packs, include_references=False)
    write_solution_datapack([p.solution for p in problems if p.solution is not None], sols)
    timing = work / "timing.json"
    runner = CE_RUNNER.replace("OUT", repr(str(timing)))
    argv = [
        ce_python, "-c", runner, "evaluate_functional_correctness", "--mode=local",
        "--release=internal", f"--problems_source={packs}", f"--solutions_datapack={sols}",
        f"--n_workers={workers}",
    ]  # fmt: skip
    # the same toolkit variables cudaenv's builds get (the cuBLAS wheel's headers and link
    # directory), so ComputeEval builds the cuBLAS problems too: equal work on both sides
    env = {**os.environ, **toolkit_env()}
    start = time.perf_counter()
    run = subprocess.run(argv, cwd=work, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"ComputeEval failed ({run.returncode}):\n{run.stderr[-3000:]}")
    graded = [json.loads(line) for f in work.glob("*graded-solutions.jsonl") for line in f.open()]
    times = json.loads(timing.read_text())
    return {
        "wall_s": wall,
        "import_s": times["import_s"],
        "evaluate_s": times["evaluate_s"],
        "graded": len(graded),
        "skipped": sum(bool(g["skipped"]) for g in graded),
        "built": sum(g.get("test_output") is not None for g in graded),
    }


def describe(verdicts: Sequence[Verdict]) -> str:
    built = sum(bool(v.compiled) for v in verdicts)
    cached = sum(bool(v.stages.get("build") and v.stages["build"].cached) for v in verdicts)
    passed = sum(v.passed is True for v in verdicts)
    infra = sum(v.failure == "infrastructure" for v in verdicts)
    return f"built {built}, build cached {cached}, passed {passed}, infra faults {infra}"


def stage_seconds(verdicts: Sequence[Verdict]) -> dict[str, tuple[int, float, float]]:
    """Per stage: how many gradings ran it, its median and its total seconds (what each check
    costs: the static pass on the preprocessed unit, the object-symbol check, the build)."""
    per: dict[str, list[float]] = {}
    for v in verdicts:
        for name, stage in v.stages.items():
            if stage.status != "skipped":
                per.setdefault(name, []).append(stage.seconds)
    return {k: (len(x), statistics.median(x), sum(x)) for k, x in per.items()}


def busy_s(verdicts: Sequence[Verdict], keep: Sequence[bool]) -> float:
    """Sum of the gradings' own seconds (not wall time) over the kept verdicts."""
    return sum(v.seconds or 0.0 for v, k in zip(verdicts, keep, strict=True) if k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers", type=int, default=2, help="threads (and ComputeEval's n_workers)"
    )
    parser.add_argument("--ids", default="", help="comma-separated task ids (default: the suite)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N problems")
    parser.add_argument("--rounds", type=int, default=1, help="repeat everything; report medians")
    parser.add_argument(
        "--ce-python", default=default_ce_python(), help="ComputeEval venv's python"
    )
    parser.add_argument("--no-computeeval", action="store_true", help="skip the ComputeEval run")
    args = parser.parse_args()

    suite = load_suite("builtin")
    if args.ids:
        suite = suite.filter(include=args.ids.split(","))
    problems = [p for p in suite if p.solution is not None]
    if args.limit:
        problems = problems[: args.limit]
    use_ce = not args.no_computeeval and Path(args.ce_python).exists()
    accepted = ce_groups(args.ce_python) if use_ce else set()
    shared = [p for p in problems if p.group in accepted] if use_ce else list(problems)
    rest = [p for p in problems if p not in shared]

    times: dict[str, list[float]] = {}
    ces: list[dict[str, float | int]] = []
    last: dict[str, list[Verdict]] = {}  # the last round's verdicts
    tmp = Path(tempfile.mkdtemp(prefix="cudaenv-bench-grading-"))
    try:
        # untimed: nvcc and the toolkit headers into the page cache, for both systems alike
        (tmp / "warm.cu").write_text("__global__ void k() {}\nint main() { k<<<1, 1>>>(); }\n")
        subprocess.run(["nvcc", "-o", str(tmp / "warm"), str(tmp / "warm.cu")], capture_output=True)
        for r in range(max(1, args.rounds)):
            os.environ["CUDAENV_CACHE_DIR"] = str(tmp / f"cache-{r}")  # an empty build cache
            for name, subset in (("cold_a", shared), ("cold_b", rest)):
                secs, verdicts = grade_all(subset, args.workers)
                times.setdefault(name, []).append(secs)
                last[name] = verdicts
            for name, subset in (("warm_a", shared), ("warm_b", rest)):
                secs, verdicts = grade_all(subset, args.workers)
                times.setdefault(name, []).append(secs)
                last[name] = verdicts
            if use_ce:
                ces.append(run_computeeval(args.ce_python, shared, args.workers, tmp / f"ce-{r}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    va, wa, vb, wb = last["cold_a"], last["warm_a"], last["cold_b"], last["warm_b"]
    label_a = "ComputeEval's groups" if use_ce else "all problems"
    print(
        f"{len(problems)} problems, {args.workers} workers, {max(1, args.rounds)} round(s), medians"
    )
    print(f"cudaenv cold, {label_a}: {describe(va)}")
    print(f"cudaenv warm, {label_a}: {describe(wa)}")
    if rest:
        print(f"cudaenv cold, other groups: {describe(vb)}")
        print(f"cudaenv warm, other groups: {describe(wb)}")

    def speed(cold_s: float, warm_s: float) -> str:
        if not warm_s:
            return "-"
        x = cold_s / warm_s
        return f"{x:.1f}x {'PASS' if x >= 10 else 'MISS'}"

    rows = [(f"cudaenv, {label_a}", len(shared), med["cold_a"], med["warm_a"])]
    if rest:
        groups = ",".join(sorted({p.group for p in rest}))
        rows.append((f"cudaenv, other groups ({groups})", len(rest), med["cold_b"], med["warm_b"]))
    rows.append(
        (
            "cudaenv, whole selection",
            len(problems),
            med["cold_a"] + med["cold_b"],
            med["warm_a"] + med["warm_b"],
        )
    )
    cached = [bool(v.stages.get("build") and v.stages["build"].cached) for v in wa + wb]
    n_cached = sum(cached)
    if 0 < n_cached < len(cached):  # where the misses come from: builds not cached, or tests
        uncached = [not c for c in cached]
        rows.append(
            (
                "  of which build cached: sum of grading s",
                n_cached,
                busy_s(va + vb, cached),
                busy_s(wa + wb, cached),
            )
        )
        rows.append(
            (
                "  of which not cached (failed builds): sum s",
                len(cached) - n_cached,
                busy_s(va + vb, uncached),
                busy_s(wa + wb, uncached),
            )
        )
    width = max(len(r[0]) for r in rows)
    print(
        f"\n{'grading (target: warm >= 10x)':<{width}}  {'n':>3}  {'cold s':>8}  {'warm s':>8}  speedup"
    )
    for name, n, cold_s, warm_s in rows:
        print(f"{name:<{width}}  {n:>3}  {cold_s:>8.2f}  {warm_s:>8.2f}  {speed(cold_s, warm_s)}")
    stages = stage_seconds(va + vb)
    if stages:
        print(f"\n{'stage (cold, last round)':<24}  {'n':>3}  {'median s':>8}  {'total s':>8}")
        for name, (n, median, total) in sorted(stages.items(), key=lambda kv: -kv[1][2]):
            print(f"{name:<24}  {n:>3}  {median:>8.3f}  {total:>8.2f}")
    if ces:
        ce = {k: statistics.median(float(c[k]) for c in ces) for k in ces[0]}
        print(
            f"\nComputeEval local evaluator, the same {len(shared)} problems and solutions, "
            f"{args.workers} workers: graded {ce['graded']:.0f}, skipped {ce['skipped']:.0f}, "
            f"built {ce['built']:.0f} (each test then fails: no GPU)"
        )
        rows2 = [
            ("ComputeEval CLI, whole process", ce["wall_s"]),
            ("ComputeEval, evaluate only (imports excluded)", ce["evaluate_s"]),
        ]
        w2 = max(len(r[0]) for r in rows2)
        print(
            f"{'cold vs ComputeEval (target: ratio <= 1)':<{w2}}  {'CE s':>8}  {'cudaenv s':>9}  ratio"
        )
        for name, secs in rows2:
            ratio = med["cold_a"] / secs
            verdict = "PASS" if ratio <= 1 else "MISS"
            print(f"{name:<{w2}}  {secs:>8.2f}  {med['cold_a']:>9.2f}  {ratio:.2f} {verdict}")
        if len(ces) > 1:
            print(
                f"per round, cudaenv cold: {[round(x, 1) for x in times['cold_a']]}; "
                f"ComputeEval CLI: {[round(float(c['wall_s']), 1) for c in ces]}"
            )
    elif not args.no_computeeval:
        print(f"\nComputeEval not run: no python at {args.ce_python} (see the module docstring)")


if __name__ == "__main__":
    main()
