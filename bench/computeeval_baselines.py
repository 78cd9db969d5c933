"""Grade ComputeEval's own baseline solutions with ``cudaenv grade`` and tell, per group, how
many grade right ("compiled; GPU stages not run" without a GPU) and why the others do not.

ComputeEval's data is for evaluation only: this script reads a local checkout of
NVIDIA/compute-eval and writes packs and reports under --out; nothing of it belongs in this
repository.

    # 1. solutions packs from the release's baseline_solution fields (a sample per group)
    python bench/computeeval_baselines.py pack CHECKOUT --release 2026-1 --per-group 10 --out DIR
    # 2. grade them (the command `pack` prints; GPU-less: GPU stages are skipped)
    nice -n 10 cudaenv grade DIR/baselines.tar.gz --source DIR/problems.tar.gz --workers 1 \
        --out DIR/graded-baselines
    nice -n 10 cudaenv grade DIR/empty.tar.gz --source DIR/problems.tar.gz --workers 1 \
        --out DIR/graded-empty
    # 3. the per-group table and every failure by stage and cause
    python bench/computeeval_baselines.py report DIR/graded-baselines [--empty DIR/graded-empty]
    # the toolchain alone: every baseline's build stage, without the static rules
    python bench/computeeval_baselines.py build CHECKOUT --groups mathlibs,cublas

Right, for a known-good baseline, means: not failed, no suspected hack, no infrastructure
fault; with a GPU, passed. "built" counts the builds that succeeded (the toolchain's part),
whatever a later stage said. An empty solution (every baseline file, emptied) must fail.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import shutil
import sys
import tarfile
from pathlib import Path

from cudaenv.problems.datapack import write_solution_datapack
from cudaenv.problems.model import Solution, SourceFile


def _release_pack(checkout: Path, release: str) -> Path:
    pack = checkout / "data" / "releases" / f"{release}-problems.tar.gz"
    if not pack.is_file():
        sys.exit(f"no {pack}: give the root of a NVIDIA/compute-eval checkout and a release")
    return pack


def _records(pack: Path) -> list[dict]:
    with tarfile.open(pack, "r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("problems.jsonl"))
        fh = tar.extractfile(member)
        assert fh is not None
        return [json.loads(line) for line in fh.read().decode().splitlines() if line.strip()]


def _sample(records: list[dict], groups: list[str], per_group: int, seed: int) -> list[dict]:
    by_group: dict[str, list[dict]] = collections.defaultdict(list)
    for rec in records:
        if not groups or rec["group"] in groups:
            by_group[rec["group"]].append(rec)
    rng = random.Random(seed)
    picked: list[dict] = []
    for group in sorted(by_group):
        rows = by_group[group]
        picked += rows if per_group <= 0 or per_group >= len(rows) else rng.sample(rows, per_group)
    return picked


def _solution(rec: dict, empty: bool) -> Solution:
    files = rec["baseline_solution"]["files"]
    return Solution(
        task_id=rec["task_id"],
        files=[SourceFile(path=f["path"], content="" if empty else f["content"]) for f in files],
    )


def pack(args: argparse.Namespace) -> None:
    source = _release_pack(args.checkout, args.release)
    chosen = _sample(_records(source), args.groups, args.per_group, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    problems = args.out / "problems.tar.gz"
    shutil.copyfile(source, problems)  # the release's own pack: its MD5s are checked on load
    write_solution_datapack([_solution(r, False) for r in chosen], args.out / "baselines.tar.gz")
    write_solution_datapack([_solution(r, True) for r in chosen], args.out / "empty.tar.gz")
    counts = collections.Counter(r["group"] for r in chosen)
    print(f"{len(chosen)} baselines ({dict(sorted(counts.items()))}) in {args.out}")
    for name in ("baselines", "empty"):
        print(
            f"nice -n 10 cudaenv grade {args.out}/{name}.tar.gz --source {problems} "
            f"--workers 1 --out {args.out}/graded-{name}"
        )


def build(args: argparse.Namespace) -> None:
    """Only the build stage of every chosen baseline (the toolchain's part, without the static
    rules): the grader's own build in a local sandbox, per group built / failed / missing."""
    from cudaenv.grading.build import grading_env, prepare
    from cudaenv.grading.stages import StageInfrastructureFault
    from cudaenv.grading.workspace import assemble
    from cudaenv.problems.validation import problem_from_dict
    from cudaenv.sandbox.local import LocalSandbox

    chosen = _sample(
        _records(_release_pack(args.checkout, args.release)), args.groups, args.per_group, args.seed
    )
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for rec in chosen:
        problem = problem_from_dict(rec, source=rec["task_id"])
        files = assemble(problem, problem.baseline_solution).all
        with LocalSandbox() as box:
            try:
                stage = prepare(
                    box, problem, files, grading_env(problem, False, box),
                    problem.timeout_seconds or 60, None, compiler_cache=False,
                )  # fmt: skip
                status = "built" if stage.status in ("ok", "skipped") else "failed"
                why = "" if status == "built" else _first_error(stage.output_tail or "")
            except StageInfrastructureFault as exc:
                status, why = "infrastructure", str(exc)
        table[rec["group"]][status] += 1
        print(f"{rec['group']:14} {rec['task_id']:16} {status:14} {why}", flush=True)
    print("\n| group | n | built | failed | infrastructure |\n| --- | --- | --- | --- | --- |")
    for group in sorted(table):
        t = table[group]
        print(
            f"| {group} | {sum(t.values())} | {t['built']} | {t['failed']} | {t['infrastructure']} |"
        )


def _latest(graded: Path) -> list[dict]:
    rows: dict[str, dict] = {}
    for line in (graded / "graded.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            rows[rec["key"]] = rec
    return list(rows.values())


def _first_error(tail: str) -> str:
    for line in tail.splitlines():
        if re.search(r"\berror\b|cannot find|undefined reference|No such file", line):
            return re.sub(r"^\S+:\d+:(\d+:)?\s*", "", line.strip())[:160]
    return (tail.strip().splitlines() or ["(no output)"])[-1][:160]


def cause(verdict: dict) -> tuple[str, str]:
    """(stage, cause) of a verdict that is not right; ("", "") when it is right."""
    if verdict.get("failure") == "infrastructure":
        return "infrastructure", (verdict.get("reason") or "")[:160]
    if verdict.get("suspected_hack") and verdict.get("passed") is not False:
        return "suspected", verdict["suspected_hack"][0][:160]
    if verdict.get("passed") is not False:
        return "", ""
    stages = verdict.get("stages") or {}
    failed = next(
        (name for name, s in stages.items() if s.get("status") not in ("ok", "skipped")), "?"
    )
    if failed == "build":
        return "build", _first_error(stages["build"].get("output_tail") or "")
    reason = verdict.get("reason") or ""
    # a rule's reason names a file and a symbol; keep the rule, drop the specifics
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\b[\w./-]+\.(cu|cpp|cc|h|hpp|cuh|py):", "FILE:", reason)
    return failed, reason[:160]


def report(args: argparse.Namespace) -> None:
    rows = _latest(args.graded)
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    causes: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for rec in rows:
        v = rec["verdict"]
        build = (v.get("stages") or {}).get("build") or {}
        table[rec["group"]]["built"] += build.get("status") in ("ok", "skipped")
        stage, why = cause(v)
        if not stage:
            table[rec["group"]]["passed" if v.get("passed") else "right (not run)"] += 1
        else:
            table[rec["group"]][stage] += 1
            causes[(rec["group"], stage, why)].append(rec["task_id"])
    cols = ["built", "right (not run)", "passed", "build", "static", "source_refs", "toolchain",
            "suspected", "infrastructure"]  # fmt: skip
    extra = sorted({c for t in table.values() for c in t} - set(cols))
    cols += extra
    print("| group | n | " + " | ".join(cols) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
    total: collections.Counter = collections.Counter()
    for group in sorted(table):
        t = table[group]
        total.update(t)
        n = sum(t.values()) - t["built"]
        print(f"| {group} | {n} | " + " | ".join(str(t.get(c, 0)) for c in cols) + " |")
    print(
        f"| all | {sum(total.values()) - total['built']} | "
        + " | ".join(str(total.get(c, 0)) for c in cols)
        + " |"
    )
    print("\nfailures by group, stage and cause:")
    for (group, stage, why), ids in sorted(causes.items(), key=lambda kv: (kv[0], -len(kv[1]))):
        print(f"  {group:14} {stage:14} {len(ids):4}  {why}  [{', '.join(ids[:6])}]")
    if args.empty:
        empty = _latest(args.empty)
        wrong = [r["task_id"] for r in empty if r["verdict"].get("passed") is not False]
        print(
            f"\nempty solutions: {len(empty) - len(wrong)} of {len(empty)} failed; not failed: {wrong}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write baseline and empty solution packs")
    p.add_argument("checkout", type=Path, help="a local NVIDIA/compute-eval checkout")
    p.add_argument("--release", default="2026-1")
    p.add_argument("--groups", type=lambda s: [g for g in s.split(",") if g], default=[])
    p.add_argument("--per-group", type=int, default=0, help="sample size per group (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(run=pack)
    b = sub.add_parser("build", help="build every chosen baseline (no static rules), per group")
    b.add_argument("checkout", type=Path, help="a local NVIDIA/compute-eval checkout")
    b.add_argument("--release", default="2026-1")
    b.add_argument("--groups", type=lambda s: [g for g in s.split(",") if g], default=[])
    b.add_argument("--per-group", type=int, default=0, help="sample size per group (0: all)")
    b.add_argument("--seed", type=int, default=0)
    b.set_defaults(run=build)
    r = sub.add_parser("report", help="per-group table of a `cudaenv grade` output directory")
    r.add_argument("graded", type=Path)
    r.add_argument("--empty", type=Path, help="the graded empty solutions, to check they fail")
    r.set_defaults(run=report)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
