"""Aggregates over graded results: unbiased pass@k by group, speedup and SOL statistics.

Every rate is computed over the samples that could run to a decision. A sample whose deciding
stage could not run here (``passed`` None with no failure, e.g. GPU stages skipped: no GPU) is
counted as ``not_run``, never as a failure; an infrastructure failure is counted apart. When no
sample could run, a rate is ``None`` (JSON ``null``), not 0: a machine without a GPU must not
read as a policy that solved nothing.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from cudaenv.grading.verdict import Verdict

FAST_P = (1.0, 1.2)  # thresholds of the fast_p rates


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


def not_run(v: Verdict) -> bool:
    """The deciding stage could not run here (no GPU): neither a pass nor a failure."""
    return v.passed is None and v.failure is None


def could_run(v: Verdict) -> bool:
    """The sample ran to a decision: it counts in the rates (pass or the agent's failure)."""
    return v.failure != "infrastructure" and not not_run(v)


def _pass_table(rows: Sequence[Graded], ks: Sequence[int]) -> dict[str, float | None]:
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if could_run(r.verdict):  # infrastructure and not-run samples are counted apart
            by_task[r.task_id].append(bool(r.verdict.passed))
    out: dict[str, float | None] = {}
    for k in ks:
        if not by_task or any(len(v) < k for v in by_task.values()):
            out[f"pass@{k}"] = None  # reported only where every problem has >= k samples
            continue
        out[f"pass@{k}"] = statistics.fmean(pass_at_k(len(v), sum(v), k) for v in by_task.values())
    return out


def speedup_stats(verdicts: Iterable[Verdict]) -> dict[str, float | int | None]:
    """Geomean and median over the measured speedups; ``fast_p`` (KernelBench's) is the share
    of the samples that could run which passed with a speedup above p, failures included.

    A passing sample without a measured speedup (its benchmark was skipped) is left out, as is
    every not-run and infrastructure sample; with no measured speedup every value is None.
    """
    runnable = [v for v in verdicts if could_run(v) and not (v.passed and v.speedup is None)]
    speeds = [v.speedup for v in runnable if v.passed and v.speedup]
    if not speeds:
        return {"count": 0, "over": 0, "geomean": None, "median": None} | {
            f"fast_{p:g}": None for p in FAST_P
        }
    return {
        "count": len(speeds),
        "over": len(runnable),
        "geomean": math.exp(statistics.fmean(math.log(s) for s in speeds)),
        "median": statistics.median(speeds),
    } | {f"fast_{p:g}": sum(s > p for s in speeds) / len(runnable) for p in FAST_P}


def sol_stats(verdicts: Iterable[Verdict]) -> dict[str, float | int | None]:
    """Mean and median SOL fraction (``sol_ms / solution_ms``; 1.0 is the device's speed of
    light) over the passing samples that have one; None when none has."""
    fractions = [
        v.sol_fraction for v in verdicts if could_run(v) and v.passed and v.sol_fraction is not None
    ]
    if not fractions:
        return {"count": 0, "mean_fraction": None, "median_fraction": None}
    return {
        "count": len(fractions),
        "mean_fraction": statistics.fmean(fractions),
        "median_fraction": statistics.median(fractions),
    }


_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")
_PATH = re.compile(r"(?<![\w/.])[\w./-]+\.(cu|cuh|cpp|cc|cxx|c|h|hpp|hh|py)(?=[: ])")
_NUMBER = re.compile(r"\b\d+\b")


def failed_stage(v: Verdict) -> str:
    """The stage that decided a failure: the first that did not pass (``-`` when none did
    not: an assembly error, an empty solution before any stage)."""
    return next((n for n, st in v.stages.items() if st.status not in ("ok", "skipped")), "-")


def reason_key(reason: str | None) -> str:
    """A failure reason with what differs per sample taken out (file names, quoted names,
    numbers), so that the same cause counts as one: ``solution.cu: exit(err) ...`` and
    ``kernel.cu: exit(status) ...`` stay apart, ``'cublasCreate_v2'`` becomes ``'…'``."""
    text = _QUOTED.sub("'…'", reason or "")
    text = _NUMBER.sub("N", _PATH.sub("<file>", text))
    return text.split("\n", 1)[0][:120]


def failure_table(rows: Sequence[Graded], examples: int = 3) -> list[dict[str, Any]]:
    """Failed, infrastructure and suspected samples counted by group, deciding stage and
    reason (most frequent first), with a few task ids of each: false failures at a glance."""
    table: dict[tuple[str, str, str, str], list[str]] = defaultdict(list)
    for r in rows:
        v = r.verdict
        if v.passed is not False and v.failure is None and not v.suspected_hack:
            continue
        kind = v.failure or ("suspected" if v.suspected_hack else "failed")
        table[(r.group, kind, failed_stage(v), reason_key(v.reason))].append(r.task_id)
    out = [
        {"group": g, "kind": k, "stage": st, "reason": why, "count": len(ids),
         "examples": sorted(set(ids))[:examples]}
        for (g, k, st, why), ids in table.items()
    ]  # fmt: skip
    return sorted(out, key=lambda d: (d["group"], -d["count"], d["stage"], d["reason"]))


def _counts(rows: Sequence[Graded], ks: Sequence[int]) -> dict[str, Any]:
    stages = Counter(failed_stage(r.verdict) for r in rows if r.verdict.passed is False)
    return {
        "samples": len(rows),
        "problems": len({r.task_id for r in rows}),
        "run": sum(could_run(r.verdict) for r in rows),
        "passed": sum(bool(r.verdict.passed) for r in rows),
        "failed": sum(r.verdict.passed is False for r in rows),
        "suspected": sum(bool(r.verdict.suspected_hack) for r in rows),
        "failed_by_stage": dict(sorted(stages.items())),
        "not_run": sum(not_run(r.verdict) for r in rows),
        "infrastructure_failures": sum(r.verdict.failure == "infrastructure" for r in rows),
        "pass_at_k": _pass_table(rows, ks),
        "speedup": speedup_stats(r.verdict for r in rows),
        "sol": sol_stats(r.verdict for r in rows),
    }


def summarise(rows: Sequence[Graded], ks: Sequence[int] = (1,)) -> dict[str, Any]:
    """The summary.json payload: overall and per-group pass@k, speedups, the mean SOL fraction
    (``sol``) and counts.

    ``run`` is how many samples the rates are over; ``not_run`` and ``infrastructure_failures``
    are the samples left out, and each group reports its own; ``failed``, ``suspected`` and
    ``failed_by_stage`` count the failures, ``failures`` lists them by group, deciding stage
    and reason (:func:`failure_table`).
    """
    groups: dict[str, list[Graded]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    return _counts(rows, ks) | {
        "groups": {g: _counts(rs, ks) for g, rs in sorted(groups.items())},
        "failures": failure_table(rows),
    }


def cost_stats(trajectories: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """What a run's model calls cost, from its trajectories (JSON dicts).

    ``cost_usd`` sums the samples whose cost is known (a gateway price table or the CLI's own
    figure); ``unpriced_samples`` had model usage but no cost, ``unpriced_calls`` counts their
    gateway calls with tokens and no price. ``cost_usd`` is None when no sample had a cost.

    >>> cost_stats([{"cost_usd": 0.5}, {"cost_usd": None, "usage": {"total_tokens": 9},
    ...   "model_calls": [{"cost_usd": None, "usage": {"input_tokens": 9}}]}])
    {'cost_usd': 0.5, 'priced_samples': 1, 'unpriced_samples': 1, 'unpriced_calls': 1}
    """
    total, priced, unpriced_samples, unpriced_calls = 0.0, 0, 0, 0
    for traj in trajectories:
        cost = traj.get("cost_usd")
        if cost is not None:
            total += float(cost)
            priced += 1
        elif (traj.get("usage") or {}).get("total_tokens"):
            unpriced_samples += 1
        for call in traj.get("model_calls") or []:
            tokens = sum(int(v) for v in (call.get("usage") or {}).values() if type(v) is int)
            if call.get("cost_usd") is None and tokens:
                unpriced_calls += 1
    return {
        "cost_usd": round(total, 6) if priced else None,
        "priced_samples": priced,
        "unpriced_samples": unpriced_samples,
        "unpriced_calls": unpriced_calls,
    }
