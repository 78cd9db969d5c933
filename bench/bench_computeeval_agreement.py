"""cudaenv's verdicts beside ComputeEval's own evaluator on the same problems and solutions.

Why: problems imported from ComputeEval are graded by the ``computeeval`` policy, which
promises ComputeEval's verdicts plus only checks that fail none of its known-good solutions.
This measures the promise per sample: both graders run every solution of a solutions pack
(e.g. the baselines ``bench/computeeval_corpus.py`` writes), and the script reports where
they agree, where they do not (with the task ids), and the wall-time ratio.

    python bench/bench_computeeval_agreement.py PROBLEMS SOLUTIONS --ce-python PY
        [--workers 2] [--release 2026-1] [--cudaenv-graded DIR/graded.jsonl] [--out DIR]

``PROBLEMS``: a problems datapack; ``SOLUTIONS``: a solutions pack for (some of) its
problems. ``--ce-python``: the python of a venv with ``nvidia-compute-eval`` installed
(``python -m venv V && V/bin/pip install nvidia-compute-eval "tree-sitter-language-pack<1"``:
its numpy pin conflicts with ours, and tree-sitter-language-pack 1.x downloads grammars at
run time); ``COMPUTE_EVAL_PYTHON`` is the default. ``--cudaenv-graded``: reuse a ``cudaenv
grade`` run's results instead of grading again (its time then comes from the verdicts).

What "agree" means: both passed, or both failed. A sample one side could not run (ComputeEval
"skipped": no GPU of the problem's compute capability; cudaenv "not run": GPU stages skipped)
is counted apart, as is a cudaenv infrastructure fault. Without a GPU ComputeEval reports every
C++ sample failed (its test stops at the first CUDA call: "CUDA driver version is
insufficient") and skips the cuTile ones: the script still runs both and says so; the
comparison is for GPU machines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.grading.grader import grade
from cudaenv.problems.datapack import (
    read_problem_datapack,
    read_solution_datapack,
    write_problem_datapack,
    write_solution_datapack,
)
from cudaenv.problems.model import Problem, Solution
from cudaenv.toolkit import toolkit_env

CE_RUNNER = """
import sys
from compute_eval.main import main
sys.argv = ["compute_eval", *sys.argv[1:]]
main()
"""


def keyed(solutions: list[Solution]) -> list[tuple[str, Solution]]:
    """``task_id#n`` for the n-th solution of each task, as ``cudaenv grade`` keys them."""
    seen: Counter[str] = Counter()
    out = []
    for s in solutions:
        out.append((f"{s.task_id}#{seen[s.task_id]}", s))
        seen[s.task_id] += 1
    return out


def cudaenv_side(
    problems: dict[str, Problem], sols: list[tuple[str, Solution]], workers: int
) -> tuple[dict[str, str], float]:
    """Each sample's outcome (pass, fail, not run, infra) and the wall time of grading all."""

    def one(item: tuple[str, Solution]) -> tuple[str, str]:
        key, sol = item
        return key, outcome(grade(problems[sol.task_id], sol).model_dump(mode="json"))

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = dict(pool.map(one, sols))
    return results, time.perf_counter() - start


def outcome(verdict: dict) -> str:
    if verdict.get("failure") == "infrastructure":
        return "infra"
    if verdict.get("passed") is None:
        return "not run"
    return "pass" if verdict["passed"] else "fail"


def from_graded(path: Path) -> tuple[dict[str, str], float]:
    """Outcomes and summed grading seconds of an earlier ``cudaenv grade`` run."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    latest = {r["key"]: r for r in rows}
    seconds = sum(r["verdict"].get("seconds") or 0.0 for r in latest.values())
    return {k: outcome(r["verdict"]) for k, r in latest.items()}, seconds


def computeeval_side(
    ce_python: str,
    problems: list[Problem],
    sols: list[tuple[str, Solution]],
    release: str,
    workers: int,
    work: Path,
) -> tuple[dict[str, str], float, str]:
    """ComputeEval's local evaluator on the same problems and solutions: outcomes keyed like
    cudaenv's, its wall time, and the tail of its output."""
    wanted = {s.task_id for _, s in sols}
    write_problem_datapack(
        [p for p in problems if p.task_id in wanted],
        work / f"{release}-problems.tar.gz",
        release=release,
        include_references=False,
    )
    pack = work / "cudaenv-solutions.tar.gz"
    write_solution_datapack([s for _, s in sols], pack, release=release)
    argv = [
        ce_python, "-c", CE_RUNNER, "evaluate_functional_correctness", "--mode=local",
        f"--release={release}", f"--problems_datapack_dir={work}",
        f"--solutions_datapack={pack}", f"--n_workers={workers}",
    ]  # fmt: skip
    start = time.perf_counter()
    run = subprocess.run(
        argv, cwd=work, capture_output=True, text=True, env={**os.environ, **toolkit_env()}
    )
    wall = time.perf_counter() - start
    graded = work / "cudaenv-graded-solutions.jsonl"
    if run.returncode != 0 or not graded.exists():
        raise RuntimeError(f"ComputeEval failed ({run.returncode}):\n{run.stderr[-3000:]}")
    seen: Counter[str] = Counter()
    out = {}
    for line in graded.read_text().splitlines():
        g = json.loads(line)
        tid = g["solution"]["task_id"]
        key = f"{tid}#{seen[tid]}"  # upstream keeps a task's solutions in pack order
        seen[tid] += 1
        out[key] = "not run" if g["skipped"] else ("pass" if g["passed"] else "fail")
    return out, wall, (run.stdout + run.stderr)[-600:]


def report(
    groups: dict[str, str], ours: dict[str, str], theirs: dict[str, str]
) -> tuple[list[str], Counter[str]]:
    """Per group: both ran and agree / disagree, and what one side could not run."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    odd: list[str] = []
    for key, group in groups.items():
        a, b = ours.get(key, "missing"), theirs.get(key, "missing")
        if "infra" in (a, b):
            cell = "cudaenv infra"
        elif "not run" in (a, b) or "missing" in (a, b):
            cell = f"not run ({'both' if a == b else 'cudaenv' if a != 'pass' and a != 'fail' else 'ComputeEval'})"
        elif a == b:
            cell = f"agree ({a})"
        else:
            cell = f"DISAGREE (cudaenv {a}, ComputeEval {b})"
            odd.append(f"{key}: cudaenv {a}, ComputeEval {b}")
        table[group][cell] += 1
    lines = [
        f"{g:<14} " + ", ".join(f"{c}: {n}" for c, n in sorted(t.items()))
        for g, t in sorted(table.items())
    ]
    total: Counter[str] = Counter()
    for t in table.values():
        total.update(t)
    return [*lines, "", *odd], total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", type=Path)
    parser.add_argument("solutions", type=Path)
    parser.add_argument("--ce-python", default=os.environ.get("COMPUTE_EVAL_PYTHON"))
    parser.add_argument("--release", default="2026-1")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cudaenv-graded", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="keep ComputeEval's files here")
    args = parser.parse_args()
    problems = read_problem_datapack(args.problems)
    by_id = {p.task_id: p for p in problems}
    sols = keyed(read_solution_datapack(args.solutions))
    groups = {key: by_id[s.task_id].group for key, s in sols}

    if args.cudaenv_graded:
        ours, ours_s = from_graded(args.cudaenv_graded)
        how = "summed grading seconds of the given run"
    else:
        ours, ours_s = cudaenv_side(by_id, sols, args.workers)
        how = f"wall, {args.workers} workers"
    print(f"cudaenv: {len(ours)} samples, {ours_s:.1f} s ({how}): {dict(Counter(ours.values()))}")
    if not args.ce_python or not Path(args.ce_python).exists():
        print("ComputeEval not run: give --ce-python (a venv with nvidia-compute-eval)")
        return
    work = args.out or Path(tempfile.mkdtemp(prefix="ce-agreement-"))
    work.mkdir(parents=True, exist_ok=True)
    theirs, ce_s, tail = computeeval_side(
        args.ce_python, problems, sols, args.release, args.workers, work
    )
    print(
        f"ComputeEval: {len(theirs)} samples, {ce_s:.1f} s wall: {dict(Counter(theirs.values()))}"
    )
    no_gpu = [k for k, v in ours.items() if v == "not run"]
    if no_gpu and all(theirs.get(k) in ("fail", "not run") for k in no_gpu):
        print(
            f"no GPU here: cudaenv could not run {len(no_gpu)} sample(s) and ComputeEval "
            f"reports them failed ({sum(theirs.get(k) == 'fail' for k in no_gpu)}: its tests stop "
            "at the first CUDA call) or skipped; nothing can be compared on this machine, run "
            "this on a GPU machine"
        )
    lines, total = report(groups, ours, theirs)
    print("\nper group (agreement counts only samples both graders ran):")
    print("\n".join(lines))
    both = sum(n for c, n in total.items() if c.startswith(("agree", "DISAGREE")))
    agree = sum(n for c, n in total.items() if c.startswith("agree"))
    if both:
        print(f"agreement: {agree}/{both} samples both ran ({agree / both:.1%})")
    if ce_s > 0:
        print(
            f"time ratio cudaenv / ComputeEval: {ours_s / ce_s:.2f} ({ours_s:.1f} s / {ce_s:.1f} s)"
        )
    print(f"ComputeEval's files: {work}\nits last output: {tail.strip()[-300:]}")


if __name__ == "__main__":
    main()
