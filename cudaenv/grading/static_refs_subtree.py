"""``source_references`` as ComputeEval reads them: a reference is found when its exact text
is a whole node of the file's syntax tree (not inside a comment, a string or a parse error),
in any solution file whose language a grammar parses (the ``subtree`` reading of
:class:`cudaenv.problems.policy.GradingPolicy`).

Why a second reading: our own (:func:`cudaenv.grading.static_refs.cpp_has_ref`) matches C/C++
code tokens and Python names, so ``Graph`` is missing from ``fe::graph::Graph`` and a keyword
argument ``flush_to_zero=True`` names nothing; ComputeEval's problems were written against its
reading, and a problem imported from it is graded as it grades. Languages follow the file
name as GitHub's linguist maps it: ``.cu``/``.cuh`` CUDA, C and C++ sources and headers C++
(ComputeEval picks C for ``.c`` and, by fewest parse errors, C or C++ for ``.h``; we parse
both with the C++ grammar), ``.py`` Python; a file of any other kind is not searched, as
upstream.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from cudaenv.errors import MissingExtraError
from cudaenv.problems.model import SourceFile

_GRAMMAR = {
    **dict.fromkeys((".cu", ".cuh"), "cuda"),
    **dict.fromkeys((".py", ".pyi", ".pyw"), "python"),
    **dict.fromkeys(
        (".c", ".h", ".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".inl",
         ".ipp", ".tcc", ".tpp"),
        "cpp",
    ),
}  # fmt: skip


@functools.cache
def _parser(grammar: str) -> Any:
    try:
        import tree_sitter

        if grammar == "cuda":
            import tree_sitter_cuda as lang
        elif grammar == "python":
            import tree_sitter_python as lang
        else:
            import tree_sitter_cpp as lang
    except ImportError as exc:
        raise MissingExtraError("tree-sitter grammars", "static") from exc
    return tree_sitter.Parser(tree_sitter.Language(lang.language()))


def grammar_for(path: str) -> str | None:
    """The grammar a file is parsed with, or None (not searched)."""
    return _GRAMMAR.get(PurePosixPath(path).suffix.lower())


def _whole_node(root: Any, start: int, end: int) -> bool:
    node = root.descendant_for_byte_range(start, end)
    return (
        node is not None
        and not node.is_error
        and not node.is_extra
        and not node.is_missing
        and node.start_byte == start
        and node.end_byte == end
    )


def found_in(content: str, grammar: str, wanted: Iterable[str]) -> set[str]:
    """The references of ``wanted`` whose text is a whole syntax node of ``content``."""
    data = content.encode("utf-8")
    root = _parser(grammar).parse(data).root_node
    found: set[str] = set()
    for ref in wanted:
        target = ref.encode("utf-8")
        if not target:
            continue
        start = data.find(target)
        while start != -1:
            if _whole_node(root, start, start + len(target)):
                found.add(ref)
                break
            start = data.find(target, start + len(target))
    return found


def subtree_refs(files: Iterable[SourceFile], wanted: set[str]) -> set[str]:
    """The references found in any of ``files`` (the solution's, whatever their kind)."""
    found: set[str] = set()
    for f in files:
        grammar = grammar_for(f.path)
        if grammar is not None and wanted - found:
            found |= found_in(f.content, grammar, wanted - found)
    return found
