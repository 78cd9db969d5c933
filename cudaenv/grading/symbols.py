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
- an ``.init_array`` entry the toolchain did not generate fails (``init_sections``);
- code before the harness's ``main`` is judged by who wrote it (``pre_main``): a generated
  initialiser may call the toolchain's own code (nvcc's fatbinary registration, the static
  objects of the standard library, CCCL, cuDNN's frontend, a ``dim3``), the runtimes and the
  libraries the build links (a cuBLAS handle made at namespace scope), and the problem's own
  functions; a call into the solution's own code (a constructor or function it defines, a
  lambda, a scope it reopens with ``namespace std {``) fails.

C++ names are judged by what the demangler prints (:mod:`cudaenv.grading.demangle`): the ABI's
abbreviations (``Sa``, ``Sb``, ``Ss``, ``Si``, ``So``, ``Sd``) are ``std::`` like any other.
Which of these rules apply is the problem's grading policy (``symbols_*``, ``init_sections``,
``pre_main``); a forbidden library (the problem's own terms) always applies.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from cudaenv.grading.demangle import name_owner
from cudaenv.grading.symbol_allowlist import SymbolAllowlist
from cudaenv.problems.policy import ALL_CHECKS

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
# the same, in demangled names (``std::__basic_file`` is what filebuf opens files with)
FORBIDDEN_DEMANGLED: dict[str, str] = {
    "basic_ifstream": "file access",
    "basic_ofstream": "file access",
    "basic_fstream": "file access",
    "basic_filebuf": "file access",
    "std::__basic_file": "file access",
    "filesystem::": "file access",
}
#: outermost scopes whose code the toolchain wrote: the standard library, CCCL (Thrust, CUB,
#: libcu++), CUTLASS, cuDNN's frontend, NVTX, cooperative groups and CUDA's vector and half
#: types (a namespace-scope ``dim3`` calls ``dim3::dim3`` before main)
TOOLCHAIN_OWNERS = frozenset(
    {"std", "__gnu_cxx", "__cxxabiv1", "thrust", "cub", "cuda", "cutlass", "cute",
     "cudnn_frontend", "nvtx3", "cooperative_groups", "nvcuda", "dim3", "__half", "__half2",
     "__nv_bfloat16", "__nv_bfloat162", "__nv_fp8_e4m3", "__nv_fp8_e5m2"}
)  # fmt: skip
#: what no code may do before main, whoever wrote it: write output or end the process
PRE_MAIN_OUTPUT = frozenset(
    {"printf", "fprintf", "vprintf", "vfprintf", "dprintf", "puts", "fputs", "fputc", "putc",
     "putchar", "fflush", "fwrite", "write", "writev", "perror", "__printf_chk",
     "__fprintf_chk", "__vfprintf_chk", "__vprintf_chk", "exit", "_exit", "_Exit",
     "quick_exit", "abort", "syscall"}
)  # fmt: skip
_OSTREAM_OUTPUT = re.compile(r"basic_ostream|operator<<|std::(endl|flush|__ostream_insert)")
# scopes the solution's own lines reopen (`namespace std {`, `template <> struct std::hash`)
_CLAIMS = re.compile(
    r"\bnamespace\s+(\w+)|\btemplate\s*<\s*>\s*(?:struct|class|union)\s+(\w+)\s*::"
)
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
# (pulled in by CUB and Thrust) reads NVTX_INJECTION64_PATH and dlopens it; cuDNN's frontend
# logs to the file CUDNN_FRONTEND_LOG_FILE names, reads an errata JSON (getenv, file streams)
# and finds driver functions through the runtime's entry points; its JSON library reads the
# locale's decimal point (localeconv)
HEADER_ALLOWANCES: dict[str, frozenset[str]] = {
    "/nvtx3/": frozenset({"getenv", "dlopen", "dlsym", "dlclose", "dlerror"}),
    "/cudnn_frontend": frozenset(
        {"getenv", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "localeconv"}
    ),
}
#: the same for C++ names, by their exploit class (FORBIDDEN_MANGLED's values): a file stream's
#: mangled names are many, and which of them a header instantiates depends on the solution
HEADER_CLASS_ALLOWANCES: dict[str, frozenset[str]] = {
    "/cudnn_frontend": frozenset({"file access"}),
}
_INIT_SECTION = re.compile(
    r"\]\s+(\.init_array|\.ctors|\.preinit_array)(\.\d+)?\s+\S+\s+\S+\s+\S+\s+([0-9a-fA-F]+)\s+([0-9a-fA-F]+)"
)
NVCC_REGISTRATION = "__sti____cudaRegisterAll"
GCC_INIT_PREFIX = "_GLOBAL__sub_I_"
STATIC_INIT = "__static_initialization_and_destruction_"


@dataclass
class ObjectReport:
    """What the shell side printed about one object: nm lines, init sections, init functions
    (their calls, and their address ranges), and the demangled names of what it references."""

    nm: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    init_calls: dict[str, list[str]] = field(default_factory=dict)
    init_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    demangled: dict[str, str] = field(default_factory=dict)


def claimed_scopes(own: str) -> frozenset[str]:
    """The scopes the solution's own lines reopen: their code there is the solution's."""
    return frozenset(a or b for a, b in _CLAIMS.findall(own))


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


def _toolchain_call(name: str, fn: str) -> bool:
    """Calls every generated initialiser makes: <iostream>'s ``ios_base::Init``, atexit
    registration, nvcc's registration, the static-initialisation helper, local labels."""
    return (
        name in _INIT_ALLOWED
        or STATIC_INIT in name
        or (name.startswith(".") and not name.startswith(".text"))  # a local label
        or bool(_NVCC_INIT.search(name))
        or name == fn
    )


def _pre_main_offence(
    name: str,
    rep: ObjectReport,
    own: Collection[str],
    allow: SymbolAllowlist | None,
    claimed: frozenset[str],
) -> str | None:
    """Why a call target ``name`` may not run before main, or None: the solution's own code
    (a function it defines outside the toolchain's scopes or in one it reopens; a name none
    of the runtimes, linked libraries and problem functions has), or output and process
    control (the harness's output and exit status are what is graded)."""
    demangled = rep.demangled.get(name)
    if name in PRE_MAIN_OUTPUT or (demangled and _OSTREAM_OUTPUT.search(demangled)):
        return "writes output or ends the process"
    scope = name_owner(name, demangled) if name.startswith("_Z") else ""
    if scope in claimed:
        return "the solution's own code"
    if scope in TOOLCHAIN_OWNERS:
        return None
    if name in own:
        return "the solution's own code"
    if not (allow if allow is not None else _runtime_only()).allows(name, demangled):
        return "the solution's own code"
    return None


def _runtime_only() -> SymbolAllowlist:
    """The allow-list of the runtimes alone (no problem, no linked library)."""
    return SymbolAllowlist()


def _init_violations(
    path: str,
    rep: ObjectReport,
    defined: dict[str, str],
    *,
    checks: Collection[str],
    allow: SymbolAllowlist | None,
    claimed: frozenset[str],
) -> list[str]:
    generated = [n for n in defined if n.startswith(GCC_INIT_PREFIX) or NVCC_REGISTRATION in n]
    out: list[str] = []
    if "init_sections" in checks and _init_entries(rep.sections) > len(generated):
        out.append(
            f"{path}: an .init_array entry the toolchain did not generate (code before main)"
        )
    if "pre_main" not in checks:
        return out
    own = set(defined) | (allow.defined if allow is not None else set())
    for fn, calls in rep.init_calls.items():
        for word in calls:
            name = _target(word)
            if _toolchain_call(name, fn):
                continue
            if (why := _pre_main_offence(name, rep, own, allow, claimed)) is None:
                continue
            shown = rep.demangled.get(name, name)
            out.append(
                f"{path}: a namespace-scope object's initialiser calls {shown!r}: {why} "
                "(before main)"
            )
            break
    return out


def header_allowances(
    headers: list[str], table: dict[str, frozenset[str]] = HEADER_ALLOWANCES
) -> frozenset[str]:
    """Undefined symbols the TU's system headers bring by themselves (see HEADER_ALLOWANCES;
    with ``table=HEADER_CLASS_ALLOWANCES``, the classes of C++ names); the solution's own lines
    are still checked for those names by the token rules (``ifstream``, ``getenv``)."""
    out: set[str] = set()
    for marker, names in table.items():
        if any(marker in h for h in headers):
            out |= names
    return frozenset(out)


def defined_symbols(rep: ObjectReport) -> set[str]:
    """The names the object defines (another solution source may reference them)."""
    return set(_symbols(rep.nm)[1])


def _forbidden_cpp(sym: str, demangled: str | None) -> str | None:
    """The exploit class of a forbidden C++ name (file streams, std::filesystem), if any."""
    if not sym.startswith("_Z"):
        return None
    if hit := next((k for k in FORBIDDEN_MANGLED if k in sym), None):
        return FORBIDDEN_MANGLED[hit]
    if demangled and (hit := next((k for k in FORBIDDEN_DEMANGLED if k in demangled), None)):
        return FORBIDDEN_DEMANGLED[hit]
    return None


def object_violations(
    path: str,
    rep: ObjectReport,
    *,
    libraries: bool,
    allowed: frozenset[str] = frozenset(),
    allow: SymbolAllowlist | None = None,
    checks: Collection[str] = ALL_CHECKS,
    claimed: frozenset[str] = frozenset(),
    allowed_classes: frozenset[str] = frozenset(),
) -> list[str]:
    """Violations in the host object compiled from solution source ``path``; ``libraries``:
    the problem forbids GPU libraries; ``allowed``: undefined symbols let through (what the
    TU's system headers bring, :func:`header_allowances`); ``allow``: the allow-list every
    other undefined reference must be on (None: the deny-list alone); ``checks``: the
    policy's checks; ``claimed``: scopes the solution's own lines reopen
    (:func:`claimed_scopes`); ``allowed_classes``: classes of forbidden C++ names the TU's
    system headers bring (:data:`HEADER_CLASS_ALLOWANCES`)."""
    undefined, defined = _symbols(rep.nm)
    out: list[str] = []
    denied = "symbols_denied" in checks
    for sym in sorted(undefined - allowed):
        demangled = rep.demangled.get(sym)
        shown = f"{sym!r} ({demangled})" if demangled else repr(sym)
        if denied and sym in FORBIDDEN_SYMBOLS:
            out.append(f"{path}: the object references {sym!r} ({FORBIDDEN_SYMBOLS[sym]})")
        elif denied and (why := _forbidden_cpp(sym, demangled)):
            if why not in allowed_classes:
                out.append(f"{path}: the object references {shown} ({why})")
        elif libraries and sym.startswith(LIBRARY_PREFIXES):
            out.append(f"{path}: the object references {sym!r}, a library this problem forbids")
        elif (
            "symbols_allowlist" in checks and allow is not None and not allow.allows(sym, demangled)
        ):
            out.append(
                f"{path}: the object references {shown}, outside what a solution may call (the "
                "CUDA and C++ runtimes, math, the problem's own functions and linked libraries; "
                "metadata.allowed_symbols adds names)"
            )
    for sym, kind in sorted(defined.items()):
        if "symbols_shadowing" not in checks:
            break
        # u: a GNU unique global (asm `@gnu_unique_object`) interposes like any global
        if kind not in "TWDBRVGSiu" or sym in allowed:
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
    out += _init_violations(path, rep, defined, checks=checks, allow=allow, claimed=claimed)
    return out
