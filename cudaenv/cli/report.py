"""CLI commands that read finished runs: ``report`` (Markdown + PNG plots of one run) and
``compare`` (the paired difference of two runs). Both read run directories written by
``eval`` (results.jsonl) or ``grade`` (graded.jsonl) and write nothing into them but the
report they were asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cudaenv.cli.common import KOpt, console, friendly, parse_ks

RunArg = Annotated[Path, typer.Argument(help="a run directory written by eval or grade")]


@friendly
def report_cmd(
    run: RunArg,
    k: KOpt = "1",
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="where report.md and its plots go (default RUN/report)"),
    ] = None,
) -> None:
    """Write a Markdown report of RUN: pass@k per group with 95% intervals, the failure
    matrix (problem x stage), one row per problem and, in optimize mode, the speedups."""
    from cudaenv.evaluation.report import write_report
    from cudaenv.rollout.rundir import RunDir

    run_dir = RunDir(run)
    path, notes = write_report(run_dir, parse_ks(k), out or run / "report")
    for note in notes:
        console.print(note, highlight=False, soft_wrap=True)
    console.print(f"report: {path}", highlight=False, soft_wrap=True)


@friendly
def compare_cmd(
    run_a: Annotated[Path, typer.Argument(help="run A (the reference)")],
    run_b: Annotated[Path, typer.Argument(help="run B (compared with A: B - A)")],
    k: KOpt = "1",
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="also write the comparison here (.md, and .json beside)"),
    ] = None,
) -> None:
    """The paired difference B - A on the problems both runs ran: pass@k with 95% paired
    bootstrap intervals, in optimize mode the speedup ratio, and the settings that differ."""
    from cudaenv.evaluation.compare import compare_runs, comparison_markdown
    from cudaenv.rollout.rundir import RunDir

    result = compare_runs(RunDir(run_a), RunDir(run_b), parse_ks(k))
    text = comparison_markdown(result)
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        out.with_suffix(".json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"comparison: {out}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``compare`` to ``app``."""
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
