"""Python benchmark harnesses draw their inputs from the grader's per-round CUDAENV_BENCH_SEED.

The Python counterpart of ``test_bench_seed.py``: a fixed benchmark input could be recognised
by a solution and answered from memory. ``test/pychild.py`` takes the seed out of the
harness's environment when it is imported (before any solution child starts) and
``bench_seed(constant)`` mixes it into each ``run_perf`` seed. Checked from the source (every
bundled harness) and for real on numba-cuda's simulator: the inputs a solution receives in a
``--perf`` run change with the seed, stay the old ones without (or with a malformed) seed, the
reference passes, and the solution's process never sees the seed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cudaenv.grading.stages import BENCH_SEED_ENV
from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem

pytest.importorskip("numba")

TOKEN = "tok-5eed"


def _python_problems() -> dict[str, Problem]:
    """The cuda_python problems on the child-process harness (a split harness's checker draws
    every run's inputs itself: tests/grading/test_split_grading.py)."""
    suite = load_suite("builtin")
    return {p.task_id: p for p in suite if p.problem_type == "cuda_python" and not p.split}


PROBLEMS = _python_problems()


def _harness(problem: Problem) -> str:
    (text,) = [f.content for f in problem.test_files if "def run_perf" in f.content]
    return text


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _seed_uses(source: str) -> list[ast.expr]:
    """Every seed ``run_perf`` passes: ``default_rng``'s argument and the ``seed`` argument
    of the harness's own generators (a top-level function with a ``seed`` parameter)."""
    tree = ast.parse(source)
    seeded = {
        n.name: [a.arg for a in n.args.args].index("seed")
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and "seed" in [a.arg for a in n.args.args]
    }
    (perf,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_perf"]
    uses = []
    for node in ast.walk(perf):
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node)
        if name == "default_rng":
            uses.append(node.args[0] if node.args else node)
        elif name in seeded:
            kw = [k.value for k in node.keywords if k.arg == "seed"]
            uses.append(kw[0] if kw else node.args[seeded[name]])
    return uses


def test_every_python_harness_run_perf_draws_its_seeds_from_bench_seed() -> None:
    assert PROBLEMS
    for task_id, problem in PROBLEMS.items():
        source = _harness(problem)
        uses = _seed_uses(source)
        assert uses, f"{task_id}: run_perf draws no seeded input"
        for use in uses:
            ok = (
                isinstance(use, ast.Call)
                and _callee(use) == "bench_seed"
                and len(use.args) == 1
                and isinstance(use.args[0], ast.Constant)
                and isinstance(use.args[0].value, int)
            )
            assert ok, f"{task_id}: run_perf seed {ast.unparse(use)} is not bench_seed(<int>)"
        assert "bench_seed" in {
            a.name
            for n in ast.parse(source).body
            if isinstance(n, ast.ImportFrom) and n.module == "pychild"
            for a in n.names
        }, task_id


def _write(problem: Problem, tmp: Path, solution: str) -> Path:
    for f in problem.test_files:
        (tmp / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / f.path).write_text(f.content)
    (tmp / "solution.py").write_text(solution)
    return tmp / next(f.path for f in problem.test_files if "def run_perf" in f.content)


def _env(seed: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != BENCH_SEED_ENV}
    env.update(NUMBA_ENABLE_CUDASIM="1", CUDAENV_COMPLETION_TOKEN=TOKEN)
    if seed is not None:
        env[BENCH_SEED_ENV] = seed
    return env


PROBE = """\
import os, sys
import pychild
print(repr(os.environ.get({name!r})))
with open("/proc/self/environ", "rb") as f:
    print({value!r}.encode() in f.read() if {value!r} else False)
print(" ".join(str(pychild.bench_seed(int(d))) for d in sys.argv[1:]))
"""


def _probe(tmp: Path, seed: str | None, *defaults: int) -> tuple[str, bool, list[int]]:
    """Import the merged pychild under ``seed``: the variable afterwards, whether the
    process's environ block still shows the value, and ``bench_seed`` of each default."""
    test_dir = _write(PROBLEMS["py-relu-clip"], tmp, "").parent
    code = PROBE.format(name=BENCH_SEED_ENV, value=seed or "")
    ran = subprocess.run(
        [sys.executable, "-c", code, *map(str, defaults)],
        cwd=test_dir,
        env=_env(seed),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    left, shown, seeds = ran.stdout.splitlines()
    return left, shown == "True", [int(s) for s in seeds.split()]


def test_bench_seed_mixes_the_round_seed_and_takes_it_out_of_the_environment(
    tmp_path: Path,
) -> None:
    left, shown, (a7, a9) = _probe(tmp_path, "123456789", 7, 9)
    assert left == "None" and not shown
    _, _, (b7, b9) = _probe(tmp_path, "987654321", 7, 9)
    assert len({a7, a9, b7, b9, 7, 9}) == 6  # every round and every constant: its own seed
    assert _probe(tmp_path, "123456789", 7)[2] == [a7]  # the same round seed: the same input
    for absent in (None, "", "12x", "-3", "1e5", str(1 << 64), "\u0663"):
        assert _probe(tmp_path, absent, 7, 9)[2] == [7, 9], absent


SPY_RELU = """\
import hashlib, os, re
import numpy as np
from numba import cuda

seed = os.environ.get("CUDAENV_BENCH_SEED")
print("child seed=" + repr(seed))
try:  # /proc shows the harness's original environment block, not its current environment
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        seen = re.search(rb"CUDAENV_BENCH_SEED=[0-9]", f.read())
        print("parent environ has seed=" + str(seen is not None))
except OSError as exc:
    print("parent environ unreadable: " + type(exc).__name__)


@cuda.jit
def _relu(x, lo, hi, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = 0.0 if v <= lo else min(v, hi)


def relu_clip(x, lo, hi, out):
    host = x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)
    print("input " + hashlib.sha256(host.tobytes()).hexdigest())
    n = out.shape[0]
    if n:
        _relu[n // 256 + 1, 256](x, lo, hi, out)
"""


def _perf(problem: Problem, tmp: Path, solution: str, seed: str | None):
    script = _write(problem, tmp, solution)
    return subprocess.run(
        [sys.executable, str(script.relative_to(tmp)), "--perf"],
        cwd=tmp,
        env=_env(seed),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _old_relu_clip_input() -> str:
    """The hash of py-relu-clip's fixed benchmark ``x`` (``inputs(2000, 0.5, 6.0, 21)``)."""
    import hashlib

    rng = np.random.default_rng(21)
    x = (rng.standard_normal(2000) * 4.0).astype(np.float32)
    lo, hi = np.float32(0.5), np.float32(6.0)
    up, down = np.float32(np.inf), np.float32(-np.inf)
    edge = [lo, hi, np.nextafter(lo, up), np.nextafter(hi, down), np.nextafter(hi, up)]
    x[:8] = [*edge, -0.0, 0.0, -1e30]
    rng.shuffle(x)
    return hashlib.sha256(x.tobytes()).hexdigest()


def test_a_perf_run_gives_the_solution_seeded_inputs_and_never_the_seed(tmp_path: Path) -> None:
    hashes = {}
    for seed in ("11", "12", None):
        ran = _perf(PROBLEMS["py-relu-clip"], tmp_path / str(seed), SPY_RELU, seed)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert ran.stdout.splitlines()[-1] == f"CUDAENV_COMPLETE {TOKEN}"
        assert "child seed=None" in ran.stderr
        assert "parent environ has seed=True" not in ran.stderr
        seen = {ln.split()[1] for ln in ran.stderr.splitlines() if ln.startswith("input ")}
        assert len(seen) == 1, seen  # warm-up and timed calls: the one benchmark input
        hashes[seed] = seen.pop()
    assert len(set(hashes.values())) == 3
    assert hashes[None] == _old_relu_clip_input()  # without a seed: the fixed input


@pytest.mark.parametrize("task_id", ["py-reduce-max", "py-matmul-shared"])
def test_the_reference_passes_a_seeded_perf_run(tmp_path: Path, task_id: str) -> None:
    problem = PROBLEMS[task_id]
    assert problem.solution is not None
    (reference,) = [f.content for f in problem.solution.files if f.path == "solution.py"]
    ran = _perf(problem, tmp_path, reference, "4242")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "FAIL" not in ran.stdout
    assert ran.stdout.splitlines()[-1] == f"CUDAENV_COMPLETE {TOKEN}"
