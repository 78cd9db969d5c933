"""The report's PNG plots (matplotlib, the ``plot`` extra; headless ``Agg`` backend).

Each function writes one file and returns a line saying what it wrote, or why it wrote
nothing (matplotlib missing, nothing to plot): a report without plots is still a report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudaenv.evaluation.stats import Estimate
from cudaenv.grading.verdict import Verdict

__all__ = ["failure_plot", "pass_at_k_plot", "pyplot", "speedup_plot"]

MISSING = "matplotlib is not installed: no plots (pip install 'cudaenv[plot]')"


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(fig: Any, plt: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def speedup_plot(verdicts: Iterable[Verdict], path: Path) -> str:
    """A histogram of the passing samples' speedups over the baseline (optimize mode)."""
    plt = pyplot()
    if plt is None:
        return MISSING
    speeds = sorted(v.speedup for v in verdicts if v.passed and v.speedup)
    if not speeds:
        return "no passing samples with a speedup: no plot"
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist(speeds, bins=min(30, max(5, len(speeds) // 2)), color="#4c72b0")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("speedup over baseline (x)")
    ax.set_ylabel("samples")
    ax.set_title(f"speedup distribution ({len(speeds)} passing samples)")
    _save(fig, plt, path)
    return f"speedup plot: {path}"


def pass_at_k_plot(table: Mapping[str, Mapping[int, Estimate]], path: Path) -> str:
    """pass@k per group (bars) with the 95% intervals (error bars), one bar per k."""
    plt = pyplot()
    if plt is None:
        return MISSING
    groups = [g for g, row in table.items() if any(e.value is not None for e in row.values())]
    if not groups:
        return "no pass@k to plot (nothing ran to a decision)"
    ks = sorted({k for row in table.values() for k in row})
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(groups) * len(ks)), 4))
    width = 0.8 / len(ks)
    for j, k in enumerate(ks):
        xs, ys, errs = [], [], [[], []]
        for i, g in enumerate(groups):
            e = table[g].get(k)
            if e is None or e.value is None:
                continue
            xs.append(i + j * width)
            ys.append(e.value)
            errs[0].append(e.value - (e.low if e.low is not None else e.value))
            errs[1].append((e.high if e.high is not None else e.value) - e.value)
        ax.bar(xs, ys, width=width, yerr=errs, capsize=3, label=f"pass@{k}")
    ax.set_xticks([i + width * (len(ks) - 1) / 2 for i in range(len(groups))], groups)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass@k (95% bootstrap interval)")
    ax.legend()
    _save(fig, plt, path)
    return f"pass@k plot: {path}"


def failure_plot(
    by_group: Mapping[str, Mapping[str, int]], columns: Sequence[str], path: Path
) -> str:
    """Per group, the share of samples in each outcome column (stacked bars)."""
    plt = pyplot()
    if plt is None:
        return MISSING
    groups = list(by_group)
    if not groups:
        return "no samples: no failure plot"
    used = [c for c in columns if any(by_group[g].get(c) for g in groups)]
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(groups)), 4))
    bottoms = [0.0] * len(groups)
    cmap = plt.get_cmap("tab10")
    for column in used:  # a column keeps its colour from one report to the next
        shares = [by_group[g].get(column, 0) / max(1, sum(by_group[g].values())) for g in groups]
        colour = cmap(list(columns).index(column) % 10)
        ax.bar(groups, shares, bottom=bottoms, label=column, color=colour)
        bottoms = [b + s for b, s in zip(bottoms, shares, strict=True)]
    ax.set_ylabel("share of samples")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    _save(fig, plt, path)
    return f"failure plot: {path}"
