"""The package's shape (issue 15), checked so it stays true: modules of a readable size, no
import cycle between modules, and no code outside ``cudaenv/sandbox`` that imports a backend
module or branches on a backend's name (a new backend must need no edit elsewhere)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "cudaenv"
MAX_LINES = 500
BACKEND_NAMES = {"local", "docker"}
#: the packages that must treat every sandbox alike
BACKEND_BLIND = ("grading", "env", "agents", "rollout", "integrations", "redteam", "cluster")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path, name: str, *, in_functions: bool = True) -> set[str]:
    """Modules of the package this one imports: everywhere (``in_functions``: a function-level
    import only hides a cycle until the function runs), or only when it is imported. Imports
    under ``if TYPE_CHECKING:`` never run and do not count."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if "TYPE_CHECKING" not in test:
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
            elif in_functions and isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.With
            ):
                visit(node.body)
            elif in_functions and isinstance(node, ast.For | ast.While):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return {m for m in found if m in MODULES and m != name}


def _top_level_imports(path: Path, name: str) -> set[str]:
    """What importing this module imports (see :func:`_imports`)."""
    return _imports(path, name, in_functions=False)


def test_no_module_is_too_long() -> None:
    long = {n: c for n, p in MODULES.items() if (c := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("in_functions", [False, True], ids=["module-level", "all-imports"])
def test_no_import_cycle(in_functions: bool) -> None:
    """No cycle, counting function-level imports too (issue 27: four two-file circles hid
    behind them)."""
    graph = {n: _imports(p, n, in_functions=in_functions) for n, p in MODULES.items()}
    # a package's __init__ importing its own submodules is how packages export: not a cycle
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not name.startswith(f"{d}.")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                walk(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)


def _blind_modules() -> list[tuple[str, Path]]:
    return [
        (n, p) for n, p in MODULES.items() if n.split(".")[1:2] and n.split(".")[1] in BACKEND_BLIND
    ]


@pytest.mark.parametrize(("name", "path"), _blind_modules(), ids=lambda v: str(v))
def test_no_backend_import_or_name_branch(name: str, path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            if mod.startswith("cudaenv.sandbox.") and mod != "cudaenv.sandbox.base":
                problems.append(f"line {node.lineno}: imports {mod}")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (
                    alias.name.startswith("cudaenv.sandbox.")
                    and alias.name != "cudaenv.sandbox.base"
                ):
                    problems.append(f"line {node.lineno}: imports {alias.name}")
        if isinstance(node, ast.Compare):
            consts = [
                c.value
                for c in [node.left, *node.comparators]
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
            if BACKEND_NAMES & set(consts):
                problems.append(f"line {node.lineno}: compares with a backend name")
    assert not problems, f"{name}: {problems}"


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The import walker reads ``from``-imports, relative ones and ``TYPE_CHECKING`` guards."""
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from cudaenv.grading import rewards\n"
        "from . import verdict\n"
        "if TYPE_CHECKING:\n    from cudaenv.env import core\n"
        "def f():\n    import cudaenv.rollout.store\n"
    )
    found = _top_level_imports(path, "cudaenv.grading.m")
    assert "cudaenv.grading.rewards" in found and "cudaenv.grading.verdict" in found
    assert "cudaenv.env.core" not in found and "cudaenv.rollout.store" not in found
    everywhere = _imports(path, "cudaenv.grading.m")
    assert "cudaenv.rollout.store" in everywhere and "cudaenv.env.core" not in everywhere
