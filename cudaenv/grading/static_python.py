"""Static checks of Python solutions, on the text CPython itself will run.

The checks parse the file's UTF-8 bytes with ``ast.parse`` (which honours a PEP 263 coding
declaration exactly as the interpreter does) and refuse any declaration other than UTF-8, so
nothing the interpreter decodes differently (``# -*- coding: utf-7 -*-``) escapes them. The
rules are one layer of the reward-integrity defenses: since the bundled harnesses run a
solution in a child process of its own (``test/pychild.py``), they guard what that child can
reach (files, processes, the token) and keep its code honest about the work it does. Each
rule names the exploit class it stops.
"""

from __future__ import annotations

import ast
import io
import string
import sys
import tokenize
from collections.abc import Collection, Iterable
from pathlib import PurePosixPath

from cudaenv.grading.static_python_rules import (
    ALLOWED_PY_MODULES,
    CODE_IN_STRING,
    FORBIDDEN_PY_ATTRS,
    FORBIDDEN_PY_MODULES,
    FORBIDDEN_PY_NAMES,
    NDARRAY_METHODS,
    SAFE_DUNDER_ATTRS,
    SAFE_DUNDER_DEFS,
    SELF_MATCHING,
    SUBMODULES,
    UFUNC_METHODS,
)
from cudaenv.problems.policy import ALL_CHECKS

__all__ = [
    "ALLOWED_PY_MODULES",
    "FORBIDDEN_PY_ATTRS",
    "FORBIDDEN_PY_MODULES",
    "FORBIDDEN_PY_NAMES",
    "analyse_python",
    "local_modules",
    "py_names",
]


def local_modules(paths: Iterable[str]) -> frozenset[str]:
    """The modules the problem's own (context) ``.py`` files make importable from the
    workspace root or from their own directory (``utils.py`` -> ``utils``;
    ``helpers/common.py`` -> ``helpers``, ``helpers.common``, ``common``): importing the
    problem's helpers is no escape. A name the standard
    library or a forbidden module already has is not one of them (the interpreter may hand
    out its own module of that name)."""
    out: set[str] = set()
    for p in paths:
        pp = PurePosixPath(p)
        if pp.suffix != ".py" or not all(part.isidentifier() for part in pp.with_suffix("").parts):
            continue
        parts = pp.with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        # from the root (``helpers.utils``) or from its own directory on sys.path (``utils``)
        for start in range(len(parts)):
            names = parts[start:]
            if names[0] not in sys.stdlib_module_names | FORBIDDEN_PY_MODULES.keys():
                out |= {".".join(names[: i + 1]) for i in range(len(names))}
    return frozenset(out)


def analyse_python(
    path: str,
    content: str,
    wanted: Iterable[str],
    *,
    checks: Collection[str] = ALL_CHECKS,
    banned: Iterable[str],
    text_rules: dict[str, str],
    modules: Collection[str] = (),
) -> tuple[set[str], list[str]]:
    """The required references found in one Python file, and its violations: the rules of
    ``checks`` (``python_escapes``, ``python_imports``) and uses of what the problem forbids
    (``banned``); ``text_rules``: substrings no string literal may hold; ``modules``: modules
    it may import beyond the fixed list (the policy's, the problem's own files)."""
    forbid = bool({"python_escapes", "python_imports"} & set(checks))
    data = content.encode("utf-8")
    coding = _coding_violation(path, data)
    if coding:
        return set(), [coding] if forbid else []
    try:
        tree = ast.parse(data)  # bytes: decoded as the interpreter decodes them
    except (SyntaxError, ValueError) as exc:
        return set(), [f"{path}: syntax error line {getattr(exc, 'lineno', '?')}"] if forbid else []
    names = py_names(tree)
    found = {r for r in wanted if r in names}
    out: list[str] = []
    if "python_imports" in checks:
        out += _import_violations(path, tree, modules)
    if "python_escapes" in checks:
        out += _violations(path, tree, text_rules)
        out += _store_violations(path, tree)
        out += _module_value_violations(path, tree)
        out += _annotation_violations(path, tree)
        out += _match_violations(path, tree)
        out += _format_violations(path, tree)
    out += _forbidden(path, tree, list(banned))
    return found, out


def _coding_violation(path: str, data: bytes) -> str | None:
    """A coding declaration other than UTF-8, found by CPython's own rules (PEP 263, as
    :func:`tokenize.detect_encoding` applies them): the interpreter would run other text than
    the checks read (``utf-7`` turns ``+AAo-`` inside a comment into a newline)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return f"{path}: bad coding declaration ({exc})"
    if encoding not in ("utf-8", "utf-8-sig"):
        return f"{path}: coding declaration {encoding!r} (only UTF-8 is read as the checks read it)"
    return None


def py_names(tree: ast.AST) -> set[str]:
    """Dotted names used in the module (``cuda.atomic.add``, ``np``...)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            parts = _chain(node)
            if parts:
                for i in range(len(parts)):
                    names.add(".".join(parts[i:]))
                names.add(".".join(parts))
    return names


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None when the chain does not start at a name."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return [node.id, *reversed(attrs)] if isinstance(node, ast.Name) else None


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _violations(path: str, tree: ast.AST, text_rules: dict[str, str]) -> list[str]:
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append(f"{path}: relative import (escape or tampering)")
        if isinstance(node, ast.Name):
            if node.id in FORBIDDEN_PY_NAMES:
                out.append(f"{path}: use of {node.id!r} ({FORBIDDEN_PY_NAMES[node.id]})")
            elif _is_dunder(node.id) and node.id not in ("__name__", "__all__"):
                # `__match_args__ = ("os",)` in a class body, `__annotations__`, `__dict__`...
                out.append(f"{path}: dunder name {node.id!r} (introspection escape)")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr not in SAFE_DUNDER_ATTRS:
                out.append(f"{path}: dunder attribute {node.attr!r} (introspection escape)")
            if node.attr in FORBIDDEN_PY_ATTRS:
                out.append(f"{path}: attribute {node.attr!r} ({FORBIDDEN_PY_ATTRS[node.attr]})")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
            _is_dunder(node.name) and node.name not in SAFE_DUNDER_DEFS
        ):
            out.append(f"{path}: defines {node.name!r} (runs code on lookups: escape)")
        if isinstance(node, ast.ClassDef) and node.keywords:
            out.append(f"{path}: class keywords (metaclass: runs code on lookups and checks)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for text, why in text_rules.items():
                if text in node.value:
                    out.append(f"{path}: string containing {text!r} ({why})")
            # strings numba evaluates (`cuda.jit("...")` signatures), format fields
            if CODE_IN_STRING.search(node.value):
                out.append(f"{path}: string {node.value[:60]!r} holds code (evaluated strings)")
    return out


def _import_violations(path: str, tree: ast.AST, modules: Collection[str] = ()) -> list[str]:
    """Every module and every imported name: ``from numpy import load`` is ``numpy.load``, a
    name checked like an attribute; ``import *`` brings names no check saw. ``modules``: more
    it may import (a problem's own module, or one its policy allows, by name or a parent)."""
    out: list[str] = []
    extra = set(modules)
    for node in ast.walk(tree):
        dotted: list[str] = []
        if isinstance(node, ast.Import):
            dotted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            base = node.module or ""
            dotted = [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
            if any(a.name == "*" for a in node.names):
                out.append(f"{path}: from {base} import * (names no check sees)")
        for mod in dotted:
            parts = mod.split(".")
            if any(".".join(parts[: i + 1]) in extra for i in range(len(parts))):
                continue  # the problem's own helpers, or a module its policy allows
            if parts[0] in FORBIDDEN_PY_MODULES:
                out.append(f"{path}: import of {mod!r} ({FORBIDDEN_PY_MODULES[parts[0]]})")
            elif parts[0] not in ALLOWED_PY_MODULES:
                out.append(
                    f"{path}: import of {mod!r} (not an allowed module: escape or tampering)"
                )
            for part in parts[1:]:
                why = FORBIDDEN_PY_ATTRS.get(part) or FORBIDDEN_PY_NAMES.get(part)
                if part in FORBIDDEN_PY_MODULES:
                    why = FORBIDDEN_PY_MODULES[part]
                if why is None and _is_dunder(part):
                    why = "introspection escape"
                if why:
                    out.append(f"{path}: import of {mod!r} ({part!r}: {why})")
    return out


def _module_names(tree: ast.AST) -> set[str]:
    """Names bound to module objects: ``import X [as Y]`` and ``from P import <submodule>``."""
    mods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mods |= {a.asname or a.name for a in node.names if a.name in SUBMODULES}
    return mods


def _module_value_violations(path: str, tree: ast.AST) -> list[str]:
    """A module object used as a value (``_m = np``, ``f(np)``, ``x = numba.cuda``): a second
    name for a module escapes every rule keyed on its import (numpy_alias_patch)."""
    mods = _module_names(tree)
    parent: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[id(child)] = node
    out: list[str] = []
    for node in ast.walk(tree):
        is_module = isinstance(node, ast.Name) and node.id in mods
        if isinstance(node, ast.Attribute) and node.attr in SUBMODULES:
            chain = _chain(node)
            is_module = bool(chain) and chain[0] in mods  # type: ignore[index]
        if not is_module:
            continue
        up = parent.get(id(node))
        if isinstance(up, ast.Attribute) and up.value is node:
            continue  # np.sum, cuda.jit: an attribute of the module
        out.append(f"{path}: module {ast.unparse(node)!r} used as a value (aliases a module)")
    return out


def _store_violations(path: str, tree: ast.AST) -> list[str]:
    """Attribute writes other than ``self.x`` (skip_checks: monkeypatching numpy, numba or an
    argument's ``copy_to_host`` to defer the work past the timer or forge what is read)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            root: ast.AST = node
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id == "self" and node.value is root):
                out.append(
                    f"{path}: assigns {ast.unparse(node)} (monkeypatching a module, or "
                    "rewriting an argument's attributes)"
                )
    return out


def _annotation_violations(path: str, tree: ast.AST) -> list[str]:
    """String annotations and postponed evaluation: ``typing.get_type_hints`` evaluates them, so
    a string annotation is code no rule parsed (annotation_eval)."""
    out: list[str] = []
    annotations: list[ast.AST] = []
    for node in ast.walk(tree):
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if future and any(a.name == "annotations" for a in node.names):  # type: ignore[union-attr]
            out.append(f"{path}: from __future__ import annotations (evaluated annotations)")
        if isinstance(node, ast.arg) and node.annotation:
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    for ann in annotations:
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(ann)):
            out.append(f"{path}: string annotation {ast.unparse(ann)!r} (evaluated as code)")
    return out


def _match_violations(path: str, tree: ast.AST) -> list[str]:
    """Class patterns read attributes by name: ``case C(x)`` does ``getattr(subject, name)`` for
    each name in ``C.__match_args__`` (match_args_getattr); ``case C(os=m)`` reads ``os``."""
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.MatchClass):
            continue
        cls = node.cls.id if isinstance(node.cls, ast.Name) else None
        if node.patterns and cls not in SELF_MATCHING:
            out.append(
                f"{path}: positional class pattern {ast.unparse(node)!r} (attribute access by "
                "the names in __match_args__)"
            )
        for attr in node.kwd_attrs:
            if attr in FORBIDDEN_PY_ATTRS or attr.startswith("__"):
                why = FORBIDDEN_PY_ATTRS.get(attr, "introspection escape")
                out.append(f"{path}: attribute {attr!r} in a match pattern ({why})")
    return out


def _format_violations(path: str, tree: ast.AST) -> list[str]:
    """Format strings whose fields read attributes or items (``"{0.__globals__}".format(f)``
    is a getattr by a string)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if "{" not in node.value:
            continue
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(node.value) if f]
        except ValueError:
            continue
        if any("." in f or "[" in f for f in fields):
            out.append(f"{path}: format field reading an attribute or item in {node.value!r}")
    return out


def _aliases(tree: ast.AST) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                head = a.name.split(".")[0]
                aliases[a.asname or head] = a.name if a.asname else head
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _forbidden(path: str, tree: ast.AST, entries: list[str]) -> list[str]:
    """Names used, with import aliases resolved (``np.sort`` is ``numpy.sort``; ``cuda`` from
    ``from numba import cuda`` is ``numba.cuda``), against the forbidden entries. A NumPy entry
    also forbids its method spelling on any value (``x.cumsum()`` for ``numpy.cumsum``) and, for
    a ufunc method, every reduction of that ufunc (``np.maximum.accumulate`` for
    ``numpy.maximum.reduce``): banned_call_as_method."""
    if not entries:
        return []
    aliases = _aliases(tree)
    pool = set(aliases.values())
    methods: set[str] = set()  # ".cumsum", ".maximum.accumulate" on a non-module value
    for node in ast.walk(tree):
        chain = _chain(node) if isinstance(node, ast.Attribute) else None
        if chain is None and isinstance(node, ast.Attribute):
            chain = ["<value>", *(_chain_attrs(node))]
        if chain and (chain[0] not in aliases or aliases[chain[0]].split(".")[0] == "numpy"):
            tail = chain[1:]
            methods |= {"." + ".".join(tail[i:]) for i in range(len(tail))}
    for name in py_names(tree):
        head, _, rest = name.partition(".")
        pool |= {name, aliases.get(head, head) + (f".{rest}" if rest else "")}
    out = []
    for entry in entries:
        prefix = entry.rstrip("*")
        if entry.endswith("*"):
            hit = any(n.startswith(prefix) for n in pool)
        else:
            hit = any(n == prefix or n.startswith(prefix + ".") for n in pool)
        if not hit and prefix.startswith("numpy.") and not entry.endswith("*"):
            hit = bool(_method_spellings(prefix) & methods)
        if hit:
            out.append(f"{path}: uses {prefix}, which this problem forbids")
    return out


def _chain_attrs(node: ast.Attribute) -> list[str]:
    attrs: list[str] = []
    cur: ast.AST = node
    while isinstance(cur, ast.Attribute):
        attrs.append(cur.attr)
        cur = cur.value
    return list(reversed(attrs))


def _method_spellings(entry: str) -> set[str]:
    """``numpy.cumsum`` -> {".cumsum"}; ``numpy.add.accumulate`` -> {".add.reduce", ...};
    ``numpy.add`` -> nothing (no array method of that name)."""
    parts = entry.split(".")[1:]
    if len(parts) == 2 and parts[1] in UFUNC_METHODS:
        return {f".{parts[0]}.{m}" for m in UFUNC_METHODS}
    if len(parts) == 1 and parts[0] in NDARRAY_METHODS:
        return {f".{parts[0]}"}
    return set()
