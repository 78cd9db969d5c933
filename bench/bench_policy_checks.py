"""The grader's checks alone on a pack of known-good solutions: false failures per group and check.

Why: a full grading builds the solution with its hidden tests and links them; the checks only
need the solution's own sources (the static stage reads the text, the toolchain stage compiles
each solution source once, ``-c``, with the build's flags). On a corpus of hundreds of
known-good solutions (``bench/computeeval_corpus.py``'s baselines) this measures what the
checks of each problem's grading policy reject, at half a build's cost per sample.

    python bench/bench_policy_checks.py PROBLEMS SOLUTIONS [--workers 2] [--out results.jsonl]
        [--policy strict|computeeval|repository] [--groups a,b] [--include-dir DIR ...]

Every rejection of a known-good solution is a false failure of the check that made it. A
solution source that does not compile on its own here (a library's headers missing: cuDNN,
cuFFT... without their packages) is counted apart, never as a check's failure;
``--include-dir`` adds header directories (``CPATH``) for such libraries. Results are
appended to ``--out`` as they come (a rerun skips what is there).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.grading.device_code import fixed_precision
from cudaenv.grading.static_checks import analyse
from cudaenv.grading.static_cpp import check
from cudaenv.grading.symbol_allowlist import allowlist_for
from cudaenv.grading.workspace import assemble
from cudaenv.problems.datapack import read_problem_datapack, read_solution_datapack
from cudaenv.problems.model import Problem, Solution
from cudaenv.problems.policy import policy_named
from cudaenv.sandbox import make_sandbox


def check_one(problem: Problem, solution: Solution, include: list[str]) -> dict:
    """The static and toolchain checks of ``problem``'s policy on ``solution``."""
    started = time.perf_counter()
    files = assemble(problem, solution)
    policy = problem.grading_policy
    out: dict = {"task_id": problem.task_id, "group": problem.group, "policy": policy.name}
    report = analyse(
        files.solution,
        problem.source_references,
        forbidden=problem.forbidden_references,
        policy=policy,
        context=[f.path for f in problem.context_files],
    )
    out["static"] = report.violations
    out["missing_refs"] = report.missing_all + report.missing_any
    out["toolchain"], out["compile_error"] = [], False
    if problem.build_command and (policy.toolchain or problem.forbidden_references):
        own = {f.path for f in files.solution}
        allow = allowlist_for(
            problem.build_command,
            [f for f in files.all if f.path not in own],
            getattr(problem.metadata, "allowed_symbols", None) or [],
        )
        with make_sandbox("local") as box:
            for f in files.all:
                box.write_file(f.path, f.content)
            env = box.toolchain_env()
            if include:
                env["CPATH"] = ":".join([*include, env.get("CPATH", "")]).rstrip(":")
            try:
                result = check(
                    box, problem.build_command, files.solution, files.all, env,
                    problem.forbidden_references, timeout=600, allow=allow,
                    precision=fixed_precision(problem), checks=policy.checks,
                )  # fmt: skip
            except Exception as exc:  # the machinery's fault: reported, never a check's
                out["infrastructure"] = f"{type(exc).__name__}: {exc}"[:300]
                result = None
        if result is not None:
            violations = result[1]
            out["compile_error"] = any("does not compile on its own" in v for v in violations)
            out["toolchain"] = [v for v in violations if "does not compile on its own" not in v]
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def table(rows: list[dict]) -> list[str]:
    """Per group: samples, clean, rejected by the checks (by check message), not compiled."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["group"]].append(r)
    lines = [
        f"{'group':<14} {'samples':>7} {'clean':>6} {'rejected':>8} {'no compile':>10} {'infra':>5}"
    ]
    reasons: Counter[tuple[str, str]] = Counter()
    totals = Counter()
    for g, rs in sorted(by.items()):
        rejected = [r for r in rs if r["static"] or r["missing_refs"] or r["toolchain"]]
        nocomp = [r for r in rs if r["compile_error"] and r not in rejected]
        infra = [r for r in rs if r.get("infrastructure")]
        clean = len(rs) - len(rejected) - len(nocomp) - len(infra)
        lines.append(
            f"{g:<14} {len(rs):>7} {clean:>6} {len(rejected):>8} {len(nocomp):>10} {len(infra):>5}"
        )
        totals.update(
            samples=len(rs),
            clean=clean,
            rejected=len(rejected),
            nocomp=len(nocomp),
            infra=len(infra),
        )
        for r in rejected:
            for v in r["static"] + r["toolchain"]:
                reasons[(g, v.split(": ", 1)[-1][:90])] += 1
            if r["missing_refs"]:
                reasons[(g, f"missing references {r['missing_refs']}")] += 1
    lines.append(
        f"{'all':<14} {totals['samples']:>7} {totals['clean']:>6} {totals['rejected']:>8} "
        f"{totals['nocomp']:>10} {totals['infra']:>5}"
    )
    if reasons:
        lines.append("\nrejections (false failures of the checks) by group and message:")
        lines += [f"  {n:>4}  {g}: {why}" for (g, why), n in reasons.most_common()]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", type=Path)
    parser.add_argument("solutions", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("policy-checks.jsonl"))
    parser.add_argument("--policy", default=None, help="override every problem's policy")
    parser.add_argument("--groups", default="", help="comma-separated groups (default: all)")
    parser.add_argument("--include-dir", action="append", default=[], help="CPATH entries")
    args = parser.parse_args()
    problems = {p.task_id: p for p in read_problem_datapack(args.problems)}
    if args.policy:
        chosen = policy_named(args.policy)
        problems = {k: p.model_copy(update={"grading_policy": chosen}) for k, p in problems.items()}
    groups = set(filter(None, args.groups.split(",")))
    sols = [
        s
        for s in read_solution_datapack(args.solutions)
        if s.task_id in problems and (not groups or problems[s.task_id].group in groups)
    ]
    done = set()
    if args.out.exists():
        done = {json.loads(line)["task_id"] for line in args.out.read_text().splitlines() if line}
    todo = [s for s in sols if s.task_id not in done]
    print(f"{len(sols)} solutions, {len(todo)} to check, {args.workers} workers", flush=True)
    include = [str(Path(d).resolve()) for d in args.include_dir]
    with ThreadPoolExecutor(args.workers) as pool, args.out.open("a") as fh:
        futs = [pool.submit(check_one, problems[s.task_id], s, include) for s in todo]
        for n, fut in enumerate(as_completed(futs), 1):
            row = fut.result()
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            bad = row["static"] or row["missing_refs"] or row["toolchain"]
            state = "REJECTED" if bad else ("no compile" if row["compile_error"] else "clean")
            state = "INFRA" if row.get("infrastructure") and not bad else state
            print(f"[{n}/{len(todo)}] {row['task_id']} {state} {row['seconds']}s", flush=True)
    rows = [json.loads(line) for line in args.out.read_text().splitlines() if line]
    print("\n".join(table([r for r in rows if r["task_id"] in {s.task_id for s in sols}])))
    os.sys.stdout.flush()


if __name__ == "__main__":
    main()
