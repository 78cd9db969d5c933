"""How the toolchain check compiles one solution source as the build does: the build
command's compiler and flags (:func:`plan`), and translation phase 2 (:func:`splice`), which
the plain text checks also run first. Apart from :mod:`cudaenv.grading.static_cpp` so that the
script writer (:mod:`cudaenv.grading.static_cpp_script`) needs nothing of the check itself."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

# translation phase 2 (GCC also accepts blanks before the newline); ??/ is the trigraph of \
_SPLICE = re.compile(r"(?:\\|\?\?/)[ \t]*\r?\n")
_COMPILERS = {"nvcc", "g++", "gcc", "c++", "cc", "clang++", "clang"}
#: programs that never compile anything: a build made only of these needs no compiler, and
#: has no compiler output to check (a problem whose build is ``true`` grades without nvcc)
_COMPILES_NOTHING = {"true", ":", "echo", "printf", "cp", "mv", "mkdir", "ln", "touch", "chmod"}
_COMPILES_NOTHING |= {"cat", "ls", "rm", "test", "[", "exit", "cd", "export", "set"}
SOURCES = {".cu", ".c", ".cc", ".cpp", ".cxx"}
HEADERS = {".cuh", ".h", ".hpp", ".hh", ".inl"}
_VALUE_FLAGS = {"-o", "-L", "-l", "-MF", "-MT", "-MQ", "--output-file", "-odir"}
_KEEP_VALUE_FLAGS = {"-I", "-D", "-U", "-isystem", "-include", "-arch", "-gencode", "-std"}
_KEEP_VALUE_FLAGS |= {"-x", "-Xcompiler", "-ccbin", "--gpu-architecture", "-code", "-iquote"}
# nvcc's options whose value is the next word (`-diag-suppress 2810` in ComputeEval's builds)
_KEEP_VALUE_FLAGS |= {
    f"{dash}{name}"
    for dash in ("-", "--")
    for name in ("diag-suppress", "diag-warn", "diag-error", "Xptxas", "Xnvlink", "Xcudafe",
                 "maxrregcount", "rdc", "relocatable-device-code", "default-stream")
}  # fmt: skip
_DROP = ("-l", "-L", "-Wl,", "-Xlinker", "-shared", "-c", "-E", "-M", "-o")
_SEGMENT = re.compile(r"&&|\|\||[;|()&\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def splice(text: str) -> str:
    """Join backslash-newlines exactly as translation phase 2 does (``get\\⏎env`` is getenv)."""
    return _SPLICE.sub("", text)


@dataclass(frozen=True)
class Plan:
    """How to compile one solution source as the build does."""

    compiler: str
    flags: tuple[str, ...]
    exact: bool = True  # False: guessed (the build is not one compiler command)


def _compiles_nothing(command: str) -> bool:
    """Every program ``command`` runs is one of :data:`_COMPILES_NOTHING` (a script or any
    program given by path might compile, so it does not count)."""
    firsts = []
    for segment in _SEGMENT.split(command):
        try:
            words = [w for w in shlex.split(segment) if not _ASSIGNMENT.fullmatch(w)]
        except ValueError:
            return False
        if words:
            firsts.append(words[0])
    return bool(firsts) and all(w in _COMPILES_NOTHING for w in firsts)


def plan(build_command: str | None) -> Plan | None:
    """The build command's compiler and flags (sources, outputs and link flags dropped); a
    build that does not start with a known compiler (make, a script) gets plain ``nvcc``; a
    build that runs only programs that compile nothing (``true``, ``cp``...) gets None."""
    if not build_command or _compiles_nothing(build_command):
        return None
    try:
        words = shlex.split(re.split(r"&&|;|\|\|", build_command)[0])
    except ValueError:
        words = []
    if not words or PurePosixPath(words[0]).name not in _COMPILERS:
        return Plan("nvcc", ("-I", "include", "-I", "."), exact=False)
    flags: list[str] = []
    it = iter(words[1:])
    for w in it:
        if w in _VALUE_FLAGS:
            next(it, None)
        elif w in _KEEP_VALUE_FLAGS:
            flags += [w, next(it, "")]
        elif (w.startswith("-") and not w.startswith(_DROP)) or w.startswith(
            ("-I", "-D", "-U", "-std")
        ):
            flags.append(w)
    return Plan(PurePosixPath(words[0]).name, tuple(flags))
