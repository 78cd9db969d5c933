"""Whose fault a failed build is when a library is missing: the toolchain's, or the solution's.

A problem's build command (``-lcufft``) and its own context and test files (``#include
<cudnn_frontend.h>``) say which libraries it needs; when the toolchain lacks one, no solution
could build, so the verdict is infrastructure (masked, never scored) and names the library.
A header only the *solution* includes is the solution's business: its build failure stays the
agent's.

Two checks, both from what the problem asks for, never from the solution:
- before the build, on the host's toolchain: :func:`cudaenv.toolkit.missing_libraries`;
- after a failed build, in any toolchain (a container image too): the compiler's "cannot find
  -lX" / "X.h: No such file or directory" lines, each confirmed by a probe build of our own
  in the same sandbox (so a solution that merely prints such a line is still graded).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from cudaenv.libraries import BY_HEADER, BY_LINK, included_headers, linked_names
from cudaenv.problems.model import Problem
from cudaenv.sandbox import Sandbox

_NO_LIB = re.compile(r"cannot find -l\s*([A-Za-z0-9_.+-]+)")
_NO_HEADER = re.compile(r"fatal error:\s*([^:\s]+):\s*No such file or directory")
_PROBE_DIR = "/tmp/cudaenv-toolchain-probe"
_PROBE_TIMEOUT_S = 120


def problem_texts(problem: Problem) -> list[str]:
    """The problem's own sources (context and test files): what it includes, it needs."""
    return [f.content for f in (*problem.context_files, *problem.test_files)]


def _compiler(build_command: str | None) -> str:
    """The compiler the build command runs (nvcc unless it names another)."""
    try:
        words = shlex.split(build_command or "")
    except ValueError:
        words = []
    first = words[0] if words else ""
    return first if first.rsplit("/", 1)[-1] in ("nvcc", "g++", "gcc", "c++", "clang++") else "nvcc"


def _probe(box: Sandbox, env: Mapping[str, str], compiler: str, source: str, flags: str) -> bool:
    """Whether a one-line program of ours builds in ``box`` (True: the toolchain has it)."""
    ext = "cu" if compiler.endswith("nvcc") else "cpp"
    src = f"{_PROBE_DIR}/probe.{ext}"
    script = (
        f"mkdir -p {_PROBE_DIR} && printf '%s\\n' {shlex.quote(source)} > {src} && "
        f"{shlex.quote(compiler)} {flags} {src}"
    )
    res = box.exec(script, timeout=_PROBE_TIMEOUT_S, env=dict(env))
    return res.exit_code == 0


def gap(box: Sandbox, env: Mapping[str, str], output: str, problem: Problem) -> str | None:
    """Why a failed build is the toolchain's fault (None: it is the solution's): a library the
    problem links, or a header its own files include, that this toolchain does not have."""
    compiler = _compiler(problem.build_command)
    linked = set(linked_names(problem.build_command or ""))
    for name in dict.fromkeys(_NO_LIB.findall(output)):
        if name not in linked:
            continue
        main = "int main(void) { return 0; }"
        if _probe(box, env, compiler, main, f"-o {_PROBE_DIR}/probe.out -l{shlex.quote(name)}"):
            continue
        lib = BY_LINK.get(name)
        what = f"{lib.name} is" if lib else f"lib{name} is"
        hint = f"; {lib.install_hint}" if lib else ""
        return (
            f"{what} not installed in this toolchain: the problem's build command links "
            f"-l{name}, which the linker cannot find{hint}"
        )
    needed = set(included_headers(problem_texts(problem)))
    for header in dict.fromkeys(_NO_HEADER.findall(output)):
        base = header.rsplit("/", 1)[-1]
        if base not in needed:
            continue
        if _probe(box, env, compiler, f"#include <{header}>", f"-E -o {_PROBE_DIR}/probe.i"):
            continue
        lib = BY_HEADER.get(base)
        what = f"{lib.name} is" if lib else f"{header} is"
        hint = f"; {lib.install_hint}" if lib else ""
        return (
            f"{what} not installed in this toolchain: the problem's own files include "
            f"{header}, which the compiler cannot find{hint}"
        )
    return None
