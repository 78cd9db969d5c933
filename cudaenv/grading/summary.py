"""Aggregates over graded results: unbiased pass@k by group, speedup statistics."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from cudaenv.grading.verdict import Verdict


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al.) for one problem."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class Graded(BaseModel):
    """One graded sample: which problem, which attempt, its verdict."""

    task_id: str
    group: str
    sample: int = 0
    verdict: Verdict


def _pass_table(rows: Sequence[Graded], ks: Sequence[int]) -> dict[str, float | None]:
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r.verdict.failure == "infrastructure":
            continue  # not the policy's fault: excluded, counted separately
        by_task[r.task_id].append(bool(r.verdict.passed))
    out: dict[str, float | None] = {}
    for k in ks:
        if not by_task or any(len(v) < k for v in by_task.values()):
            out[f"pass@{k}"] = None  # reported only where every problem has >= k samples
            continue
        out[f"pass@{k}"] = statistics.fmean(pass_at_k(len(v), sum(v), k) for v in by_task.values())
    return out


def speedup_stats(verdicts: Iterable[Verdict]) -> dict[str, float | int | None]:
    speeds = [v.speedup for v in verdicts if v.passed and v.speedup]
    if not speeds:
        return {"count": 0, "geomean": None, "median": None, "fast_1": None, "fast_1.2": None}
    return {
        "count": len(speeds),
        "geomean": math.exp(statistics.fmean(math.log(s) for s in speeds)),
        "median": statistics.median(speeds),
        "fast_1": sum(s > 1.0 for s in speeds) / len(speeds),
        "fast_1.2": sum(s > 1.2 for s in speeds) / len(speeds),
    }


def summarise(rows: Sequence[Graded], ks: Sequence[int] = (1,)) -> dict[str, Any]:
    """The summary.json payload: overall and per-group pass@k, speedups, failure counts."""
    groups: dict[str, list[Graded]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    return {
        "samples": len(rows),
        "problems": len({r.task_id for r in rows}),
        "passed": sum(bool(r.verdict.passed) for r in rows),
        "not_run": sum(r.verdict.passed is None and r.verdict.failure is None for r in rows),
        "infrastructure_failures": sum(r.verdict.failure == "infrastructure" for r in rows),
        "pass_at_k": _pass_table(rows, ks),
        "speedup": speedup_stats(r.verdict for r in rows),
        "groups": {
            g: {
                "samples": len(rs),
                "pass_at_k": _pass_table(rs, ks),
                "speedup": speedup_stats(r.verdict for r in rs),
            }
            for g, rs in sorted(groups.items())
        },
    }
