"""CLI commands that look at problems: ``list``, ``show``, ``pack``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cudaenv.cli.common import (
    GroupsOpt,
    IdsOpt,
    SinceOpt,
    SourceArg,
    SourceOpt,
    UntilOpt,
    console,
    friendly,
    parse_day,
    split_csv,
)

if TYPE_CHECKING:
    from cudaenv.problems.suite import Suite

TagsOpt = Annotated[str | None, typer.Option("--tags", help="comma-separated tags (any)")]
DiffOpt = Annotated[str | None, typer.Option("--difficulty", help="easy,medium,hard")]
ExcludeOpt = Annotated[
    str | None, typer.Option("--exclude", help="comma-separated task ids to drop")
]


def _filtered(
    source: str,
    groups: str | None,
    tags: str | None,
    difficulty: str | None,
    since: str | None,
    until: str | None,
    ids: str | None,
    exclude: str | None,
) -> Suite:
    from cudaenv.problems.loader import load_suite

    return load_suite(source).filter(
        groups=split_csv(groups),
        tags=split_csv(tags),
        difficulty=split_csv(difficulty),
        since=parse_day("--since", since),
        until=parse_day("--until", until),
        include=split_csv(ids),
        exclude=split_csv(exclude),
    )


@friendly
def list_cmd(
    source: SourceArg = "builtin",
    groups: GroupsOpt = None,
    tags: TagsOpt = None,
    difficulty: DiffOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    ids: IdsOpt = None,
    exclude: ExcludeOpt = None,
) -> None:
    """List the problems of a source as a table."""
    suite = _filtered(source, groups, tags, difficulty, since, until, ids, exclude)
    table = Table(title=f"{len(suite)} problems from {suite.source}")
    table.add_column("task_id", no_wrap=True, overflow="fold", min_width=12)
    for col in ("group", "type", "difficulty", "benchmark", "baseline", "date", "tags"):
        table.add_column(col, overflow="fold")
    for p in suite:
        table.add_row(
            p.task_id,
            p.group,
            p.problem_type,
            p.metadata.difficulty or "-",
            "yes" if p.has_benchmark else "-",
            "yes" if p.baseline_solution else "-",
            str(p.date or "-"),
            ",".join(p.metadata.tags),
        )
    console.print(table)


@friendly
def show(
    task_id: Annotated[str, typer.Argument(help="the problem's task_id")],
    source: SourceOpt = "builtin",
    hidden: Annotated[
        bool, typer.Option("--hidden", help="also print tests and reference")
    ] = False,
) -> None:
    """Show one problem: prompt, commands and visible files."""
    from cudaenv.problems.loader import load_suite

    p = load_suite(source)[task_id]
    console.rule(f"{p.task_id}  ({p.group}, {p.problem_type})")
    console.print(p.prompt, markup=False, highlight=False)
    console.print(f"build:     {p.build_command or '-'}", markup=False)
    console.print(f"test:      {p.test_command}", markup=False)
    console.print(
        f"benchmark: {p.benchmark_command or '-'}  timing: {p.timing_mode.type}", markup=False
    )
    groups = [("context", p.context_files)]
    if hidden:
        groups += [
            ("test", p.test_files),
            ("check", p.check_files),
            ("solution", p.solution.files if p.solution else []),
        ]
    for label, files in groups:
        for f in files:
            console.rule(f"{label}: {f.path}", style="dim")
            console.print(f.content, markup=False, highlight=False)


@friendly
def pack(
    directory: Annotated[Path, typer.Argument(help="a problem directory tree")],
    out: Annotated[Path, typer.Argument(help="output .tar.gz")],
    release: Annotated[str, typer.Option(help="release name in metadata.json")] = "internal",
) -> None:
    """Pack problem directories into a ComputeEval-format datapack."""
    from cudaenv.problems.loader import load_suite

    suite = load_suite(str(directory))
    suite.to_datapack(out, release=release)
    console.print(f"wrote {len(suite)} problems to {out}")


def register(app: typer.Typer) -> None:
    """Add ``list``, ``show`` and ``pack`` to ``app``."""
    app.command("list")(list_cmd)
    app.command()(show)
    app.command()(pack)
