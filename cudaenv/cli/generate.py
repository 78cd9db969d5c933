"""CLI command that makes problems: ``generate`` (problem families, :mod:`cudaenv.families`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cudaenv.cli.common import console, friendly


@friendly
def generate_cmd(
    families: Annotated[
        list[str] | None,
        typer.Argument(help="families to draw from (default: every registered family)"),
    ] = None,
    count: Annotated[int, typer.Option("--count", help="how many problems in all")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="the same seed gives the same problems")] = 0,
    out: Annotated[
        Path, typer.Option("--out", help="a directory (authoring layout) or FILE.tar.gz (datapack)")
    ] = Path("generated"),
    date: Annotated[
        str | None, typer.Option("--date", help="the problems' date (YYYY-MM-DD)")
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list", help="print the registered families and exit")
    ] = False,
) -> None:
    """Generate distinct, verified-by-construction problems from families (deterministic for a
    seed); write them as authoring directories or a datapack with verified hashes."""
    from cudaenv.families import family_names, generate, write

    if list_only:
        for name in family_names():
            console.print(name)
        return
    problems = generate(families or None, count=count, seed=seed, date=date)
    where = write(problems, out)
    kinds: dict[str, int] = {}
    for p in problems:
        kinds[p.problem_type] = kinds.get(p.problem_type, 0) + 1
    detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    console.print(f"wrote {len(problems)} problems ({detail}) to {where}")


def register(app: typer.Typer) -> None:
    """Add ``generate`` to ``app``."""
    app.command("generate")(generate_cmd)
