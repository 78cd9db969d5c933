"""CLI command for the reasoning questions (:mod:`cudaenv.questions`): ``questions`` prints a
question set's kinds (count, verified, chance level) and, with ``--out``, exports it as a
datapack whose question rows carry no answers (the answers go in their own file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cudaenv.cli.common import GroupsOpt, IdsOpt, console, friendly, selected
from cudaenv.errors import SpecError


@friendly
def questions_cmd(
    source: Annotated[
        str,
        typer.Argument(
            help="questions[:seed=S,count=N,kinds=a+b,families=x+y,unverified=1] or a question datapack"
        ),
    ] = "questions",
    out: Annotated[
        Path | None, typer.Option("--out", help="write the questions as a datapack (FILE.tar.gz)")
    ] = None,
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Show a question set's kinds with their chance levels; --out exports it as a datapack."""
    from cudaenv.questions.suite import QuestionSuite

    suite = selected(source, ids, groups)
    if not isinstance(suite, QuestionSuite):
        raise SpecError(f"{source!r} holds problems, not questions", field="source")
    table = Table(title=f"{len(suite)} questions from {suite.source}")
    for col in ("kind", "questions", "verified", "chance"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for kind, s in suite.by_kind().items():
        table.add_row(kind, str(s["count"]), str(s["verified"]), f"{s['chance']:.4f}")
    console.print(table)
    if out is not None:
        if not out.name.endswith((".tar.gz", ".tgz")):
            raise SpecError(f"--out must name a .tar.gz datapack, got {out}", field="out")
        console.print(
            f"wrote {len(suite)} questions (answers in answers.jsonl) to {suite.to_datapack(out)}"
        )


def register(app: typer.Typer) -> None:
    """Add ``questions`` to ``app``."""
    app.command("questions")(questions_cmd)
