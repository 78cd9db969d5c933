"""Checks on what the compiler sees: the preprocessed translation unit, the host object and
the device code.

Why (root causes "the checks read the source as text" and "library rules match spellings"):
the preprocessor joins ``get\\⏎env`` and ``#inc\\⏎lude`` after a text check has looked, an asm
label or ``#pragma redefine_extname`` binds a harmless name to ``getenv``, and
``#include <cuda/../cub/cub.cuh>`` + ``namespace lib = cub;`` reaches CUB under no spelling the
text rules know. So, after the build and before any test, the grader compiles the SOLUTION's
own sources once more, in the grading sandbox, with the build command's compiler and flags
(``-c``, keeping the preprocessed TUs: nvcc's host and device ``.ii``, g++'s ``.ii``), and:

- runs the token checks of :mod:`cudaenv.grading.static_text_cpp` on the solution's own lines of
  every preprocessed TU (macros expanded, lines spliced, ``#if __CUDA_ARCH__`` resolved both
  ways); asm labels on declarations and ``redefine_extname`` pragmas fail;
- takes the headers from the TU's line markers (where the compiler resolved each include,
  the same list ``-M`` prints): one under a forbidden library's directory fails, however it
  was spelled; a namespace alias of a forbidden namespace fails;
- checks the host object's symbols (:mod:`cudaenv.grading.symbols`) against the allow-list
  (:mod:`cudaenv.grading.symbol_allowlist`);
- checks the device code's PTX (:mod:`cudaenv.grading.device_code`): no arithmetic narrower
  than the precision the problem fixes, no library kernels where libraries are forbidden.

Results are cached by content (the same solution, flags and toolchain give the same answer),
so a warm grading pays nothing. :func:`splice` (translation phase 2) also runs before the
plain text checks of ``analyse``. The script that compiles and reports, and its parser:
:mod:`cudaenv.grading.static_cpp_script`.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import secrets
import shlex
import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from cudaenv.grading.cache_files import write_atomic
from cudaenv.grading.device_code import fixed_precision, ptx_violations
from cudaenv.grading.stages import StageInfrastructureFault
from cudaenv.grading.static_cpp_plan import HEADERS, SOURCES, Plan, plan, splice
from cudaenv.grading.static_cpp_script import parse_report, script
from cudaenv.grading.static_refs import cpp_forbidden, expand
from cudaenv.grading.static_text_cpp import cpp_tokens, cpp_violations
from cudaenv.grading.symbol_allowlist import SymbolAllowlist, allowlist_for
from cudaenv.grading.symbols import (
    HEADER_CLASS_ALLOWANCES,
    claimed_scopes,
    defined_symbols,
    header_allowances,
    object_violations,
)
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.model import SourceFile
from cudaenv.problems.policy import ALL_CHECKS, STRICT, GradingPolicy

__all__ = [
    "Plan",
    "apply",
    "build_env",
    "check",
    "kept_outputs",
    "plan",
    "splice",
    "unit_violations",
]

_REDEFINE = re.compile(r"^\s*#\s*pragma\s+redefine_extname\b", re.MULTILINE)
_ASM = {"asm", "__asm__", "__asm"}
_NOT_DECLARATOR = {"volatile", "goto", "inline", "__volatile__", "return", "else", "do"}
VERSION = "19"  # bump when a rule changes: cached answers of older rules are not reused


_COMPILER_OUTPUT = re.compile(
    r"\.(o|i|ii|ptx|cubin|fatbin|module_id|gpu|reg\.c)$|\.cudafe1\.|\.fatbin\.c$"
)
_KEPT_SUFFIX = re.compile(
    r"\.(o|cpp1\.ii|cpp4\.ii|cudafe1\.(c|cpp|gpu|stub\.c)|fatbin|fatbin\.c|module_id|ptx|"
    r"(sm|compute)_\w+\.cubin)$"
)
_KEPT_LINK_NAME = re.compile(r"_dlink\.(o|fatbin|fatbin\.c|reg\.c|sm_\w+\.cubin)$")


def kept_outputs(paths: Iterable[str]) -> set[str]:
    """The files of ``paths`` that nvcc -keep left at the workspace root (every unit with a
    kept ``.cpp4.ii``): the check reads them, nothing else should (the build cache skips them)."""
    root = [p for p in paths if "/" not in p]
    stems = {p[: -len(".cpp4.ii")] for p in root if p.endswith(".cpp4.ii")}
    if not stems:
        return set()
    out = set()
    for p in root:
        m = _KEPT_SUFFIX.search(p)
        if (m and p[: m.start()] in stems) or _KEPT_LINK_NAME.search(p):
            out.add(p)
    return out


def build_env(build_command: str | None, env: Mapping[str, str]) -> dict[str, str]:
    """The build's environment, with nvcc told to keep its intermediates (``-keep``) when the
    build is a plain nvcc command: the check then reads the very host object and preprocessed
    TUs the build linked, instead of compiling the solution again (the cost: a second compile
    of every source, 30-70% of a build)."""
    out = dict(env)
    p = plan(build_command)
    first = (build_command or "").split(maxsplit=1)[:1]
    if p is not None and p.compiler == "nvcc" and first and first[0].endswith("nvcc"):
        out["NVCC_APPEND_FLAGS"] = f"{out.get('NVCC_APPEND_FLAGS', '')} -keep".strip()
    return out


def _library_header(header: str, banned: list[str]) -> str | None:
    """The forbidden include entry (``<cub/``, ``<cublas``) a resolved header falls under."""
    parts = PurePosixPath(posixpath.normpath(header)).parts
    for entry in banned:
        if not entry.startswith("<"):
            continue
        name = entry[1:]
        if name.endswith("/") and name[:-1] in parts[:-1]:
            return entry
        if not name.endswith("/") and parts and parts[-1].startswith(name):
            return entry
    return None


def _asm_labels(code: list[str]) -> bool:
    """``T f(...) __asm__("sym")``: an asm keyword right after a declarator (``)``, ``]`` or a
    name), not an asm statement (after ``;``, ``{``, ``}``, ``if (...)``, ``else``; or
    ``asm volatile``/``asm goto``)."""
    for i, tok in enumerate(code[1:], 1):
        prev = code[i - 1]
        if tok not in _ASM or (i + 1 < len(code) and code[i + 1] in _NOT_DECLARATOR):
            continue
        if prev == ")" and _opener(code, i - 1) in ("if", "while", "for", "switch"):
            continue  # `if (x) asm("trap;");`
        if prev in (")", "]") or (prev.isidentifier() and prev not in _NOT_DECLARATOR):
            return True
    return False


def _opener(code: list[str], close: int) -> str:
    """The token before the ``(`` that matches the ``)`` at ``close``."""
    depth = 0
    for j in range(close, -1, -1):
        depth += (code[j] == ")") - (code[j] == "(")
        if depth == 0:
            return code[j - 1] if j else ""
    return ""


def unit_violations(
    path: str,
    own: str,
    headers: Iterable[str],
    banned: list[str],
    checks: Collection[str] = ALL_CHECKS,
    dirs: Iterable[str] = (),
) -> list[str]:
    """Violations in the solution's own lines of one preprocessed TU and in its headers: the
    text rules of ``checks`` when they include ``preprocessed``, and what the problem forbids."""
    tokens = cpp_tokens(own)
    out = [f"{v} [preprocessed]" for v in cpp_forbidden(path, tokens, own, banned)]
    if "preprocessed" in checks:
        out += [f"{v} [preprocessed]" for v in cpp_violations(path, tokens, own, checks, dirs)]
        if _asm_labels(tokens.code):
            out.append(f"{path}: an asm label binds a declaration to another symbol")
        if _REDEFINE.search(own):
            out.append(f"{path}: #pragma redefine_extname binds a name to another symbol")
    namespaces = {e[:-2] for e in banned if e.endswith("::")}
    code = tokens.code
    for i in range(len(code) - 3):
        if code[i] == "namespace" and code[i + 2] == "=":
            target = code[i + 4] if code[i + 3] == "::" and i + 4 < len(code) else code[i + 3]
            if target in namespaces:
                out.append(f"{path}: namespace alias of {target}::, which this problem forbids")
    hits: dict[str, list[str]] = {}
    for header in dict.fromkeys(posixpath.normpath(h) for h in headers):  # in include order
        if (entry := _library_header(header, banned)) is not None:
            hits.setdefault(entry, []).append(header)
    for entry, found in hits.items():
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        out.append(f"{path}: includes {found[0]!r}{more} ({entry}...), which this problem forbids")
    return out


def _clean(box: Any, env: Mapping[str, str], report: str | None = None) -> None:
    """Remove the report and what nvcc -keep left (nothing of it reaches the tests); only the
    files of a unit with a kept ``.cpp4.ii`` (:func:`kept_outputs`), no exec when none."""
    names = sorted(kept_outputs(box.list_files())) + ([report] if report else [])
    if names:
        box.exec(f"rm -f {' '.join(shlex.quote(n) for n in names)}", timeout=30, env=dict(env))


def _key(
    p: Plan,
    files: list[SourceFile],
    banned: list[str],
    toolchain: str,
    allow: Any = None,
    precision: str | None = None,
    checks: Collection[str] = ALL_CHECKS,
) -> str:
    blob = json.dumps(
        [
            VERSION,
            sorted(checks),
            p.compiler,
            p.flags,
            banned,
            toolchain,
            None if allow is None else [allow.libraries, sorted(allow.extra)],
            precision,
            sorted((f.path, f.content) for f in files),
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_path(key: str) -> Any:
    from cudaenv.toolkit import cache_dir

    d = cache_dir() / "toolchain-checks"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{key}.json"


def check(
    box: Any,
    build_command: str | None,
    solution: list[SourceFile],
    all_files: list[SourceFile],
    env: Mapping[str, str],
    forbidden: Iterable[str],
    *,
    timeout: float,
    allow: SymbolAllowlist | None = None,
    precision: str | None = None,
    checks: Collection[str] = ALL_CHECKS,
) -> tuple[StageResult, list[str]] | None:
    """Compile the solution's C/C++ sources in ``box`` (files already written) and check what
    the compiler saw; None when nothing applies (no C/C++ solution source, no build).
    ``allow``: the undefined host symbols a solution may reference (None: deny-list only);
    ``precision``: the floating-point precision device code must keep (None: no rule);
    ``checks``: the grading policy's checks (what the problem forbids always applies)."""
    p = plan(build_command)
    own = [f for f in solution if PurePosixPath(f.path).suffix.lower() in SOURCES | HEADERS]
    if p is None or not own:
        return None
    forbidden = list(forbidden)
    banned, libraries = expand(forbidden), "libraries" in forbidden
    srcs = [(f.path, False) for f in own if PurePosixPath(f.path).suffix.lower() in SOURCES]
    units = srcs or [(f.path, True) for f in own]
    key = _key(p, all_files, banned, getattr(box, "toolchain_id", ""), allow, precision, checks)
    cached = _cache_path(key)
    if cached.exists():
        _clean(box, env)
        data = json.loads(cached.read_text())
        stage = StageResult(**{**data["stage"], "cached": True})
        return stage, list(data["violations"])
    started = time.perf_counter()
    report = f".cudaenv-toolchain-{secrets.token_hex(6)}.txt"
    names = "\n".join(posixpath.normpath(f.path) for f in own)
    kept = "NVCC_APPEND_FLAGS" in build_env(build_command, {})  # the build ran with -keep
    res = box.exec(
        script(p, units, report, kept), timeout=timeout, env={**env, "CUDAENV_OWN": names}
    )
    try:
        text = box.read_file(report).decode("utf-8", "replace")
    except OSError:
        text = ""
    _clean(box, env, report)
    seconds = round(time.perf_counter() - started, 4)
    if res.timed_out or res.exit_code != 0 or "@@SRC " not in text:
        # the solution's own build passed, so a check that could not run is the machinery's fault
        why = "timed out" if res.timed_out else f"exit code {res.exit_code}"
        raise StageInfrastructureFault(f"toolchain check failed ({why}): {res.stderr[-300:]}")
    # a solution file shaped like a kept compiler output would stand in for the build's own
    violations = [
        f"{f.path}: a compiler output among the solution files (stands in for the build's)"
        for f in solution
        if "compiler_outputs" in checks and _COMPILER_OUTPUT.search(PurePosixPath(f.path).name)
    ]
    dirs = {posixpath.dirname(f.path) for f in all_files}
    units_seen = parse_report(text)
    if allow is not None:  # one source may call what another defines
        allow = allow.with_defined(
            n for u in units_seen if u.obj is not None for n in defined_symbols(u.obj)
        )
    for u in units_seen:
        if u.rc != 0:
            if not any(u.path == s for s, h in units if not h):
                continue  # a header that needs its includer's context: its lines are checked there
            if not p.exact:  # flags guessed for a make/script build: not the solution's fault
                raise StageInfrastructureFault(
                    f"toolchain check: {u.path} does not compile with the flags guessed for "
                    f"build_command {build_command!r}: {u.log[-300:]}"
                )
            violations.append(f"{u.path}: does not compile on its own with the build's flags")
            continue
        violations += unit_violations(u.path, u.own, u.headers or [], banned, checks, dirs)
        violations += ptx_violations(
            u.path,
            u.ptx,
            precision=precision if "precision" in checks else None,
            libraries=libraries,
        )
        if u.obj is not None:
            headers = u.headers or _included(u.path, all_files)
            allowed = header_allowances(headers)
            violations += object_violations(
                u.path,
                u.obj,
                libraries=libraries,
                allowed=allowed,
                allow=allow,
                checks=checks,
                claimed=claimed_scopes(u.own),
                allowed_classes=header_allowances(headers, HEADER_CLASS_ALLOWANCES),
            )
    violations = sorted(set(violations))
    stage = StageResult(
        status="failed" if violations else "ok",
        seconds=seconds,
        output_tail="\n".join(violations)[-4000:],
        reason="forbidden constructs in what the compiler sees" if violations else None,
    )
    write_atomic(cached, json.dumps({"stage": stage.model_dump(), "violations": violations}))
    return stage, violations


def apply(
    verdict: Any,
    box: Any,
    problem: Any,
    files: Any,
    env: Mapping[str, str],
    forbidden: Iterable[str],
    timeout: float,
) -> str | None:
    """Run :func:`check` for the grader: record the ``toolchain`` stage and any suspected hack;
    the failure reason, or None to go on. The problem's grading policy says which checks run;
    a policy with none of them (and a problem that forbids nothing) skips the compile."""
    policy: GradingPolicy = getattr(problem, "policy_in_force", STRICT)
    forbidden = list(forbidden)
    if not policy.toolchain and not forbidden:
        return None
    own = {f.path for f in files.solution}
    allow = allowlist_for(
        problem.build_command,
        [f for f in files.all if f.path not in own],
        getattr(problem.metadata, "allowed_symbols", None) or [],
    )
    result = check(
        box,
        problem.build_command,
        files.solution,
        files.all,
        env,
        forbidden,
        timeout=timeout,
        allow=allow,
        precision=fixed_precision(problem),
        checks=policy.checks,
    )
    if result is None:
        return None
    stage, violations = result
    verdict.stages["toolchain"] = stage
    if violations:
        verdict.suspected_hack.extend(v for v in violations if v not in verdict.suspected_hack)
        return f"forbidden construct: {violations[0]}"
    return None


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def _without_leading_dots(name: str) -> str:
    """``name`` without its leading ``./`` and ``../`` steps: a quoted include such as
    ``"../include/x.h"`` resolves through an ``-I`` folder to a workspace file ending so."""
    parts = posixpath.normpath(name).split("/")
    while parts and parts[0] in (".", ".."):
        parts.pop(0)
    return "/".join(parts)


def _included(path: str, files: Iterable[SourceFile]) -> list[str]:
    """The headers ``path`` names in its ``#include`` lines, and those the workspace's own
    headers it includes name in turn, as ``/name``: what a TU whose compile kept no line
    markers (nvcc on a ``.cpp``) is known to bring."""
    texts = {posixpath.normpath(f.path): f.content for f in files}
    seen: list[str] = []
    todo = [path]
    while todo:
        for name in _INCLUDE.findall(texts.get(todo.pop(), "")):
            if "/" + name in seen:
                continue
            seen.append("/" + name)
            tail = _without_leading_dots(name)  # "../include/x.h" found as include/x.h
            todo += [p for p in texts if p == tail or p.endswith("/" + tail)]
    return seen
