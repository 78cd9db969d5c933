"""C++ benchmark harnesses draw their inputs from the grader's per-round CUDAENV_BENCH_SEED.

A fixed benchmark input could be recognised by a solution and answered from memory; each
round's fresh seed (``cudaenv.grading.stages.BENCH_SEED_ENV``) rules that out. Two checks:
a source check over every bundled cuda_cpp harness with a ``bench_region`` (it reads the seed
once in main, unsets it, and run_perf uses it), and, for harnesses with different
generators, the helper and the input generator compiled into a host-only program with g++:
two seeds give two inputs, and an absent or malformed seed gives the input of the file's
former constant (a developer's ``--perf`` run by hand stays deterministic).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudaenv.grading.stages import BENCH_SEED_ENV
from cudaenv.problems import load_suite


def _bench_harnesses() -> dict[str, str]:
    """task_id -> harness text, for every bundled cuda_cpp problem with a timed bench_region
    on the completion-token harness (a split harness's checker draws every run's inputs and
    no seed reaches the runner: tests/grading/test_split_grading.py)."""
    found = {}
    for p in load_suite("builtin"):
        if p.problem_type != "cuda_cpp" or p.split:
            continue
        texts = [f.content for f in p.test_files if f.path.endswith(".cu")]
        hits = [t for t in texts if "bench_region" in t]
        assert len(hits) <= 1, p.task_id
        if hits:
            found[p.task_id] = hits[0]
    return found


HARNESSES = _bench_harnesses()


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _block_end(text: str, start: int) -> int:
    """Index just past the brace block opening at or after ``start`` (and a ``;`` after it)."""
    i = text.index("{", start)
    depth = 0
    while True:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    rest = text[i + 1 :]
    tail = len(rest) - len(rest.lstrip())
    return i + 1 + (tail + 1 if rest.lstrip().startswith(";") else 0)


def _definition(text: str, name: str) -> str:
    """The top-level definition of ``name``: a function, struct, enum or one-line variable."""
    m = re.search(
        rf"^(?:static\s[^\n(=]*?|struct\s+|enum\s+)\b{re.escape(name)}\b\s*[({{=\[]", text, re.M
    )
    assert m, f"no definition of {name}"
    semi, brace = text.find(";", m.start()), text.find("{", m.start())
    if brace == -1 or semi < brace:
        return text[m.start() : semi + 1]
    return text[m.start() : _block_end(text, m.start())]


def _body(text: str, head: str) -> str:
    m = re.search(head, text, re.M)
    assert m, head
    return text[m.end() : _block_end(text, m.end() - 1)]


def _perf_body(text: str) -> str:
    return _body(_strip_comments(text), r"^static \w+ run_perf\([^)]*\)\s*\{")


def test_every_benchmark_harness_is_covered() -> None:
    assert len(HARNESSES) >= 20
    assert {c.task_id for c in CASES} <= HARNESSES.keys()


@pytest.mark.parametrize("task_id", sorted(HARNESSES))
def test_harness_reads_and_unsets_the_seed(task_id: str) -> None:
    code = _strip_comments(HARNESSES[task_id])
    helper = _body(code, r"^static uint64_t bench_seed\(\)\s*\{")
    assert f'getenv("{BENCH_SEED_ENV}")' in helper
    assert f'unsetenv("{BENCH_SEED_ENV}")' in helper
    assert code.count(BENCH_SEED_ENV) == 2  # nothing else reads it
    main = _body(code, r"^int main\([^)]*\)\s*\{")
    assert main.count("g_bench_mix = bench_seed();") == 1
    assert main.index("g_bench_mix = bench_seed();") < main.index("run_perf(")
    assert "g_bench_mix" in _perf_body(HARNESSES[task_id])


@dataclass(frozen=True)
class Case:
    """One harness's inputs rebuilt on the host: ``body`` is C++ with ``@k@`` replaced by the
    k-th of ``statements`` (regexes, each matching one statement of run_perf, kept verbatim);
    ``old`` builds the same inputs from the constants the harness used before the seed."""

    task_id: str
    defs: tuple[str, ...]
    statements: tuple[str, ...]
    body: str
    old: str


CASES = (
    Case(  # a global splitmix64 state, reseeded at the top of run_perf
        "bitonic-sort",
        ("g_rng", "next_u64", "Pattern", "make_data"),
        (
            r"const int n = 1 << 24\b[^;]*;",
            r"g_rng \^= g_bench_mix;",
            r"std::vector<int> h = [^;]*;",
        ),
        "@0@ @1@ @2@ SHOW(h);",
        "const int n = 1 << 24; std::vector<int> h = make_data(n, kRandom); SHOW(h);",
    ),
    Case(  # a seeded Rng per matrix, and the seed of the sampled output check
        "sgemm-tiled",
        ("Rng", "kGuard", "random_matrix"),
        (
            r"const int S = 4096;",
            r"const size_t n = [^;]*;",
            r"std::vector<float> A = [^;]*;",
            r"Rng rng\([^;]*;",
        ),
        '@0@ @1@ @2@ @3@ SHOW(A); SHOW(B); printf("1 %llx\\n", (unsigned long long)rng.next());',
        "const size_t n = (size_t)4096 * 4096; std::vector<float> A = random_matrix(n, 11, false),"
        " B = random_matrix(n, 12, false); Rng rng(5); SHOW(A); SHOW(B);"
        ' printf("1 %llx\\n", (unsigned long long)rng.next());',
    ),
)

PRELUDE = """#include <cstdint>
#include <cstdio>
#include <cstring>
template <class T> static unsigned long long fnv(const std::vector<T>& v) {
    unsigned long long h = 1469598103934665603ull;  // FNV-1a over 4-byte words
    for (size_t i = 0; i < v.size() * sizeof(T) / 4; ++i) {
        uint32_t w;
        memcpy(&w, reinterpret_cast<const char*>(v.data()) + 4 * i, 4);
        h = (h ^ w) * 1099511628211ull;
    }
    return h;
}
#define SHOW(v) printf("%zu %llx\\n", (v).size(), fnv(v))
"""


def _program(case: Case, body: str) -> str:
    text = HARNESSES[case.task_id]
    std_headers = re.findall(r"^#include <[a-z_]+>$", text, re.M)  # no CUDA or project header
    defs = [_definition(text, n) for n in ("bench_seed", "g_bench_mix", *case.defs)]
    main = (
        "int main() {\n    g_bench_mix = bench_seed();\n"
        f'    printf("%s\\n", getenv("{BENCH_SEED_ENV}") ? "still set" : "unset");\n'
        f"    {body}\n    return 0;\n}}\n"
    )
    return "\n".join(std_headers) + "\n" + PRELUDE + "\n\n".join(defs) + "\n\n" + main


def _from_harness(case: Case) -> str:
    perf = _perf_body(HARNESSES[case.task_id])
    body = case.body
    for k, pattern in enumerate(case.statements):
        hits = re.findall(pattern, perf)
        assert len(hits) == 1, (case.task_id, pattern, hits)
        body = body.replace(f"@{k}@", hits[0])
    return _program(case, body)


def _build(tmp: Path, name: str, source: str) -> Path:
    src, exe = tmp / f"{name}.cpp", tmp / name
    src.write_text(source)
    subprocess.run(["g++", "-std=c++17", "-O2", "-o", str(exe), str(src)], check=True, timeout=120)
    return exe


def _inputs(exe: Path, seed: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != BENCH_SEED_ENV}
    if seed is not None:
        env[BENCH_SEED_ENV] = seed
    out = subprocess.run(
        [str(exe)], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    first, rest = out.stdout.split("\n", 1)
    assert first == "unset"  # the solution, called later in the same process, cannot read it
    return rest


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build the host program")
@pytest.mark.parametrize("case", CASES, ids=[c.task_id for c in CASES])
def test_inputs_follow_the_seed(case: Case, tmp_path: Path) -> None:
    exe = _build(tmp_path, "now", _from_harness(case))
    old = _inputs(_build(tmp_path, "old", _program(case, case.old)), None)
    assert old.count("\n") >= 1
    assert _inputs(exe, None) == old  # no seed: the former fixed input, bit for bit
    for malformed in ("", "12abc", "-3", "18446744073709551616"):
        assert _inputs(exe, malformed) == old, malformed
    seen = [_inputs(exe, s) for s in ("0", "1", "9223372036854775807")]
    assert len({old, *seen}) == 1 + len(seen)
    sizes = [line.split()[0] for line in old.splitlines()]  # the same sizes in every round
    assert all([line.split()[0] for line in s.splitlines()] == sizes for s in seen)
