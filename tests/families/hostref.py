"""Compile generated ``test/host_ref.h`` files with g++ into one driver per family and run them
on inputs from the tests: the harness's expectations are compared with a NumPy oracle.

Several variants share one driver: each ``host_ref.h`` goes into a namespace of its own
(the system headers it includes are included first, so its own includes are no-ops there)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SYSTEM = "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <cstdio>\n" + (
    "#include <cstdlib>\n#include <cstring>\n#include <vector>\n"
)
IO = r"""
template <class T> static std::vector<T> take(size_t n) {
    std::vector<T> v(n + 1);
    if (n && fread(v.data(), sizeof(T), n, stdin) != n) { fprintf(stderr, "short input\n"); exit(2); }
    return v;
}
template <class T> static void give(const std::vector<T>& v, size_t n) {
    if (n) fwrite(v.data(), sizeof(T), n, stdout);
}
"""


@dataclass
class Variant:
    """One host reference: its header text and the body of ``case i:`` in the driver's main
    (reads stdin with ``take<T>(n)``, writes stdout with ``give(v, n)``; ``a[k]`` are the
    integer arguments after the variant index)."""

    header: str
    call: str


def build(variants: list[Variant], workdir: Path) -> Path:
    """One driver for all variants; cached under the temp dir by its source."""
    parts = [SYSTEM, IO]
    for i, v in enumerate(variants):
        # no #pragma once: GCC would skip a second header with the same text (two problems
        # that differ only in their benchmark share a host reference)
        (workdir / f"ref{i}.h").write_text(v.header.replace("#pragma once\n", ""))
        parts.append(f'namespace v{i} {{\n#include "ref{i}.h"\n}}\n')
    cases = "".join(
        f"    case {i}: {{\n        using namespace v{i};\n{v.call}\n        break;\n    }}\n"
        for i, v in enumerate(variants)
    )
    parts.append(
        "int main(int argc, char** argv) {\n    long long a[16] = {0};\n"
        "    for (int k = 2; k < argc && k < 18; ++k) a[k - 2] = atoll(argv[k]);\n"
        f"    switch (atoi(argv[1])) {{\n{cases}    default: return 3;\n    }}\n    return 0;\n}}\n"
    )
    src = "".join(parts)
    key = hashlib.sha256((src + "".join(v.header for v in variants)).encode()).hexdigest()[:24]
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "hostref-drivers"
    cache.mkdir(parents=True, exist_ok=True)
    binary = cache / key
    if not binary.exists():
        (workdir / "driver.cpp").write_text(src)
        tmp = binary.with_suffix(f".{os.getpid()}")
        subprocess.run(
            ["g++", "-std=c++17", "-O1", "-o", str(tmp), str(workdir / "driver.cpp")],
            check=True, capture_output=True, text=True, cwd=workdir, timeout=600,
        )  # fmt: skip
        tmp.replace(binary)
    return binary


def run(binary: Path, index: int, args: list[int], data: bytes) -> bytes:
    done = subprocess.run(
        [str(binary), str(index), *map(str, args)], input=data, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def split(blob: bytes, *layout: tuple[np.dtype, int]) -> list[np.ndarray]:
    """The driver's output as arrays of the given (dtype, count), in order."""
    out, pos = [], 0
    for dtype, count in layout:
        size = np.dtype(dtype).itemsize * count
        out.append(np.frombuffer(blob[pos : pos + size], dtype=dtype))
        pos += size
    assert pos == len(blob), (pos, len(blob))
    return out


def spec_variant(header: str, spec: object) -> Variant:
    """The driver case for a family using :mod:`cudaenv.families.cpp_harness`: reads the size
    variables from the arguments and the inputs (then any in/out outputs) from stdin, calls the
    host reference as the harness does, writes every output's want then tol."""
    vars_ = spec.vars  # type: ignore[attr-defined]
    arrays = spec.inputs + [o for o in spec.outputs if o.inout]  # type: ignore[attr-defined]
    lines = [f"        const int {v} = (int)a[{k}];" for k, v in enumerate(vars_)]
    lines += [f"        (void){v};" for v in vars_]
    lines += [f"        std::vector<{x.host}> {x.name} = take<{x.host}>({x.size});" for x in arrays]
    call = spec.host_call  # type: ignore[attr-defined]
    for x in arrays:
        call = call.replace(f"@{x.name}@", f"{x.name}.data()")
    for o in spec.outputs:  # type: ignore[attr-defined]
        lines.append(f"        const size_t n_{o.name} = {o.size};")
        lines.append(
            f"        std::vector<double> want_{o.name}(n_{o.name} + 1), tol_{o.name}(n_{o.name} + 1);"
        )
        call = call.replace(f"@want_{o.name}@", f"want_{o.name}.data()")
        call = call.replace(f"@tol_{o.name}@", f"tol_{o.name}.data()")
    lines += ["        const size_t sample = 0;", "        (void)sample;", f"        {call};"]
    for o in spec.outputs:  # type: ignore[attr-defined]
        lines += [
            f"        give(want_{o.name}, n_{o.name});",
            f"        give(tol_{o.name}, n_{o.name});",
        ]
    return Variant(header, "\n".join(lines))


def size_of(expr: str, values: dict[str, int]) -> int:
    """A harness size expression (``(size_t)rows * cols``) evaluated for the given variables."""
    return int(eval(expr.replace("(size_t)", ""), {}, dict(values)))
