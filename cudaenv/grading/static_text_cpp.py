"""The C/C++/CUDA text checks: sources tokenised with tree-sitter (an identifier counts only
as real code, never inside a comment or a string), then the rules of
:mod:`cudaenv.grading.static_rules_cpp` applied to the tokens and the raw text."""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cudaenv.errors import MissingExtraError
from cudaenv.grading.static_rules_cpp import (
    CPP_SUFFIXES,
    EXIT_FUNCTIONS,
    FAILURE_STATUS,
    FORBIDDEN_CPP_IDENTIFIERS,
    FORBIDDEN_TEXT,
)
from cudaenv.problems.policy import ALL_CHECKS


@dataclass(frozen=True)
class ExitCall:
    """An exit-like call: its name, its status tokens, and the identifiers of the conditions
    that guard it (``if (err != cudaSuccess) exit(err);`` is guarded by ``err``)."""

    name: str
    status: tuple[str, ...]
    guards: frozenset[str]


@dataclass
class Tokens:
    """A source's tokens: code (leaves outside comments and strings) and string literals;
    ``declared``: names the source declares as variables, parameters or fields (a parameter
    called ``signal`` is not libc's); ``exits``: its exit-like calls."""

    code: list[str]
    strings: list[str]
    declared: set[str] = field(default_factory=set)
    exits: list[ExitCall] = field(default_factory=list)


@functools.cache
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_cpp
    except ImportError as exc:
        raise MissingExtraError("tree-sitter", "static") from exc
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))


_STRING_NODES = {"string_literal", "raw_string_literal", "char_literal", "concatenated_string"}
_SKIP_NODES = {"comment"}
# nodes whose `declarator` names a variable, parameter or field (a function_declarator is not
# one of them: `int signal(int);` declares libc's function, not a local)
_DECLARING = {
    "init_declarator", "parameter_declaration", "optional_parameter_declaration", "declaration",
    "pointer_declarator", "reference_declarator", "array_declarator",
}  # fmt: skip
_NESTED_DECLARATORS = {
    "pointer_declarator", "reference_declarator", "array_declarator", "init_declarator"
}  # fmt: skip
_GUARDING = {"if_statement", "while_statement", "conditional_expression"}


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _is_declarator(node: Any) -> bool:
    """Whether identifier ``node`` names a parameter or a local variable (a block-scope,
    non-``extern`` declaration): that name is the source's own, not the library's.
    ``extern char** __environ;`` or a namespace-scope definition is not."""
    parent = node.parent
    if parent is None or parent.type not in _DECLARING:
        return False
    if parent.type != "reference_declarator":  # `float& x`: the only named child
        named = parent.child_by_field_name("declarator")
        if named is None or named.start_byte != node.start_byte:
            return False
    up = parent
    while up is not None and up.type in _NESTED_DECLARATORS:
        up = up.parent  # through pointer/array/init declarators to what declares
    if up is None:
        return False
    if up.type in ("parameter_declaration", "optional_parameter_declaration"):
        return True
    if up.type != "declaration" or any(
        c.type == "storage_class_specifier" and c.text == b"extern" for c in up.children
    ):
        return False
    block = up.parent
    while block is not None and block.type != "compound_statement":
        block = block.parent
    return block is not None


def _exit_call(data: bytes, node: Any) -> ExitCall | None:
    """The exit-like call ``node`` (a call_expression) makes, with the identifiers of the
    conditions around it."""
    fn = node.child_by_field_name("function")
    if fn is None:
        return None
    if fn.type == "qualified_identifier":  # std::exit
        fn = fn.child_by_field_name("name")
    if fn is None or fn.type != "identifier" or _text(data, fn) not in EXIT_FUNCTIONS:
        return None
    args = node.child_by_field_name("arguments")
    status = tuple(_leaves(data, args))[1:-1] if args is not None else ()
    guards: set[str] = set()
    up = node.parent
    while up is not None:
        if up.type in _GUARDING and (cond := up.child_by_field_name("condition")) is not None:
            guards |= _failure_tested(list(_leaves(data, cond)))
        up = up.parent
    return ExitCall(_text(data, fn), status, frozenset(guards))


_SUCCESS_CONSTANT = re.compile(r"^(0|cudaSuccess|CUDA_SUCCESS|EXIT_SUCCESS|\w*_SUCCESS)$")


def _failure_tested(cond: list[str]) -> set[str]:
    """The identifiers a condition found to differ from success: ``err != cudaSuccess``,
    ``CUBLAS_STATUS_SUCCESS != st``, ``(err)``. (``err == 0`` or ``err != 1`` prove nothing.)"""
    bare = [t for t in cond if t not in "()"]
    if len(bare) == 1 and bare[0].isidentifier():
        return {bare[0]}
    out = set()
    for i in range(1, len(cond) - 1):
        if cond[i] != "!=":
            continue
        left, right = cond[i - 1], cond[i + 1]
        if left.isidentifier() and _SUCCESS_CONSTANT.match(right):
            out.add(left)
        elif right.isidentifier() and _SUCCESS_CONSTANT.match(left):
            out.add(right)
    return out


def _leaves(data: bytes, node: Any) -> Iterable[str]:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.child_count == 0:
            yield _text(data, n)
        else:
            stack.extend(reversed(n.children))


def cpp_tokens(text: str) -> Tokens:
    """``text``'s tokens (comments dropped; string literals and ``<...>`` names apart)."""
    data = text.encode("utf-8")
    tree = _parser().parse(data)
    out = Tokens(code=[], strings=[])
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _SKIP_NODES:
            continue
        if node.type in _STRING_NODES or node.type == "system_lib_string":
            out.strings.append(_text(data, node))
            continue
        if node.type == "call_expression" and (call := _exit_call(data, node)) is not None:
            out.exits.append(call)
        if node.child_count == 0:
            out.code.append(_text(data, node))
            if node.type == "identifier" and _is_declarator(node):
                out.declared.add(out.code[-1])
        else:
            stack.extend(reversed(node.children))
    return out


def cpp_violations(
    path: str,
    tokens: Tokens,
    raw: str,
    checks: Collection[str] = ALL_CHECKS,
    dirs: Iterable[str] = (),
) -> list[str]:
    """The C/C++ text rules among ``checks`` (:data:`cudaenv.problems.policy.Check`);
    ``dirs``: the workspace's directories a quoted include may be resolved from (the build's
    ``-I`` candidates: where the problem's files live)."""
    out: list[str] = []
    if "cpp_identifiers" in checks:
        for tok in set(tokens.code) - tokens.declared:
            if tok in FORBIDDEN_CPP_IDENTIFIERS:
                out.append(f"{path}: use of {tok!r} ({FORBIDDEN_CPP_IDENTIFIERS[tok]})")
    if "cpp_text" in checks:
        for s in tokens.strings + tokens.code:
            for text, why in FORBIDDEN_TEXT.items():
                if text in s:
                    out.append(f"{path}: {text!r} ({why})")
    if "cpp_preprocessor" in checks:
        if re.search(r"^\s*#\s*define\b.*##", raw, re.MULTILINE):
            out.append(f"{path}: token pasting in a macro (hides forbidden identifiers)")
        if re.search(r"^\s*#\s*include\s*[<\"][^>\"]*\btest/", raw, re.MULTILINE):
            out.append(f"{path}: includes a hidden test file")
        out += _include_violations(path, raw, dirs)
    if "cpp_attributes" in checks:
        if re.search(r"__attribute__\s*\(\(\s*(constructor|destructor)", raw):
            out.append(
                f"{path}: constructor/destructor attribute (code outside the harness's control)"
            )
        # skip_checks: code placed in .init_array & co. by section, or the C++11 spelling
        if re.search(
            r"__attribute__\s*\(\(.*\bsection\b|\[\[\s*gnu::(constructor|destructor|section)",
            raw,
        ):
            out.append(
                f"{path}: section/constructor attribute (code outside the harness's control)"
            )
    if "cpp_exit" in checks:
        out += _exit_violations(path, tokens)
    return sorted(set(out))


_SUCCESS = {"0", "EXIT_SUCCESS", "false", "cudaSuccess", "nullptr", "NULL", ""}


def _exit_violations(path: str, tokens: Tokens) -> list[str]:
    """exit-like calls whose status may be success (skip_checks: exit(0) ends the test
    "passed" before its checks ran). A literal must be a failure (its low byte, what a parent
    sees, non-zero); a variable must be what the enclosing condition tested (error handling:
    ``if (err != cudaSuccess) exit(err);``); a macro constant other than ``EXIT_SUCCESS`` is
    left to the same rule on the preprocessed unit, where it is a literal. Every ``exit (`` of
    the token stream is judged; a call the parser did not see as one has no guard."""
    out = []
    code = tokens.code
    parsed = list(tokens.exits)  # in source order, like the tokens
    for i, tok in enumerate(code):
        # member calls (`obj.exit()`) and declarations of a member named exit are not libc's
        if tok not in EXIT_FUNCTIONS or (i and code[i - 1] in (".", "->", "void", "int", "bool")):
            continue
        if i + 1 >= len(code) or code[i + 1] != "(":
            if tok not in tokens.declared:
                out.append(f"{path}: {tok} used as a value (early exit)")
            continue
        depth, j, arg = 0, i + 1, []
        while j < len(code):
            depth += (code[j] == "(") - (code[j] == ")")
            if depth == 0:
                break
            if j > i + 1:
                arg.append(code[j])
            j += 1
        guards: frozenset[str] = frozenset()
        if parsed and parsed[0].name == tok and list(parsed[0].status) == arg:
            guards = parsed.pop(0).guards
        if not _exit_ok(arg, guards):
            out.append(f"{path}: {tok}({''.join(arg)}) (early exit with a success status)")
    return out


def _exit_ok(arg: list[str], guards: frozenset[str]) -> bool:
    status = "".join(arg)
    if FAILURE_STATUS.match(status):
        # the status a parent sees is the low byte: exit(256) reports success
        return not (status[-1].isdigit() and int(status) % 256 == 0)
    if status in _SUCCESS:
        return False
    names = {t for t in arg if t.isidentifier()}
    if names and names <= guards:
        return True  # the status is the error the condition around the call caught
    return len(arg) == 1 and status.isupper() and status.isidentifier()


INCLUDE = re.compile(r"^\s*#\s*include(_next)?\b\s*(.*)$", re.MULTILINE)
_KEYWORD_MACRO = re.compile(
    r"^\s*#\s*define\s+(if|else|for|while|do|return|switch|case|main|int|void|bool|true|false|"
    r"printf|puts|fputs|fprintf|exit|abort|assert|memcmp|strcmp|fabs|abs)\b",
    re.MULTILINE,
)


def _inside(path: str, name: str, dirs: Iterable[str]) -> bool:
    """Whether the quoted include ``name`` of ``path`` resolves inside the workspace from the
    including file's directory or one of ``dirs`` (``#include "../include/x.h"`` from the
    root resolves as ``include/../include/x.h`` through ``-I include``)."""
    if name.startswith("/"):
        return False
    for d in {posixpath.dirname(path), *dirs}:
        resolved = posixpath.normpath(posixpath.join(d or ".", name))
        if resolved != ".." and not resolved.startswith("../"):
            return True
    return False


def _include_violations(path: str, raw: str, dirs: Iterable[str] = ()) -> list[str]:
    """Includes the static checks cannot follow (read_hidden, change_graded)."""
    out = []
    dirs = list(dirs)
    for m in INCLUDE.finditer(raw):
        nxt, target = m.group(1), m.group(2).strip()
        if nxt:
            out.append(f"{path}: #include_next (shadows a system header)")
        if not target.startswith(("<", '"')):
            # `#define H "test/test_main.cpp"` + `#include H` reads the hidden harness
            out.append(f"{path}: computed #include {target!r} (hides what is included)")
            continue
        name = target[1:].split(">" if target[0] == "<" else '"')[0]
        if target[0] == '"' and not _inside(path, name, dirs):
            out.append(f"{path}: #include {name!r} outside the workspace")
        elif target[0] == '"' and PurePosixPath(name).suffix.lower() not in CPP_SUFFIXES:
            # a payload named .inc/.txt/.def is never statically checked
            out.append(
                f"{path}: #include of a non-source file {name!r} (escapes the static checks)"
            )
    if _KEYWORD_MACRO.search(raw):
        out.append(f"{path}: a macro redefines a keyword or a checking function (change_graded)")
    return out
