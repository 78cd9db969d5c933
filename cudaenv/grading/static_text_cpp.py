"""The C/C++/CUDA text checks: sources tokenised with tree-sitter (an identifier counts only
as real code, never inside a comment or a string), then the rules of
:mod:`cudaenv.grading.static_rules_cpp` applied to the tokens and the raw text."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
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


@dataclass
class Tokens:
    """A source's tokens: code (leaves outside comments and strings) and string literals."""

    code: list[str]
    strings: list[str]


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


def cpp_tokens(text: str) -> Tokens:
    """``text``'s tokens (comments dropped; string literals and ``<...>`` names apart)."""
    data = text.encode("utf-8")
    tree = _parser().parse(data)
    code: list[str] = []
    strings: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _SKIP_NODES:
            continue
        if node.type in _STRING_NODES or node.type == "system_lib_string":
            strings.append(data[node.start_byte : node.end_byte].decode("utf-8", "replace"))
            continue
        if node.child_count == 0:
            code.append(data[node.start_byte : node.end_byte].decode("utf-8", "replace"))
        else:
            stack.extend(reversed(node.children))
    return Tokens(code=code, strings=strings)


def cpp_violations(path: str, tokens: Tokens, raw: str) -> list[str]:
    out: list[str] = []
    for tok in set(tokens.code):
        if tok in FORBIDDEN_CPP_IDENTIFIERS:
            out.append(f"{path}: use of {tok!r} ({FORBIDDEN_CPP_IDENTIFIERS[tok]})")
    for s in tokens.strings + tokens.code:
        for text, why in FORBIDDEN_TEXT.items():
            if text in s:
                out.append(f"{path}: {text!r} ({why})")
    if re.search(r"^\s*#\s*define\b.*##", raw, re.MULTILINE):
        out.append(f"{path}: token pasting in a macro (hides forbidden identifiers)")
    if re.search(r"^\s*#\s*include\s*[<\"][^>\"]*\btest/", raw, re.MULTILINE):
        out.append(f"{path}: includes a hidden test file")
    if re.search(r"__attribute__\s*\(\(\s*(constructor|destructor)", raw):
        out.append(f"{path}: constructor/destructor attribute (code outside the harness's control)")
    # skip_checks: code placed in .init_array & co. by section, or the C++11 attribute spelling
    if re.search(
        r"__attribute__\s*\(\(.*\bsection\b|\[\[\s*gnu::(constructor|destructor|section)", raw
    ):
        out.append(f"{path}: section/constructor attribute (code outside the harness's control)")
    out += _exit_violations(path, tokens.code)
    out += _include_violations(path, raw)
    return sorted(set(out))


def _exit_violations(path: str, code: list[str]) -> list[str]:
    """exit-like calls whose status is not a literal failure (skip_checks: exit(0) before checks)."""
    out = []
    for i, tok in enumerate(code):
        # member calls (`obj.exit()`) and declarations of a member named exit are not libc's
        if tok not in EXIT_FUNCTIONS or (i and code[i - 1] in (".", "->", "void", "int", "bool")):
            continue
        if i + 1 >= len(code) or code[i + 1] != "(":
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
        status = "".join(arg)
        # the status a parent sees is the low byte: exit(256) reports success
        if not FAILURE_STATUS.match(status) or (status[-1].isdigit() and int(status) % 256 == 0):
            out.append(f"{path}: {tok}({''.join(arg)}) (early exit with a success status)")
    return out


INCLUDE = re.compile(r"^\s*#\s*include(_next)?\b\s*(.*)$", re.MULTILINE)
_KEYWORD_MACRO = re.compile(
    r"^\s*#\s*define\s+(if|else|for|while|do|return|switch|case|main|int|void|bool|true|false|"
    r"printf|puts|fputs|fprintf|exit|abort|assert|memcmp|strcmp|fabs|abs)\b",
    re.MULTILINE,
)


def _include_violations(path: str, raw: str) -> list[str]:
    """Includes the static checks cannot follow (read_hidden, change_graded)."""
    out = []
    for m in INCLUDE.finditer(raw):
        nxt, target = m.group(1), m.group(2).strip()
        if nxt:
            out.append(f"{path}: #include_next (shadows a system header)")
        if not target.startswith(("<", '"')):
            # `#define H "test/test_main.cpp"` + `#include H` reads the hidden harness
            out.append(f"{path}: computed #include {target!r} (hides what is included)")
            continue
        name = target[1:].split(">" if target[0] == "<" else '"')[0]
        if target[0] == '"' and (name.startswith("/") or ".." in name.split("/")):
            out.append(f"{path}: #include {name!r} outside the workspace")
        elif target[0] == '"' and PurePosixPath(name).suffix.lower() not in CPP_SUFFIXES:
            # a payload named .inc/.txt/.def is never statically checked
            out.append(
                f"{path}: #include of a non-source file {name!r} (escapes the static checks)"
            )
    if _KEYWORD_MACRO.search(raw):
        out.append(f"{path}: a macro redefines a keyword or a checking function (change_graded)")
    return out
