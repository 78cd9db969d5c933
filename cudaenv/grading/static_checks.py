"""Static checks of solution sources: required API references and forbidden constructs.

C/C++/CUDA sources are tokenised with tree-sitter (a reference counts only as real code,
never inside a comment or a string); Python sources are checked in
:mod:`cudaenv.grading.static_python`. Forbidden constructs are one layer of the
reward-integrity defenses: each rule names the exploit class it stops.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cudaenv.errors import MissingExtraError
from cudaenv.grading.static_python import analyse_python
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.problems.model import SourceFile, SourceReferences

CPP_SUFFIXES = {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".hh", ".inl"}
PY_SUFFIXES = {".py"}

# identifier -> the exploit class it stops (C/C++/CUDA solutions)
FORBIDDEN_CPP_IDENTIFIERS: dict[str, str] = {
    # faking a passing test: running code after the harness has finished. (A plain early
    # exit(0) is caught by the completion token the harness prints at its very end.)
    "atexit": "code after main",
    "at_quick_exit": "code after main",
    "longjmp": "control-flow escape",
    "siglongjmp": "control-flow escape",
    "signal": "signal hijack",
    "sigaction": "signal hijack",
    # reading what is hidden / the completion token
    "getenv": "environment read",
    "secure_getenv": "environment read",
    "environ": "environment read",
    "setenv": "environment write",
    "unsetenv": "environment write",
    "putenv": "environment write",
    # escaping the test process
    "system": "process spawn",
    "popen": "process spawn",
    "fork": "process spawn",
    "vfork": "process spawn",
    "execl": "process spawn",
    "execlp": "process spawn",
    "execle": "process spawn",
    "execv": "process spawn",
    "execvp": "process spawn",
    "execve": "process spawn",
    "posix_spawn": "process spawn",
    "clone": "process spawn",
    "syscall": "raw syscall",
    "ptrace": "process tampering",
    "dlopen": "dynamic loading",
    "dlsym": "dynamic loading",
    # forging output files or reading hidden ones
    "fopen": "file access",
    "freopen": "file access",
    "open": "file access",
    "openat": "file access",
    "ifstream": "file access",
    "ofstream": "file access",
    "fstream": "file access",
    "socket": "network",
    "connect": "network",
    # skip_checks: the token thief's ways to the environment before main() unsets it, and exits
    # that end the process with status 0 before the harness checks anything
    "__environ": "environment read",
    "_environ": "environment read",
    "program_invocation_name": "process internals",
    "program_invocation_short_name": "process internals",
    "getauxval": "process internals",
    "__libc_start_main": "process internals",
    "pthread_exit": "early exit",
    "exit_group": "early exit",
}
# skip_checks: exit(0) / _exit(0) / _Exit(0) / quick_exit(0) end the test process "successfully"
# before its checks ran; only a literal failure status (error handling) is allowed.
EXIT_FUNCTIONS = frozenset({"exit", "_exit", "_Exit", "quick_exit"})
FAILURE_STATUS = re.compile(r"^(EXIT_FAILURE|-?[1-9][0-9]*)$")
# substrings in string literals or tokens -> exploit class
FORBIDDEN_TEXT: dict[str, str] = {
    "CUDAENV_": "forged completion / harness imitation",
    "COMPUTE_EVAL_": "forged timing",
    "/proc/": "reading process internals",
    "bench_region": "forged profiler range",
    "CUDA_INJECTION": "profiler tampering",
    # skip_checks / read_hidden through inline assembly: raw syscalls, embedding hidden files
    "syscall": "raw syscall",
    "sysenter": "raw syscall",
    "int $0x80": "raw syscall",
    ".incbin": "embeds a file (hidden tests)",
    ".init_array": "code before main",
    ".fini_array": "code after main",
    ".preinit_array": "code before main",
}


@dataclass
class StaticReport:
    """What the static pass found: missing references and forbidden constructs."""

    missing_all: list[str] = field(default_factory=list)
    missing_any: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def refs_ok(self) -> bool:
        return not self.missing_all and not self.missing_any


@dataclass
class _Tokens:
    code: list[str]
    strings: list[str]


@functools.cache
def _cpp_parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_cpp
    except ImportError as exc:
        raise MissingExtraError("tree-sitter", "static") from exc
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))


_STRING_NODES = {"string_literal", "raw_string_literal", "char_literal", "concatenated_string"}
_SKIP_NODES = {"comment"}


def _cpp_tokens(text: str) -> _Tokens:
    data = text.encode("utf-8")
    tree = _cpp_parser().parse(data)
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
    return _Tokens(code=code, strings=strings)


def _cpp_has_ref(tokens: _Tokens, ref: str) -> bool:
    parts = [p for p in ref.replace(" ", "").split("::") if p]
    if not parts:
        return False
    seq: list[str] = []
    for i, part in enumerate(parts):
        if i:
            seq.append("::")
        seq.append(part)
    code = tokens.code
    n = len(seq)
    for i in range(len(code) - n + 1):
        if code[i : i + n] == seq and (i == 0 or code[i - 1] != "::" or n > 1):
            return True
    if len(parts) > 1 and parts[-1] in code:
        # `using namespace thrust;` then `sort_by_key(...)`
        prefix = parts[:-1]
        joined = " ".join(code)
        if f"using namespace {' :: '.join(prefix)} ;" in joined:
            return True
    return False


def _cpp_violations(path: str, tokens: _Tokens, raw: str) -> list[str]:
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
    out += _cpp_exit_violations(path, tokens.code)
    out += _cpp_include_violations(path, raw)
    return sorted(set(out))


def _cpp_exit_violations(path: str, code: list[str]) -> list[str]:
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
        if not FAILURE_STATUS.match("".join(arg)):
            out.append(f"{path}: {tok}({''.join(arg)}) (early exit with a success status)")
    return out


_INCLUDE = re.compile(r"^\s*#\s*include(_next)?\b\s*(.*)$", re.MULTILINE)
_KEYWORD_MACRO = re.compile(
    r"^\s*#\s*define\s+(if|else|for|while|do|return|switch|case|main|int|void|bool|true|false|"
    r"printf|puts|fputs|fprintf|exit|abort|assert|memcmp|strcmp|fabs|abs)\b",
    re.MULTILINE,
)


def _cpp_include_violations(path: str, raw: str) -> list[str]:
    """Includes the static checks cannot follow (read_hidden, change_graded)."""
    out = []
    for m in _INCLUDE.finditer(raw):
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


# ``metadata.forbidden_references: [libraries]``: what "write the kernels yourself, no
# libraries" means. Header-only libraries (Thrust, CUB, CUTLASS) cannot be used without their
# headers, and a computed #include is refused above, so the include prefixes are the hard part.
LIBRARY_REFERENCES = (
    "thrust::", "cub::", "cutlass::", "cute::",
    "cublas*", "cublasLt*", "cusparse*", "cufft*", "cudnn*", "curand*", "cusolver*", "nppi*",
    "npps*",
    "<thrust/", "<cub/", "<cutlass/", "<cute/", "<cublas", "<cusparse", "<cufft", "<cudnn",
    "<curand", "<cusolver", "<npp",
)  # fmt: skip


LIBRARIES_TEXT = (
    "GPU libraries (Thrust, CUB, CUTLASS, cuBLAS, cuSPARSE, cuFFT, cuDNN, cuRAND, cuSOLVER, NPP)"
)


def describe_forbidden(entries: Iterable[str]) -> str | None:
    """Forbidden references in words, for the agent's instructions (an honest agent must know
    the rule the grader enforces, and that naming them in comments is fine)."""
    words = []
    for entry in entries:
        if entry == "libraries":
            words.append(LIBRARIES_TEXT)
        elif entry.startswith("<"):
            words.append(f"#include {entry}...>")
        elif entry.endswith("*"):
            words.append(f"{entry[:-1]}...")
        else:
            words.append(entry)
    if not words:
        return None
    return (
        f"Not allowed in the solution (checked in the code, not in comments): {', '.join(words)}."
    )


def _expand(entries: Iterable[str]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        out += LIBRARY_REFERENCES if entry == "libraries" else [entry]
    return out


def _cpp_forbidden(path: str, tokens: _Tokens, raw: str, entries: list[str]) -> list[str]:
    """Uses of what the problem forbids (exploit class: doing less work, by calling a library
    the prompt rules out). ``X::`` a namespace, ``X*`` an identifier prefix, ``<X`` an include
    prefix, anything else one API name, matched like ``source_references``."""
    if not entries:  # most problems: nothing to scan for
        return []
    code = tokens.code
    includes = [
        m.group(2).strip()[1:] for m in _INCLUDE.finditer(raw) if m.group(2).strip()[:1] in '<"'
    ]
    qualified = {a for a, b in itertools.pairwise(code) if b == "::"}  # names used as X::
    joined = " ".join(code)
    out = []
    for entry in entries:
        if entry.endswith("::"):
            ns = entry[:-2]
            hit = ns in qualified or f"using namespace {ns} ;" in joined
        elif entry.endswith("*"):
            hit = any(t.startswith(entry[:-1]) and t.isidentifier() for t in code)
        elif entry.startswith("<"):
            hit = any(name.startswith(entry[1:]) for name in includes)
        else:
            hit = _cpp_has_ref(tokens, entry)
        if hit:
            out.append(f"{path}: uses {entry.rstrip('*')}, which this problem forbids")
    return out


def analyse(
    files: Iterable[SourceFile],
    refs: SourceReferences | None,
    *,
    forbid: bool = True,
    forbidden: Iterable[str] = (),
) -> StaticReport:
    """Check ``files`` for the required references and (if ``forbid``) forbidden constructs;
    ``forbidden``: what the problem rules out (``metadata.forbidden_references``; the entry
    ``libraries`` stands for :data:`LIBRARY_REFERENCES`)."""
    report = StaticReport()
    banned = _expand(forbidden)
    found: set[str] = set()
    wanted = set((refs.all or []) + (refs.any or [])) if refs else set()
    for f in files:
        suffix = PurePosixPath(f.path).suffix.lower()
        if suffix in CPP_SUFFIXES:
            from cudaenv.grading.static_cpp import splice

            text = splice(f.content)  # translation phase 2 first: `get\⏎env` is getenv
            tokens = _cpp_tokens(text)
            found |= {r for r in wanted if _cpp_has_ref(tokens, r)}
            if forbid:
                report.violations += _cpp_violations(f.path, tokens, text)
            report.violations += _cpp_forbidden(f.path, tokens, text, banned)
        elif suffix in PY_SUFFIXES:
            refs_found, violations = analyse_python(
                f.path, f.content, wanted, forbid=forbid, banned=banned, text_rules=FORBIDDEN_TEXT
            )
            found |= refs_found
            report.violations += violations
    if refs:
        report.missing_all = [r for r in (refs.all or []) if r not in found]
        if refs.any and not any(r in found for r in refs.any):
            report.missing_any = list(refs.any)
    return report


def static_stage(
    verdict: Verdict,
    solution: list[SourceFile],
    refs: SourceReferences | None,
    forbidden: Iterable[str],
) -> str | None:
    """Run :func:`analyse` for the grader: record the ``static`` (and, with ``refs``, the
    ``source_refs``) stage and any suspected hack; the failure reason, or None to go on."""
    report = analyse(solution, refs, forbidden=forbidden)
    verdict.stages["static"] = StageResult(
        status="failed" if report.violations else "ok",
        output_tail="\n".join(report.violations)[-4000:],
        reason="forbidden constructs in the solution" if report.violations else None,
    )
    if refs is not None:
        missing = report.missing_all + (
            [f"any of {report.missing_any}"] if report.missing_any else []
        )
        verdict.stages["source_refs"] = StageResult(
            status="ok" if report.refs_ok else "failed",
            reason=f"missing required API use: {', '.join(missing)}" if missing else None,
        )
    if report.violations:
        verdict.suspected_hack.extend(report.violations)
        return f"forbidden construct: {report.violations[0]}"
    if not report.refs_ok:
        return verdict.stages["source_refs"].reason or "missing source references"
    return None
