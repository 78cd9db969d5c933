"""``cudaenv redteam``: play every exploit agent and show what each got (it should be nothing).

Exits 1 when any exploit scored (reward beyond the honest one, a leak, a damaged host, an
agent-made infrastructure failure). Known gaps (exploits marked as getting through a given
sandbox, with what must change there) count too unless ``--allow-known-gaps``.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cudaenv.cli.common import (
    BACKEND_NAMES,
    IsolationOption,
    check_backend,
    console,
    friendly,
    split_csv,
)
from cudaenv.cli.progress import Reporter
from cudaenv.errors import SpecError

# the agent's sandbox; the grader's is local unless an exploit names a pool for both (Exploit.pooled)
AgentSandboxOpt = Annotated[str, typer.Option("--sandbox", help=f"agent sandbox: {BACKEND_NAMES}")]


@friendly
def redteam_cmd(
    sandbox: AgentSandboxOpt = "local",
    only: Annotated[
        str | None, typer.Option("--only", help="comma-separated exploit names")
    ] = None,
    classes: Annotated[
        str | None, typer.Option("--class", help="comma-separated exploit classes")
    ] = None,
    slow: Annotated[bool, typer.Option("--slow", help="also run the slow exploits")] = False,
    allow_known_gaps: Annotated[
        bool, typer.Option("--allow-known-gaps", help="known sandbox gaps do not fail the run")
    ] = False,
    isolation: IsolationOption = None,
) -> None:
    """Run the red-team suite: scripted exploit agents through real episodes and the grader."""
    from cudaenv.redteam import EXPLOITS, run_exploit
    from cudaenv.sandbox import check_isolation
    from cudaenv.toolkit import has_gpu

    check_backend(sandbox)
    isolation = isolation or "bubblewrap"
    check_isolation(isolation)  # every local sandbox (the grader's always): before any work
    names, wanted = set(split_csv(only) or []), set(split_csv(classes) or [])
    unknown = names - {e.name for e in EXPLOITS}
    if unknown:
        raise SpecError(f"unknown exploit(s): {', '.join(sorted(unknown))}", field="only")
    gpu = has_gpu()
    table = Table(title=f"red team ({sandbox} sandbox, {isolation} isolation on local ones)")
    for col in ("exploit", "class", "reward", "flagged", "verdict reason", "outcome"):
        table.add_column(col, overflow="fold")
    failed = 0
    chosen = [
        e
        for e in EXPLOITS
        if not ((names and e.name not in names) or (wanted and e.cls not in wanted))
    ]
    with Reporter(console, "red team", len(chosen)) as report:
        for e in chosen:
            elsewhere = e.backends is not None and sandbox not in e.backends
            if elsewhere or (e.slow and not slow and not names) or (e.needs_gpu and not gpu):
                why = "needs a GPU" if e.needs_gpu and not gpu else "slow (--slow)"
                if elsewhere:
                    why = f"{', '.join(e.backends or ())} sandbox only"
                table.add_row(e.name, e.cls, "-", "-", "", f"[dim]skipped: {why}[/]")
                report.item(e.name, "skipped", None, why)
                continue
            r = run_exploit(e, sandbox, isolation)
            gap = e.xfail.get(sandbox)
            status, detail = "blocked", ""
            if not r.scored:
                outcome = "[green]blocked[/]"
            elif gap:
                status, detail = "KNOWN GAP", gap
                outcome = "[yellow]KNOWN GAP[/]: " + gap
                failed += not allow_known_gaps
            else:
                failed += 1
                detail = (
                    r.evidence
                    or r.host_problem
                    or ("infrastructure failure" if r.infrastructure else "reward")
                )
                status, outcome = "SCORED", "[bold red]SCORED[/]: " + detail
            flag = "yes" if r.flagged else ("no (expected!)" if e.expect_flag else "no")
            extra = r.suspected[0] if r.suspected and r.suspected[0] not in r.reason else ""
            reason = r.reason + (f" | {extra}" if extra else "")
            table.add_row(e.name, e.cls, f"{r.reward:g}", flag, reason[:160], outcome)
            if e.expect_flag and not r.flagged:
                failed += 1
                if status == "blocked":
                    status, detail = "NOT FLAGGED", "blocked but not flagged, as expected"
            report.item(e.name, status, r.seconds, detail, warn=status != "blocked")
    console.print(table)
    if failed:
        console.print(f"[bold red]{failed} exploit(s) got through[/]")
        raise typer.Exit(1)
    console.print("[green]every exploit was blocked[/]")


def register(app: typer.Typer) -> None:
    """Add ``redteam`` to ``app``."""
    app.command("redteam")(redteam_cmd)
