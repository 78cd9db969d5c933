"""The rule tables of the C/C++/CUDA text checks: each forbidden identifier or text names the
exploit class it stops (the checks that apply them: :mod:`cudaenv.grading.static_text_cpp`)."""

from __future__ import annotations

import re

CPP_SUFFIXES = {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".hh", ".inl"}

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
