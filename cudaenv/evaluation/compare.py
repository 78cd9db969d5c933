"""``cudaenv compare RUN_A RUN_B``: the paired difference between two runs, B minus A.

Only the problems both runs ran to a decision count, so a difference is never an artefact of
one run having easier problems. pass@k differences come with a paired bootstrap interval
(:func:`cudaenv.evaluation.stats.paired_difference`); in optimize mode the speedups are
compared as the geometric mean over problems of B's median speedup over A's. The runs'
settings are listed where they differ (:func:`cudaenv.rollout.manifest.differences`).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel

from cudaenv.evaluation.report import ALL, outcomes_by_task
from cudaenv.evaluation.stats import Estimate, mean_interval, paired_difference
from cudaenv.grading.summary import Graded
from cudaenv.rollout.manifest import differences
from cudaenv.rollout.rundir import RunDir

__all__ = ["Comparison", "compare_runs", "comparison_markdown"]


class Comparison(BaseModel):
    """What ``compare`` found (JSON-safe; ``comparison.json``)."""

    a: str
    b: str
    shared_problems: int
    only_a: list[str]
    only_b: list[str]
    settings: list[str]
    pass_at_k: dict[str, dict[str, Estimate]]  # group -> "pass@k" -> B - A
    better_in_b: list[str]  # problems B solved more often than A
    better_in_a: list[str]
    speedup_ratio: Estimate | None = None  # geomean over problems of B's / A's median


def _speedups(rows: Sequence[Graded]) -> dict[str, float]:
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.verdict.passed and r.verdict.speedup:
            by_task[r.task_id].append(r.verdict.speedup)
    return {t: statistics.median(v) for t, v in by_task.items()}


def compare_runs(a: RunDir, b: RunDir, ks: Sequence[int]) -> Comparison:
    rows_a, rows_b = a.rows(), b.rows()
    out_a, out_b = outcomes_by_task(rows_a), outcomes_by_task(rows_b)
    shared = sorted(set(out_a) & set(out_b))
    group_of = {r.task_id: r.group for r in [*rows_a, *rows_b]}
    groups: dict[str, list[str]] = defaultdict(list)
    for t in shared:
        groups[group_of[t]].append(t)
    table: dict[str, dict[str, Estimate]] = {}
    for group, tasks in [*sorted(groups.items()), (ALL, shared)]:
        sub_a = {t: out_a[t] for t in tasks}
        sub_b = {t: out_b[t] for t in tasks}
        table[group] = {f"pass@{k}": paired_difference(sub_a, sub_b, k) for k in ks}
    rate_a = {t: sum(out_a[t]) / len(out_a[t]) for t in shared}
    rate_b = {t: sum(out_b[t]) / len(out_b[t]) for t in shared}
    ratio = None
    if "optimize" in (a.mode, b.mode):
        sp_a, sp_b = _speedups(rows_a), _speedups(rows_b)
        logs = [math.log(sp_b[t] / sp_a[t]) for t in sorted(set(sp_a) & set(sp_b))]
        est = mean_interval(logs)
        if est.value is not None:
            ratio = Estimate(
                value=math.exp(est.value),
                low=math.exp(est.low) if est.low is not None else None,
                high=math.exp(est.high) if est.high is not None else None,
                problems=est.problems,
            )
    settings = []
    if a.manifest is not None and b.manifest is not None:
        settings = differences(a.manifest, b.manifest)
    return Comparison(
        a=str(a.path),
        b=str(b.path),
        shared_problems=len(shared),
        only_a=sorted(set(out_a) - set(out_b)),
        only_b=sorted(set(out_b) - set(out_a)),
        settings=[s.replace(" stored, ", " in A, ").replace(" now", " in B") for s in settings],
        pass_at_k=table,
        better_in_b=[t for t in shared if rate_b[t] > rate_a[t]],
        better_in_a=[t for t in shared if rate_a[t] > rate_b[t]],
        speedup_ratio=ratio,
    )


def comparison_markdown(c: Comparison) -> str:
    """The comparison as Markdown."""
    ks = list(next(iter(c.pass_at_k.values()), {}))
    md = [
        "# Comparison: B minus A",
        "",
        f"- A: `{c.a}`",
        f"- B: `{c.b}`",
        f"- problems both ran to a decision: {c.shared_problems}"
        + (
            f" (only A: {len(c.only_a)}, only B: {len(c.only_b)}; left out)"
            if c.only_a or c.only_b
            else ""
        ),
        "",
    ]
    if c.settings:
        md += ["Settings that differ:", "", *(f"- {s}" for s in c.settings), ""]
    md += [
        "Paired difference of pass@k (B - A) over the shared problems, with a 95% paired "
        "bootstrap interval; an interval that excludes 0 is a difference the samples support.",
        "",
        "| group | " + " | ".join(ks) + " |",
        "|" + "---|" * (len(ks) + 1),
    ]
    for group, row in c.pass_at_k.items():
        md.append(f"| {group} | " + " | ".join(_signed(row[k]) for k in ks) + " |")
    md.append("")
    if c.speedup_ratio is not None:
        r = c.speedup_ratio
        md += [
            f"Speedup, B over A (geometric mean over the {r.problems} problems both passed "
            f"with a measured speedup): {r.text()}",
            "",
        ]
    md += [
        f"B solved more often: {', '.join(c.better_in_b) or '-'}",
        "",
        f"A solved more often: {', '.join(c.better_in_a) or '-'}",
        "",
    ]
    return "\n".join(md)


def _signed(e: Estimate) -> str:
    if e.value is None:
        return "-"
    if e.low is None or e.high is None:
        return f"{e.value:+.3f}"
    return f"{e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"
