"""CLI commands that speak other frameworks' formats: ``export-harbor``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cudaenv.cli import SourceArg, _friendly, _split, app, console


@app.command("export-harbor")
@_friendly
def export_harbor_cmd(
    source: SourceArg,
    out_dir: Annotated[
        Path, typer.Argument(help="directory to write one Harbor task per problem into")
    ],
    ids: Annotated[str | None, typer.Option("--ids", help="comma-separated task ids")] = None,
    groups: Annotated[
        str | None, typer.Option("--groups", "-g", help="comma-separated groups")
    ] = None,
    image: Annotated[
        str, typer.Option("--image", help="the cudaenv eval image the Dockerfiles build FROM")
    ] = "cudaenv-eval:latest",
    agent_timeout: Annotated[
        float, typer.Option("--agent-timeout", help="[agent] timeout_sec")
    ] = 1800.0,
    force: Annotated[
        bool, typer.Option("--force", help="replace task directories that exist")
    ] = False,
) -> None:
    """Export problems as Harbor task directories (task.toml, instruction.md, environment/, tests/, solution/)."""
    from cudaenv.interop.harbor_export import export_suite
    from cudaenv.problems.loader import load_suite

    suite = load_suite(source).filter(include=_split(ids), groups=_split(groups))
    tasks = export_suite(
        suite, out_dir, image=image, agent_timeout_s=agent_timeout, overwrite=force
    )
    console.print(f"wrote {len(tasks)} Harbor tasks to {out_dir}")
