"""Static checks of solution sources: required API references and forbidden constructs.

C/C++/CUDA sources are tokenised with tree-sitter (a reference counts only as real code,
never inside a comment or a string); Python sources with the stdlib ``ast``. Forbidden
constructs are one layer of the reward-integrity defenses: each rule names the exploit
class it stops.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cudaenv.errors import MissingExtraError
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
FORBIDDEN_PY_MODULES: dict[str, str] = {
    m: "escape or tampering"
    for m in (
        "os",
        "sys",
        "subprocess",
        "shutil",
        "socket",
        "ctypes",
        "cffi",
        "importlib",
        "inspect",
        "gc",
        "builtins",
        "signal",
        "atexit",
        "threading",
        "multiprocessing",
        "pathlib",
        "io",
        "pickle",
        "marshal",
        "code",
        "runpy",
        "tempfile",
        "glob",
        "urllib",
        "http",
        "requests",
        "nvtx",
        "traceback",
        "faulthandler",
        "weakref",
    )
}
# A Python solution runs inside the harness's process, so a denylist of modules is never complete
# (operator.attrgetter reaches os through numba; linecache reads files; __main__ is the harness):
# only these imports are allowed (skip_checks, read_hidden).
_ALLOWED_PY = (
    "numpy numba math cmath functools itertools typing dataclasses __future__ enum collections "
    "warnings time random statistics abc numbers"
)
ALLOWED_PY_MODULES = frozenset(_ALLOWED_PY.split())
# Attribute names that reach files, processes, the interpreter or the harness's frames from
# allowed modules (numpy.fromfile, numpy.lib.npyio.DataSource, numba.core.config.os, ...).
_FILE_ATTRS = (
    "fromfile tofile memmap load loadtxt genfromtxt fromregex save savez savez_compressed savetxt "
    "DataSource npyio _datasource open serialize pickle"
)
_ESCAPE_ATTRS = (
    "os sys subprocess ctypes ctypeslib modules environ system popen spawn _exit exit "
    "import_module _getframe testing"
)
_FRAME_ATTRS = "f_globals f_locals f_back f_builtins f_code gi_frame gi_code tb_frame tb_next cr_frame ag_frame"
FORBIDDEN_PY_ATTRS: dict[str, str] = {
    **dict.fromkeys(_FILE_ATTRS.split(), "file access"),
    **dict.fromkeys(_ESCAPE_ATTRS.split(), "escape or tampering"),
    **dict.fromkeys(_FRAME_ATTRS.split(), "frame introspection (reaches the harness)"),
}
FORBIDDEN_PY_NAMES: dict[str, str] = {
    # skip_checks: ends the harness with status 0 before it checks anything
    **dict.fromkeys(
        ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException"),
        "ends the harness early",
    ),
    **{
        n: "escape or tampering"
        for n in (
            "exit",
            "quit",
            "open",
            "eval",
            "exec",
            "compile",
            "__import__",
            "globals",
            "locals",
            "vars",
            "getattr",
            "setattr",
            "delattr",
            "breakpoint",
            "input",
            "__builtins__",
            "__loader__",
            "__spec__",
            "__main__",
            "sys_modules",
        )
    },
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


def _py_names(tree: ast.AST) -> set[str]:
    """Dotted names used in the module (``cuda.atomic.add``, ``np``...)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            chain: list[str] = []
            cur: ast.AST = node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                chain.append(cur.id)
                parts = list(reversed(chain))
                for i in range(len(parts)):
                    names.add(".".join(parts[i:]))
                names.add(".".join(parts))
    return names


def _py_violations(path: str, tree: ast.AST) -> list[str]:
    out: list[str] = []
    for node in ast.walk(tree):
        mods: list[str] = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
            if node.level:
                out.append(f"{path}: relative import (escape or tampering)")
        for mod in mods:
            top = mod.split(".")[0]
            if top in FORBIDDEN_PY_MODULES:
                out.append(f"{path}: import of {mod!r} ({FORBIDDEN_PY_MODULES[top]})")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_PY_NAMES:
            out.append(f"{path}: use of {node.id!r} ({FORBIDDEN_PY_NAMES[node.id]})")
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("__")
            and node.attr
            not in (
                "__init__",
                "__name__",
                "__class__",
                "__len__",
                "__call__",
            )
        ):
            out.append(f"{path}: dunder attribute {node.attr!r} (introspection escape)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for text, why in FORBIDDEN_TEXT.items():
                if text in node.value:
                    out.append(f"{path}: string containing {text!r} ({why})")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_PY_ATTRS:
            out.append(f"{path}: attribute {node.attr!r} ({FORBIDDEN_PY_ATTRS[node.attr]})")
        if isinstance(node, ast.MatchClass):  # `case object(os=m)` reads attributes by name too
            for attr in node.kwd_attrs:
                if attr in FORBIDDEN_PY_ATTRS or attr.startswith("__"):
                    out.append(
                        f"{path}: attribute {attr!r} in a match pattern ({FORBIDDEN_PY_ATTRS.get(attr, 'introspection escape')})"
                    )
    out += _py_import_violations(path, tree)
    out += _py_store_violations(path, tree)
    return out


def _py_import_violations(path: str, tree: ast.AST) -> list[str]:
    """Imports outside ``ALLOWED_PY_MODULES`` (skip_checks, read_hidden: the allowlist)."""
    out: list[str] = []
    for node in ast.walk(tree):
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level:
            mods = [node.module or ""]
        for mod in mods:
            top = mod.split(".")[0]
            if top not in ALLOWED_PY_MODULES and top not in FORBIDDEN_PY_MODULES:
                out.append(
                    f"{path}: import of {mod!r} (not an allowed module: escape or tampering)"
                )
    return out


def _chain_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _py_store_violations(path: str, tree: ast.AST) -> list[str]:
    """Writes to attributes of imported modules (skip_checks: monkeypatching numpy, numba or the
    harness's helpers) and of a function's arguments (speed: replacing ``out.copy_to_host`` to
    defer the work past the timer, or to forge the result the harness reads)."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names}
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            root = _chain_root(node)
            if root in imported:
                out.append(
                    f"{path}: assigns {root}...{node.attr} (monkeypatching an imported module)"
                )
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = node.args
            params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} - {"self", "cls"}
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store | ast.Del):
                    root = _chain_root(sub)
                    if root in params:
                        out.append(
                            f"{path}: assigns {root}.{sub.attr} (rewriting an argument's attributes)"
                        )
    return out


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


def _py_forbidden(path: str, tree: ast.AST, entries: list[str]) -> list[str]:
    """Names used, with import aliases resolved (``np.sort`` is ``numpy.sort``; ``cuda`` from
    ``from numba import cuda`` is ``numba.cuda``), against the forbidden entries."""
    if not entries:
        return []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                head = a.name.split(".")[0]
                aliases[a.asname or head] = a.name if a.asname else head
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    pool = set(aliases.values())
    for name in _py_names(tree):
        head, _, rest = name.partition(".")
        pool |= {name, aliases.get(head, head) + (f".{rest}" if rest else "")}
    out = []
    for entry in entries:
        prefix = entry.rstrip("*")
        if entry.endswith("*"):
            hit = any(n.startswith(prefix) for n in pool)
        else:
            hit = any(n == prefix or n.startswith(prefix + ".") for n in pool)
        if hit:
            out.append(f"{path}: uses {prefix}, which this problem forbids")
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
            tokens = _cpp_tokens(f.content)
            found |= {r for r in wanted if _cpp_has_ref(tokens, r)}
            if forbid:
                report.violations += _cpp_violations(f.path, tokens, f.content)
            report.violations += _cpp_forbidden(f.path, tokens, f.content, banned)
        elif suffix in PY_SUFFIXES:
            try:
                tree = ast.parse(f.content)
            except SyntaxError as exc:
                if forbid:
                    report.violations.append(f"{f.path}: syntax error line {exc.lineno}")
                continue
            names = _py_names(tree)
            found |= {r for r in wanted if r in names}
            if forbid:
                report.violations += _py_violations(f.path, tree)
            report.violations += _py_forbidden(f.path, tree, banned)
    if refs:
        report.missing_all = [r for r in (refs.all or []) if r not in found]
        if refs.any and not any(r in found for r in refs.any):
            report.missing_any = list(refs.any)
    return report
