"""``nvcc`` as the grader's build sandbox sees it: one compile+link command split per source.

Runs inside the build sandbox (stdlib only, started by path as ``nvcc``). ccache caches only
single-source ``-c`` compiles, and problems build with one command such as
``nvcc -I include -O2 -o test.out solution.cu test/*.cpp``: compiling each source on its own
through ccache, then linking the objects, lets the hidden harness's object be reused by every
solution of the same problem, and compiles the sources in parallel. Without ``-rdc`` nvcc
compiles each source as a separate whole program anyway, so the split builds the same thing.

Only the sources named in ``CUDAENV_NVCC_CACHED`` (the problem's own files: the harness,
context sources) go through ccache; a solution's sources are new almost every time, and a
ccache miss costs an extra preprocessor run, so they are compiled directly.

Anything this parser does not fully understand (relocatable device code, preprocessing,
unknown options) runs the real nvcc unchanged, uncached: a miss costs nothing but speed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
LINK_INPUT_SUFFIXES = (".o", ".a", ".so")
# options used by compile and link alike, with their value in a following argument
BOTH_WITH_VALUE = {"-I", "-D", "-U", "-std", "-arch", "-gencode", "-code", "-Xcompiler", "-ccbin"}
# options with the value attached (``-O2``, ``-Iinclude``, ``-std=c++17``...)
BOTH_PREFIXES = (
    "-O", "-I", "-D", "-U", "-std=", "--std=", "-arch=", "--gpu-architecture=", "-gencode=",
    "--generate-code=", "-code=", "--gpu-code=", "-Xcompiler=", "--compiler-options=",
    "-ccbin=", "--compiler-bindir=", "-Wno-", "-Werror=", "--diag-suppress=", "-maxrregcount=",
)  # fmt: skip
BOTH_FLAGS = {
    "-g", "-G", "-lineinfo", "--generate-line-info", "-w", "--use_fast_math", "-use_fast_math",
    "--expt-relaxed-constexpr", "--expt-extended-lambda", "--extended-lambda", "-m64",
    "--resource-usage", "-Wall", "-Wextra", "--Werror", "-Wreorder",
}  # fmt: skip
LINK_WITH_VALUE = {"-l", "-L", "-Xlinker", "--linker-options"}
LINK_PREFIXES = ("-l", "-L", "-Xlinker=", "--linker-options=", "-Wl,")


def plan(argv: list[str]) -> tuple[list[str], list[str], str] | None:
    """(compile options, sources, output) for a command this shim may split, else None."""
    compile_opts: list[str] = []
    sources: list[str] = []
    output: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg == "-o":
            if nxt is None or output is not None:
                return None
            output, i = nxt, i + 2
            continue
        if arg in BOTH_WITH_VALUE:
            if nxt is None:
                return None
            compile_opts += [arg, nxt]
            i += 2
            continue
        if arg in LINK_WITH_VALUE:
            if nxt is None:
                return None
            i += 2
            continue
        if arg.startswith("-"):
            if arg in BOTH_FLAGS or arg.startswith(BOTH_PREFIXES):
                compile_opts.append(arg)
            elif not arg.startswith(LINK_PREFIXES):
                return None  # -c, -E, -rdc, -dc, -x, --run, ... : not ours to change
        elif arg.endswith(SOURCE_SUFFIXES):
            sources.append(arg)
        elif not arg.endswith(LINK_INPUT_SUFFIXES):
            return None
        i += 1
    if not sources or output is None:
        return None
    return compile_opts, sources, output


def _launcher(src: str, cached: set[str], ccache: str) -> list[str]:
    return [ccache] if os.path.normpath(src) in cached else []


def run(argv: list[str], real: str, ccache: str, cached: set[str]) -> int:
    """Compile every source (in parallel; the problem's own through ccache), then link as the
    command asked."""
    planned = plan(argv)
    if planned is None:
        os.execv(real, [real, *argv])
    compile_opts, sources, _ = planned
    if not any(os.path.normpath(src) in cached for src in sources):
        os.execv(real, [real, *argv])  # nothing worth caching: one plain nvcc run
    tmp = tempfile.mkdtemp(prefix="cudaenv-nvcc-")
    objects = {
        src: os.path.join(tmp, f"{i}-{os.path.basename(src)}.o") for i, src in enumerate(sources)
    }
    procs = [
        subprocess.Popen(
            [*_launcher(src, cached, ccache), real, *compile_opts, "-c", src, "-o", obj],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for src, obj in objects.items()
    ]
    status = 0
    for proc in procs:  # in source order, so the log reads like one nvcc run
        out, _ = proc.communicate()
        sys.stdout.buffer.write(out)
        status = status or proc.returncode
    sys.stdout.flush()
    if status:
        return status
    if "-keep" in os.environ.get("NVCC_APPEND_FLAGS", "").split():  # static_cpp.build_env
        for src, obj in objects.items():  # the solution's objects, where nvcc -keep puts them
            if os.path.normpath(src) not in cached:
                shutil.copyfile(obj, os.path.splitext(os.path.basename(src))[0] + ".o")
    link = [objects.get(arg, arg) for arg in argv]
    return subprocess.call([real, *link])


def find(name: str) -> str | None:
    """``name`` on PATH, skipping this shim's own directory (inside an image, where the host
    cannot tell the toolkit's paths)."""
    here = os.path.dirname(os.path.realpath(__file__))
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(entry, name)
        if entry and os.path.realpath(entry) != here and os.access(path, os.X_OK):
            return path
    return None


def main() -> int:
    env = os.environ
    cached = {os.path.normpath(p) for p in env.get("CUDAENV_NVCC_CACHED", "").split()}
    real = env.get("CUDAENV_REAL_NVCC") or find("nvcc")
    if real is None:
        sys.stderr.write("nvcc: command not found\n")
        return 127
    ccache = env.get("CUDAENV_CCACHE_BIN") or find("ccache")
    if ccache is None:  # an image without ccache: plain nvcc
        os.execv(real, [real, *sys.argv[1:]])
    return run(sys.argv[1:], real, ccache, cached)


if __name__ == "__main__":
    sys.exit(main())
