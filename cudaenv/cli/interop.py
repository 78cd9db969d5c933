"""CLI commands that speak other frameworks' formats: ``export-harbor``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cudaenv.cli.common import GroupsOpt, IdsOpt, SourceArg, console, friendly, selected


@friendly
def export_harbor_cmd(
    source: SourceArg,
    out_dir: Annotated[
        Path, typer.Argument(help="directory to write one Harbor task per problem into")
    ],
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
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

    suite = selected(source, ids, groups)
    tasks = export_suite(
        suite, out_dir, image=image, agent_timeout_s=agent_timeout, overwrite=force
    )
    console.print(f"wrote {len(tasks)} Harbor tasks to {out_dir}")


def register(app: typer.Typer) -> None:
    """Add ``export-harbor`` to ``app``."""
    app.command("export-harbor")(export_harbor_cmd)
