"""What a solution's host object may leave undefined: an allow-list, not a deny-list.

Why: a deny-list of dangerous functions misses whatever nobody thought of (a new syscall
wrapper, a libc alias, ``__libc_system``). So every undefined reference of a C/C++ solution's
object must be one of: the CUDA runtime (nvcc's own registration and launch calls included),
the C++ runtime (``std::`` and the ABI: exceptions, ``operator new``, guards), the C math
library, a short list of harmless libc functions (formatting, memory, strings, ``abort``), a
library the problem's build links (``-lcublas`` allows ``cublas*``), a function the problem's own
headers declare (the harness defines it), a symbol another of the solution's sources defines,
or a name the problem lists in ``metadata.allowed_symbols``. Anything else fails the toolchain
stage with the symbol's name. The deny-list in :mod:`cudaenv.grading.symbols` still names the
exploit class of the known-dangerous ones.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cudaenv.grading.demangle import name_owner
from cudaenv.problems.model import SourceFile

CUDA_RUNTIME = re.compile(r"^(cuda[A-Z]|__cuda|__nv_|__fatbinwrap)")
# runtime calls that reach past the runtime: the driver API by pointer, the profiler's ranges
CUDA_RUNTIME_DENIED = frozenset(
    {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaProfilerStart",
     "cudaProfilerStop"}
)  # fmt: skip
CPP_RUNTIME = re.compile(
    r"^(_ZSt|_ZNSt|_ZNKSt|_Z[TS][ISV]St|_ZTVN10__cxxabiv1|_ZTIN10__cxxabiv1|_ZN9__gnu_cxx"
    r"|_ZNK9__gnu_cxx|_Zn[wa][mj]|_Zd[la]Pv|__cxa_|__gxx_personality_v0$|_Unwind_Resume$"
    r"|__dso_handle$|_GLOBAL_OFFSET_TABLE_$|__stack_chk_fail$|__once_proxy$|__dynamic_cast$)"
)
_MATH_BASE = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "fdim",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "hypot",
    "ilogb",
    "ldexp",
    "lgamma",
    "llrint",
    "llround",
    "log",
    "log10",
    "log1p",
    "log2",
    "logb",
    "lrint",
    "lround",
    "modf",
    "nan",
    "nearbyint",
    "nextafter",
    "pow",
    "remainder",
    "remquo",
    "rint",
    "round",
    "scalbln",
    "scalbn",
    "sin",
    "sincos",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "tgamma",
    "trunc",
]
MATH = frozenset(
    [n + s for n in _MATH_BASE for s in ("", "f", "l")]
    + [f"__{n}_finite" for n in _MATH_BASE]
    + ["__isnan", "__isnanf", "__isinf", "__isinff", "__finite", "__finitef", "__fpclassify",
       "__signbit", "__signbitf", "abs", "labs", "llabs", "div", "ldiv"]
)  # fmt: skip
LIBC = frozenset(
    [
        "printf",
        "fprintf",
        "snprintf",
        "sprintf",
        "vprintf",
        "vfprintf",
        "vsnprintf",
        "puts",
        "fputs",
        "fputc",
        "putc",
        "fwrite",  # what GCC makes of fprintf(stderr, "a literal")
        "putchar",
        "fflush",
        "stdout",
        "stderr",
        "__printf_chk",
        "__fprintf_chk",
        "__snprintf_chk",
        "__sprintf_chk",
        "__vsnprintf_chk",
        "__vfprintf_chk",
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "memchr",
        "__memcpy_chk",
        "__memmove_chk",
        "__memset_chk",
        "strlen",
        "strnlen",
        "strcmp",
        "strncmp",
        "strcpy",
        "strncpy",
        "strcat",
        "strncat",
        "strchr",
        "strrchr",
        "strstr",
        "strerror",
        "__strcpy_chk",
        "__strncpy_chk",
        "__strcat_chk",
        "strtol",
        "strtoul",
        "strtoll",
        "strtoull",
        "strtof",
        "strtod",
        "atoi",
        "atol",
        "atof",
        "malloc",
        "calloc",
        "realloc",
        "free",
        "aligned_alloc",
        "posix_memalign",
        "abort",
        "exit",
        "atexit",
        "__assert_fail",
        "__errno_location",
        "qsort",
        "bsearch",
        "sched_yield",
        "__cxa_finalize",
        # what the standard library's inline code references: its atomics' single-thread
        # shortcut, and the locks behind std::mutex, std::call_once and shared_ptr
        "__libc_single_threaded",
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
        "pthread_mutex_trylock",
        "pthread_once",
        "pthread_cond_wait",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
        "pthread_key_create",
        "pthread_getspecific",
        "pthread_setspecific",
    ]
)
# -l<name> of the build command -> the symbol prefix that library's API uses
LIBRARY_PREFIX = {
    "cublas": "cublas", "cublasLt": "cublasLt", "cufft": "cufft", "curand": "curand",
    "cusparse": "cusparse", "cusolver": "cusolver", "nvToolsExt": "nvtx", "nvJitLink": "nvJitLink",
    "nvrtc": "nvrtc", "cudnn": "cudnn", "cuda": "cu",  # -lcuda: the driver API (cuInit, ...)
}  # fmt: skip
#: outermost scopes of the C++ runtime, judged on the demangled name: the ABI's abbreviations
#: (``_ZNSaIcEC1Ev`` is ``std::allocator<char>::allocator()``) are std:: like any other spelling
CPP_RUNTIME_OWNERS = frozenset({"std", "__gnu_cxx", "__cxxabiv1"})
_DECLARED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
# `extern const int OUTPUT_SIZE;`, `extern float table[];`: data the problem's sources define
_EXTERN_DATA = re.compile(r"\bextern\b[^;(){}]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;")
_SOURCE_NAME = re.compile(r"(\d+)([A-Za-z_]\w*)")
_HEADERS = {".h", ".hpp", ".cuh", ".hh", ".inl"}


@dataclass(frozen=True)
class SymbolAllowlist:
    """What one problem's solutions may reference beyond the fixed runtime sets."""

    libraries: tuple[str, ...] = ()
    declared: frozenset[str] = frozenset()
    extra: frozenset[str] = frozenset()
    defined: frozenset[str] = field(default_factory=frozenset)

    def with_defined(self, names: Iterable[str]) -> SymbolAllowlist:
        """The same list, plus what the solution's own objects define."""
        return SymbolAllowlist(
            self.libraries, self.declared, self.extra, self.defined | frozenset(names)
        )

    def allows(self, sym: str, demangled: str | None = None) -> bool:
        """Whether an undefined reference to ``sym`` is one a solution may make;
        ``demangled``: its name as the demangler prints it (C++ symbols are judged by it)."""
        if sym in self.extra or sym in self.defined:
            return True
        if CUDA_RUNTIME.match(sym):
            return sym not in CUDA_RUNTIME_DENIED
        return self.runtime(sym, demangled) or self._problems(sym)

    def runtime(self, sym: str, demangled: str | None = None) -> bool:
        """Whether ``sym`` belongs to the runtimes or a linked library (not to the solution
        nor to the problem's own code)."""
        if CUDA_RUNTIME.match(sym):
            return sym not in CUDA_RUNTIME_DENIED
        if sym in MATH or sym in LIBC or CPP_RUNTIME.match(sym):
            return True
        if sym.startswith("_Z") and name_owner(sym, demangled) in CPP_RUNTIME_OWNERS:
            return True
        return bool(self.libraries) and sym.startswith(self.libraries)

    def _problems(self, sym: str) -> bool:
        """A function the problem's own headers declare (the harness defines it)."""
        names = source_names(sym)
        return bool(names) and all(n in self.declared for n in names)


def source_names(sym: str) -> list[str]:
    """The source identifiers of a mangled function's (nested) name, or the C name itself:
    ``_Z18launch_busy_kernelxP11CUstream_st`` -> ``["launch_busy_kernel"]``,
    ``_ZN2ns3runEv`` -> ``["ns", "run"]``."""
    if not sym.startswith("_Z"):
        return [sym]
    rest = sym[2:]
    nested = rest.startswith("N")
    rest = rest[1:].lstrip("KVr") if nested else rest.lstrip("L")
    out: list[str] = []
    while m := _SOURCE_NAME.match(rest):
        n = int(m.group(1))
        name = rest[len(m.group(1)) : len(m.group(1)) + n]
        if len(name) != n or not re.fullmatch(r"[A-Za-z_]\w*", name):
            return []
        out.append(name)
        rest = rest[len(m.group(1)) + n :]
        if not nested:
            break
    return out if (not nested or rest.startswith("E")) else []


def linked_libraries(build_command: str | None) -> tuple[str, ...]:
    """Symbol prefixes of the libraries the build links (``-lcublas`` -> ``cublas``)."""
    try:
        words = shlex.split(build_command or "")
    except ValueError:
        words = (build_command or "").split()
    libs = [w[2:] for w in words if w.startswith("-l")]
    libs += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-l"]
    return tuple(sorted({LIBRARY_PREFIX[x] for x in libs if x in LIBRARY_PREFIX}))


def allowlist_for(
    build_command: str | None,
    problem_files: Iterable[SourceFile],
    extra: Iterable[str] = (),
) -> SymbolAllowlist:
    """The allow-list of a problem: the libraries its build links, the functions and
    ``extern`` data its own (non-solution) headers declare, and its
    ``metadata.allowed_symbols``."""
    declared: set[str] = set()
    for f in problem_files:
        if PurePosixPath(f.path).suffix.lower() in _HEADERS:
            declared |= set(_DECLARED.findall(f.content))
            declared |= set(_EXTERN_DATA.findall(f.content))
    return SymbolAllowlist(linked_libraries(build_command), frozenset(declared), frozenset(extra))
