"""The ``cudaenv`` typer app: each command module adds its commands to it.

Imports go one way: this module -> the command modules -> ``common`` (and ``progress``,
``runs``). A new command group is a module with ``register(app)`` and one line in
``COMMAND_MODULES`` (its place there is its place in ``cudaenv --help``).
"""

from __future__ import annotations

import sys
from types import ModuleType

import typer
from typer.core import TyperCommand

from cudaenv.cli import catalog, generate, grading, interop, questions, redteam, report
from cudaenv.cli import eval as evaluation
from cudaenv.cli.common import OneLineCommand, err_console

COMMAND_MODULES: tuple[ModuleType, ...] = (
    catalog,  # list, show, pack
    evaluation,  # eval
    grading,  # grade, validate, baseline
    report,  # report, compare
    interop,  # export-harbor
    redteam,  # redteam
    generate,  # generate
    questions,  # questions
)


def build_app() -> typer.Typer:
    """A fresh app with every command module's commands."""
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, help="CUDA problems as RL environments."
    )
    for module in COMMAND_MODULES:
        module.register(app)
    for command in app.registered_commands:  # flag errors as one line, exit 2
        if command.cls in (None, TyperCommand):
            command.cls = OneLineCommand
    return app


app = build_app()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
