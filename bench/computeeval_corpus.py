"""ComputeEval's known-good corpus as packs ``cudaenv grade`` reads: its baselines, and empty ones.

Why: a grader that fails correct code is as wrong as one that passes wrong code. ComputeEval's
problem datapacks carry a ``baseline_solution`` per problem, written by its authors; grading
every one of them (and an empty solution per problem, which must always fail) measures the
grader's false failures per group. ComputeEval's licence allows evaluation, not training or
redistribution: this script reads a local checkout and writes packs to a local directory only;
nothing of the corpus belongs in this repository.

    python bench/computeeval_corpus.py CHECKOUT [--release 2026-1] [--out DIR] [--per-group N]

``CHECKOUT`` is a local clone of NVIDIA/compute-eval (its ``data/releases/`` holds
``<release>-problems.tar.gz``). Writes into ``DIR`` (default ``computeeval-<release>``):

- ``<release>-problems.tar.gz``: the problems, as released (``--per-group N``: the first N of
  each group, rewritten with our writer);
- ``<release>-baselines-solutions.tar.gz``: each problem's ``baseline_solution``;
- ``<release>-empty-solutions.tar.gz``: the same file paths, every file empty.

Then, for example (``nice``: hundreds of compilations)::

    nice -n 10 cudaenv grade DIR/<release>-baselines-solutions.tar.gz \\
        --source DIR/<release>-problems.tar.gz --out DIR/graded-baselines --workers 2
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.problems.datapack import (
    read_problem_datapack,
    write_problem_datapack,
    write_solution_datapack,
)
from cudaenv.problems.model import Problem, Solution, SourceFile


def baselines(problems: list[Problem]) -> list[Solution]:
    """Each problem's baseline solution, as a solutions-pack record."""
    return [
        Solution(task_id=p.task_id, files=list(p.baseline_solution.files))
        for p in problems
        if p.baseline_solution is not None
    ]


def empties(problems: list[Problem]) -> list[Solution]:
    """A solution per problem with the baseline's paths and no content (must always fail)."""
    return [
        Solution(task_id=s.task_id, files=[SourceFile(path=f.path, content="") for f in s.files])
        for s in baselines(problems)
    ]


def first_per_group(problems: list[Problem], n: int) -> list[Problem]:
    seen: Counter[str] = Counter()
    out = []
    for p in problems:
        if seen[p.group] < n:
            seen[p.group] += 1
            out.append(p)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a local clone of NVIDIA/compute-eval")
    parser.add_argument("--release", default="2026-1")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--per-group", type=int, default=0, help="only the first N per group")
    args = parser.parse_args()
    pack = args.checkout / "data" / "releases" / f"{args.release}-problems.tar.gz"
    if not pack.is_file():
        sys.exit(f"no {pack.relative_to(args.checkout)} in {args.checkout}")
    out = args.out or Path(f"computeeval-{args.release}")
    out.mkdir(parents=True, exist_ok=True)
    problems = read_problem_datapack(pack)
    target = out / pack.name
    if args.per_group:
        problems = first_per_group(problems, args.per_group)
        write_problem_datapack(problems, target, release=args.release)
    else:
        shutil.copyfile(pack, target)
    base = out / f"{args.release}-baselines-solutions.tar.gz"
    empty = out / f"{args.release}-empty-solutions.tar.gz"
    write_solution_datapack(baselines(problems), base, release=args.release)
    write_solution_datapack(empties(problems), empty, release=args.release)
    groups = Counter(p.group for p in problems)
    print(f"{len(problems)} problems ({', '.join(f'{g} {n}' for g, n in sorted(groups.items()))})")
    print(f"problems:  {target}\nbaselines: {base}\nempty:     {empty}")


if __name__ == "__main__":
    main()
