"""The CLI package's import structure: every module imports on its own, in a fresh
interpreter, and imports go one way (application -> command modules -> common)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv.cli

PACKAGE = Path(cudaenv.cli.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
# what a command module may import of the package; the app's builder and __init__ import them
SHARED = {"common", "progress", "runs"}
BUILDERS = {"__init__", "application"}


def _is_cli_module(name: str) -> bool:
    parts = name.split(".")
    return parts[:2] == ["cudaenv", "cli"] and (
        len(parts) == 2 or (len(parts) == 3 and parts[2] in MODULES)
    )


def _cli_imports_in(source: str) -> set[str]:
    """The ``cudaenv.cli`` modules that ``source`` imports: ``"cudaenv.cli"`` for the package
    itself, else the module's short name. ``from p import x`` imports module ``p.x`` when that
    is one, else ``p``; relative imports are read as inside ``cudaenv.cli``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = "cudaenv.cli" + (f".{base}" if base else "")
            targets = [
                f"{base}.{alias.name}" if _is_cli_module(f"{base}.{alias.name}") else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target == "cudaenv.cli":
                found.add(target)
            elif target.startswith("cudaenv.cli."):
                found.add(target.split(".")[2])
    return found


def _cli_imports(module: str) -> set[str]:
    return _cli_imports_in((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))


def test_the_package_has_the_expected_modules() -> None:
    assert {"application", "common", "progress", "runs", "catalog", "eval"} <= set(MODULES)
    assert not list(PACKAGE.parent.glob("cli*.py")), "the old top-level cli modules are back"


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import cudaenv.cli.{module}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_console_script_target_resolves() -> None:
    """``cudaenv = "cudaenv.cli:main"`` as an entry point loads it: a fresh import, getattr."""
    code = "import cudaenv.cli as m, typer; assert callable(m.main); assert isinstance(m.app, typer.Typer)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("module", sorted(set(MODULES) - BUILDERS))
def test_no_module_imports_the_app_or_the_package_back(module: str) -> None:
    imported = _cli_imports(module)
    assert "cudaenv.cli" not in imported and "application" not in imported, imported
    if module not in SHARED:  # a command module
        assert imported <= SHARED, f"{module} imports {imported - SHARED}"
    else:  # the shared modules import no other command module
        assert imported <= SHARED - {module}, imported


def test_common_imports_nothing_of_the_package() -> None:
    assert _cli_imports("common") == set()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("from cudaenv.cli import app", {"cudaenv.cli"}),
        ("from cudaenv import cli", {"cudaenv.cli"}),
        ("import cudaenv.cli", {"cudaenv.cli"}),
        ("import cudaenv.cli.application", {"application"}),
        ("from cudaenv.cli.application import app", {"application"}),
        ("from . import application", {"application"}),
        ("from .common import console", {"common"}),
        ("from cudaenv.cli import catalog, grading", {"catalog", "grading"}),
        ("from cudaenv.cli.common import console", {"common"}),
        ("from cudaenv.errors import SpecError", set()),
    ],
)
def test_the_checker_reads_each_form_of_import(line: str, expected: set[str]) -> None:
    """The AST check sees each way of importing the package back (so the tests above can
    fail), and nothing else."""
    assert _cli_imports_in(line) == expected
