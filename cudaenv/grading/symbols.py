"""Symbol-level checks of a solution's compiled host object (``nm``, ``readelf``, ``objdump``).

Why: the text checks read spellings, the linker reads symbols. An asm label
(``extern "C" char* f(const char*) __asm__("getenv")``), ``#pragma redefine_extname``, a macro
or a backslash-newline inside an identifier all end as ``U getenv`` in the object, and a
namespace alias of ``cub`` still instantiates ``cub::`` templates there. So:

- an undefined reference to a forbidden function (environment, processes, dynamic loading,
  files, network) fails;
- a C-linkage definition that shadows a libc / libm / CUDA-runtime name fails (a solution that
  defines ``memcmp`` or ``cudaEventElapsedTime`` rewrites what the harness calls);
- with ``forbidden_references: [libraries]``, a symbol of a GPU library fails;
- an ``.init_array`` entry the toolchain did not generate, or a generated initialiser that calls
  anything but ``<iostream>``'s ``ios_base::Init`` (a namespace-scope object with a constructor),
  fails: that code runs before the harness's ``main``. nvcc's fatbinary registration
  (``__sti____cudaRegisterAll``) is the toolchain's own and allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudaenv.grading.symbol_allowlist import SymbolAllowlist

# undefined host symbols a solution may not reach, however it spelled them -> exploit class
FORBIDDEN_SYMBOLS: dict[str, str] = {
    **{s: "environment read" for s in ("getenv", "secure_getenv", "environ", "__environ")},
    **{s: "environment write" for s in ("setenv", "unsetenv", "putenv", "clearenv")},
    **{
        s: "process spawn"
        for s in [
            "system",
            "popen",
            "fork",
            "vfork",
            "execl",
            "execlp",
            "execle",
            "execv",
            "execvp",
            "execve",
            "execvpe",
            "fexecve",
            "posix_spawn",
            "posix_spawnp",
            "clone",
            "clone3",
        ]
    },
    **{s: "raw syscall" for s in ("syscall",)},
    **{s: "process tampering" for s in ("ptrace", "process_vm_readv", "process_vm_writev")},
    **{s: "dynamic loading" for s in ("dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr")},
    **{
        s: "file access"
        for s in [
            "fopen",
            "fopen64",
            "freopen",
            "freopen64",
            "open",
            "open64",
            "openat",
            "openat64",
            "creat",
            "creat64",
            "__open_2",
            "__open64_2",
            "__openat_2",
            "__openat64_2",
            "opendir",
        ]
    },
    **{s: "network" for s in ("socket", "connect", "bind", "getaddrinfo")},
    **{s: "signal hijack" for s in ("signal", "sigaction", "sigset", "bsd_signal")},
    **{s: "control-flow escape" for s in ("longjmp", "siglongjmp", "_longjmp")},
    **{s: "code after main" for s in ("at_quick_exit", "on_exit")},
    **{s: "process internals" for s in ("getauxval", "__libc_start_main", "dl_iterate_phdr")},
}
# substrings of mangled C++ names (std::ifstream & co., std::filesystem, std::system's kin)
FORBIDDEN_MANGLED: dict[str, str] = {
    "basic_ifstream": "file access",
    "basic_ofstream": "file access",
    "basic_fstream": "file access",
    "basic_filebuf": "file access",
    "10filesystem": "file access",
}
LIBRARY_PREFIXES = ("cublas", "cusparse", "cufft", "cudnn", "curand", "cusolver", "npp")
_LIBRARY_MANGLED = re.compile(r"(?:^_Z|[0-9A-Z_])(3cub|6thrust|7cutlass|4cute)(?=[0-9A-Z_])")
# C-linkage names whose definition in a solution would replace what the harness calls
SHADOWED_NAMES = frozenset(
    [
        "main",
        "printf",
        "puts",
        "fputs",
        "fprintf",
        "vprintf",
        "vfprintf",
        "fwrite",
        "write",
        "putchar",
        "fflush",
        "snprintf",
        "sprintf",
        "memcmp",
        "strcmp",
        "strncmp",
        "memcpy",
        "memmove",
        "memset",
        "strlen",
        "malloc",
        "calloc",
        "realloc",
        "free",
        "abort",
        "exit",
        "_exit",
        "_Exit",
        "quick_exit",
        "atexit",
        "__cxa_atexit",
        "__assert_fail",
        "abs",
        "labs",
        "fabs",
        "fabsf",
        "sqrt",
        "sqrtf",
        "fmax",
        "fmaxf",
        "fmin",
        "fminf",
        "isnan",
        "isinf",
        "exp",
        "expf",
        "log",
        "logf",
        "pow",
        "powf",
        "rand",
        "srand",
        "time",
        "clock",
        "clock_gettime",
        "gettimeofday",
        "nanosleep",
        "usleep",
        "sleep",
    ]
)
_SHADOW_PREFIX = re.compile(r"^(cuda[A-Z]|cu[A-Z]|__cuda|cublas|__libc_|__cxa_)")
# what an initialiser the toolchain generated may call: <iostream>'s static ios_base::Init
# (GCC < 13 puts one in every translation unit that includes it) and its atexit registration
_INIT_ALLOWED = frozenset(
    [
        "_ZNSt8ios_base4InitC1Ev",
        "_ZNSt8ios_base4InitD1Ev",
        "__cxa_atexit",
        "__dso_handle",
        "_ZStL8__ioinit",
        "_GLOBAL_OFFSET_TABLE_",
    ]
)
# nvcc's fatbinary registration, which the compiler may inline into the same initialiser
_NVCC_INIT = re.compile(
    r"^(__cudaRegister|__cudaUnregister|__nv_|atexit$)|__sti____cudaRegisterAll|__nv_"
)
# headers whose inline code references what solutions may not: NVTX's injection loader
# (pulled in by CUB and Thrust) reads NVTX_INJECTION64_PATH and dlopens it
HEADER_ALLOWANCES: dict[str, frozenset[str]] = {
    "/nvtx3/": frozenset({"getenv", "dlopen", "dlsym", "dlclose", "dlerror"}),
}
_INIT_SECTION = re.compile(
    r"\]\s+(\.init_array|\.ctors|\.preinit_array)(\.\d+)?\s+\S+\s+\S+\s+\S+\s+([0-9a-fA-F]+)\s+([0-9a-fA-F]+)"
)
NVCC_REGISTRATION = "__sti____cudaRegisterAll"
GCC_INIT_PREFIX = "_GLOBAL__sub_I_"
STATIC_INIT = "__static_initialization_and_destruction_"


@dataclass
class ObjectReport:
    """What the shell side printed about one object: nm lines, init sections, init functions."""

    nm: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    init_calls: dict[str, list[str]] = field(default_factory=dict)


def _symbols(nm_lines: list[str]) -> tuple[set[str], dict[str, str]]:
    undefined: set[str] = set()
    defined: dict[str, str] = {}
    for line in nm_lines:
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            undefined.add(parts[1].split("@")[0])
        elif len(parts) == 3:
            defined[parts[2]] = parts[1]
    return undefined, defined


def _init_entries(sections: list[str]) -> int:
    total = 0
    for line in sections:
        if m := _INIT_SECTION.search(line):
            size, entry = int(m.group(3), 16), int(m.group(4), 16) or 8
            total += size // entry
    return total


def _target(word: str) -> str:
    """``puts-0x4`` / ``<_ZN1SC1Ev>`` / ``.bss+0xc`` -> the symbol or section name."""
    word = word.strip("<>")
    return re.split(r"[+-]0x|\+|@", word, maxsplit=1)[0]


def _init_violations(path: str, rep: ObjectReport, defined: dict[str, str]) -> list[str]:
    generated = [n for n in defined if n.startswith(GCC_INIT_PREFIX) or NVCC_REGISTRATION in n]
    out: list[str] = []
    if _init_entries(rep.sections) > len(generated):
        out.append(
            f"{path}: an .init_array entry the toolchain did not generate (code before main)"
        )
    for fn, calls in rep.init_calls.items():
        for word in calls:
            name = _target(word)
            if (
                name in _INIT_ALLOWED
                or STATIC_INIT in name
                or (name.startswith(".") and not name.startswith(".text"))  # a local label
                or _NVCC_INIT.search(name)
                or name == fn
            ):
                continue
            out.append(
                f"{path}: a namespace-scope object's initialiser calls {name!r} "
                "(code that runs before main)"
            )
            break
    return out


def header_allowances(headers: list[str]) -> frozenset[str]:
    """Undefined symbols the TU's system headers bring by themselves (see HEADER_ALLOWANCES);
    the solution's own lines are still checked for those names by the token rules."""
    out: set[str] = set()
    for marker, names in HEADER_ALLOWANCES.items():
        if any(marker in h for h in headers):
            out |= names
    return frozenset(out)


def defined_symbols(rep: ObjectReport) -> set[str]:
    """The names the object defines (another solution source may reference them)."""
    return set(_symbols(rep.nm)[1])


def object_violations(
    path: str,
    rep: ObjectReport,
    *,
    libraries: bool,
    allowed: frozenset[str] = frozenset(),
    allow: SymbolAllowlist | None = None,
) -> list[str]:
    """Violations in the host object compiled from solution source ``path``; ``libraries``:
    the problem forbids GPU libraries; ``allowed``: undefined symbols let through (what the
    TU's system headers bring, :func:`header_allowances`); ``allow``: the allow-list every
    other undefined reference must be on (None: the deny-list alone)."""
    undefined, defined = _symbols(rep.nm)
    out: list[str] = []
    for sym in sorted(undefined - allowed):
        if sym in FORBIDDEN_SYMBOLS:
            out.append(f"{path}: the object references {sym!r} ({FORBIDDEN_SYMBOLS[sym]})")
        elif sym.startswith("_Z") and (
            hit := next((k for k in FORBIDDEN_MANGLED if k in sym), None)
        ):
            out.append(f"{path}: the object references {sym!r} ({FORBIDDEN_MANGLED[hit]})")
        elif libraries and sym.startswith(LIBRARY_PREFIXES):
            out.append(f"{path}: the object references {sym!r}, a library this problem forbids")
        elif allow is not None and not allow.allows(sym):
            out.append(
                f"{path}: the object references {sym!r}, outside what a solution may call (the "
                "CUDA and C++ runtimes, math, the problem's own functions and linked libraries; "
                "metadata.allowed_symbols adds names)"
            )
    for sym, kind in sorted(defined.items()):
        if kind not in "TWDBRVGSi" or sym in allowed:
            continue
        if not sym.startswith("_Z") and (
            sym in SHADOWED_NAMES or sym in FORBIDDEN_SYMBOLS or _SHADOW_PREFIX.match(sym)
        ):
            out.append(
                f"{path}: the object defines {sym!r}, shadowing a libc/CUDA-runtime name "
                "(rewrites what the harness calls)"
            )
    if libraries:
        lib = next((s for s in [*undefined, *defined] if _LIBRARY_MANGLED.search(s)), None)
        if lib is not None:
            out.append(f"{path}: the object holds {lib[:80]!r}, a library this problem forbids")
    out += _init_violations(path, rep, defined)
    return out
