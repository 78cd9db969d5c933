"""``cudaenv report RUN``: a run directory as a Markdown report with PNG plots.

Sections: the run's settings (from ``run.json``), pass@k per group with 95% bootstrap
intervals (:mod:`cudaenv.evaluation.stats`), the failure matrix (problem x stage,
:mod:`cudaenv.evaluation.failures`), one row per problem and, in optimize mode, the speedup
distribution. Rates are over the samples that ran to a decision; samples not run here (no
GPU) and infrastructure faults are counted, never scored.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from cudaenv.evaluation.failures import COLUMNS, STAGES, failure_matrix, outcome
from cudaenv.evaluation.plots import failure_plot, pass_at_k_plot, speedup_plot
from cudaenv.evaluation.stats import Estimate, pass_at_k_interval
from cudaenv.grading.summary import Graded, could_run, speedup_stats
from cudaenv.rollout.rundir import RunDir

__all__ = ["outcomes_by_task", "pass_at_k_table", "write_report"]

ALL = "all"


def outcomes_by_task(rows: Iterable[Graded]) -> dict[str, list[bool]]:
    """Per task_id, whether each sample that ran to a decision passed."""
    out: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if could_run(r.verdict):
            out[r.task_id].append(bool(r.verdict.passed))
    return dict(out)


def pass_at_k_table(rows: Sequence[Graded], ks: Sequence[int]) -> dict[str, dict[int, Estimate]]:
    """pass@k with its interval per group, and over every problem (``"all"``, last)."""
    groups: dict[str, list[Graded]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    table = {}
    for group, members in [*sorted(groups.items()), (ALL, list(rows))]:
        outcomes = outcomes_by_task(members)
        table[group] = {k: pass_at_k_interval(outcomes, k) for k in ks}
    return table


def _cell(text: object, limit: int = 80) -> str:
    """Markdown-table-safe text: one line, pipes escaped, clipped."""
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _settings(run: RunDir, rows: Sequence[Graded]) -> list[str]:
    m = run.manifest
    if m is None:
        source = run.summary().get("regraded_from")
        if source:
            return [f"A re-grade of `{source}` (its settings: `{source}/run.json`).", ""]
        return [f"No run.json in {run.path}: the settings of this run are unknown.", ""]
    sampling = m.sampling.model_dump(exclude_none=True) if m.sampling else "(no model)"
    box = {k: m.sandbox[k] for k in ("backend", "image", "isolation") if k in m.sandbox}
    items = [
        ("agent", m.agent),
        ("model", m.model or "-"),
        ("sampling", json.dumps(sampling) if isinstance(sampling, dict) else sampling),
        ("mode", m.mode + (f" (repairing {m.repair_from})" if m.repair_from else "")),
        ("limits", f"max_turns {m.max_turns or '-'}, max_steps {m.max_steps}"),
        ("problems", f"{len({r.task_id for r in rows})} from {m.source}"),
        ("release window", f"{m.since or '-'} .. {m.until or '-'}"),
        ("sandbox", json.dumps(box)),
        ("cudaenv", m.cudaenv_version),
        ("started", m.created_at or "-"),
    ]
    forced = [h for h in m.history if h.forced]
    if forced:
        items.append(("forced resumes", "; ".join(", ".join(h.differences) for h in forced)))
    return [*_table(["setting", "value"], items), ""]


def _reason(rows: Sequence[Graded]) -> str:
    reasons = Counter(r.verdict.reason for r in rows if not r.verdict.passed and r.verdict.reason)
    return reasons.most_common(1)[0][0] if reasons else ""


def _per_problem(rows: Sequence[Graded], optimize: bool) -> list[str]:
    by_task: dict[str, list[Graded]] = defaultdict(list)
    for r in rows:
        by_task[r.task_id].append(r)
    header = ["problem", "group", "samples", "ran", "passed", "pass@1"]
    header += ["median speedup"] if optimize else []
    header += ["failures", "most common reason"]
    lines = []
    for task, members in sorted(by_task.items()):
        ran = [r for r in members if could_run(r.verdict)]
        passed = sum(bool(r.verdict.passed) for r in ran)
        fails = Counter(outcome(r.verdict) for r in members)
        shown = ", ".join(f"{c} {fails[c]}" for c in STAGES if fails.get(c))
        row: list[object] = [task, members[0].group, len(members), len(ran), passed]
        row.append(f"{passed / len(ran):.3f}" if ran else "not run")
        if optimize:
            speeds = [r.verdict.speedup for r in ran if r.verdict.passed and r.verdict.speedup]
            row.append(f"{statistics.median(speeds):.2f}x" if speeds else "-")
        row += [shown or "-", _reason(members) or "-"]
        lines.append(row)
    return _table(header, lines)


def _failures(rows: Sequence[Graded]) -> list[str]:
    matrix = failure_matrix(rows)
    used = [c for c in COLUMNS if c in STAGES or any(m.get(c) for m in matrix.values())]
    body = [[task, *(counts.get(c, 0) for c in used)] for task, counts in matrix.items()]
    totals = Counter[str]()
    for counts in matrix.values():
        totals.update(counts)
    body.append([f"**{ALL}**", *(totals.get(c, 0) for c in used)])
    return _table(["problem", *used], body)


def _speedups(rows: Sequence[Graded]) -> list[str]:
    stats = speedup_stats(r.verdict for r in rows)
    if not stats["count"]:
        return ["No passing sample has a measured speedup (benchmarks need a GPU).", ""]

    def fmt(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) and math.isfinite(v) else str(v)

    items = [(k, fmt(v)) for k, v in stats.items()]
    return [*_table(["speedup statistic", "value"], items), ""]


def write_report(run: RunDir, ks: Sequence[int], out_dir: Path) -> tuple[Path, list[str]]:
    """Write ``out_dir/report.md`` and its PNGs; the report's path and one line per plot
    saying what was written (or why not)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = run.rows()
    optimize = run.mode == "optimize"
    table = pass_at_k_table(rows, ks)
    notes = [pass_at_k_plot(table, out_dir / "pass_at_k.png")]
    by_group: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_group[r.group][outcome(r.verdict)] += 1
    notes.append(failure_plot(dict(sorted(by_group.items())), COLUMNS, out_dir / "failures.png"))
    if optimize:
        notes.append(speedup_plot((r.verdict for r in rows), out_dir / "speedup.png"))
    counts = Counter(outcome(r.verdict) for r in rows)
    md = [f"# Evaluation report: {run.path.name}", ""]
    md += _settings(run, rows)
    md += [
        "## pass@k",
        "",
        f"{len(rows)} samples of {len({r.task_id for r in rows})} problems: "
        f"{sum(could_run(r.verdict) for r in rows)} ran to a decision, "
        f"{counts.get('not run', 0)} not run here (no GPU), "
        f"{counts.get('infrastructure', 0)} infrastructure faults (not scored). "
        "Intervals: 95% bootstrap over problems and their samples; pass@k uses the problems "
        "with at least k samples.",
        "",
    ]
    header = ["group", *(f"pass@{k}" for k in ks)]
    md += _table(header, [[g, *(row[k].text() for k in ks)] for g, row in table.items()])
    md += ["", "![pass@k per group](pass_at_k.png)", ""] if _wrote(notes[0]) else [""]
    md += [
        "## Failures by stage",
        "",
        "Each sample counted once, at the first stage it failed.",
        "",
    ]
    md += _failures(rows)
    md += ["", "![outcomes per group](failures.png)", ""] if _wrote(notes[1]) else [""]
    if optimize:
        md += ["## Speedups", "", *_speedups(rows)]
        md += ["![speedup distribution](speedup.png)", ""] if _wrote(notes[2]) else []
    md += ["## Per problem", "", *_per_problem(rows, optimize), ""]
    path = out_dir / "report.md"
    path.write_text("\n".join(md), encoding="utf-8")
    return path, notes


def _wrote(note: str) -> bool:
    return note.endswith(".png")
