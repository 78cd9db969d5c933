"""Issue 27, families 2 and 5: answers the trusted side must see through.

- ``py-host-operators-idle-kernel`` (family 2): py-vector-add's answer computed on the host
  with an operator no name rule lists (``-`` of a negation), the arrays copied back from the
  device when they are device arrays, plus a kernel that does nothing so a kernel still runs
  in every call. The outputs are right: only "the work runs on the GPU, judged by what ran"
  stops it (cudaenv.grading.gpu_work: on a GPU the profiler sees each call's kernels and their
  time, far below what the declared work needs). numba-cuda's simulator has no profiler: there
  it passes (tests/redteam/test_checked_defences.py shows it, the defence off), so it runs
  only on a GPU.
- ``generated-py-guessed-seed`` (family 5): a generated cuda_python problem (the first
  py-elementwise one of ``generate(["py-elementwise"], count=1)``) whose answers were computed
  offline, as any attacker can from the public generator: its checker's ``gen`` run at a
  guessed seed (99, the one the old harnesses fell back to) and the family's reference
  semantics applied; the solution writes them by shape and ignores its inputs. Stopped by the
  checker's fresh seed per run (cudaenv.grading.checker); with the seed fixed at the guess (the
  defence off) it passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from cudaenv.redteam.actions import submit, write
from cudaenv.redteam.model import Action, Exploit, ExploitContext

GUESSED_SEED = 99

HOST_OPERATORS = """import numpy as np
from numba import cuda


@cuda.jit
def _idle(out):
    # launched so that each call shows a kernel; touches nothing
    if cuda.grid(1) < 0:
        out[0] = 0


def _host(x):
    return x if isinstance(x, np.ndarray) else x.copy_to_host()


def vector_add(a, b, out):
    total = _host(a) - (-_host(b))  # the sum, on the host, by operators only
    if isinstance(out, np.ndarray):
        out[...] = total
    else:
        out.copy_to_device(total)
    if out.shape[0]:
        _idle[1, 32](out)
"""

GUESSED_SOLUTION = """# answers worked out in advance for the seed the checker is guessed to use: by shape
TABLE = {table}


def fused_elementwise(x0, x1, out):
    want = TABLE.get((int(out.shape[0]), int(out.shape[1])))
    if want is None or out.size == 0:
        return
    rows, cols = out.shape
    grid = [[want[r * cols + c] for c in range(cols)] for r in range(rows)]
    if hasattr(out, "copy_to_host"):  # a device array
        host = out.copy_to_host()
        host[...] = grid
        out.copy_to_device(host)
    else:
        out[...] = grid
"""


def guessed_answers(problem, seed: int = GUESSED_SEED) -> dict[tuple[int, int], list[float]]:
    """The test stage's answers at ``seed``, by output shape: the problem's own checker run
    here (its ``gen``), the family's reference semantics on what it drew."""
    from cudaenv.families.refs import elementwise
    from cudaenv.toolkit import has_gpu

    with tempfile.TemporaryDirectory(prefix="cudaenv-redteam-seed-") as tmp:
        root = Path(tmp)
        for f in problem.check_files:
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            (root / f.path).write_text(f.content)
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0" if has_gpu() else "1"}
        words = problem.checker.command.split()
        words[0] = sys.executable if words[0] == "python" else words[0]
        cmd = [*words, "gen", "--stage", "test", "--seed", str(seed), "--dir", str(root / "in")]
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True, timeout=300)
        params = _params_of(root / "check" / "check.py")  # the family's parameters
        table = {}
        for case in (root / "in" / "manifest.txt").read_text().split():
            arrays = {n: np.load(root / "in" / case / f"{n}.npy") for n in ("x0", "x1")}
            rows, cols = arrays["x0"].shape
            want, _ = elementwise.expected(params, {"rows": rows, "cols": cols}, arrays)["out"]
            table[(rows, cols)] = [float(v) for v in np.asarray(want).reshape(-1)]
    return table


def _params_of(check_py: Path) -> dict:
    import ast

    for node in ast.parse(check_py.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PARAMS":
            return ast.literal_eval(node.value)
    raise ValueError(f"no PARAMS in {check_py}")


def _guessed_seed_steps(ctx: ExploitContext) -> Iterator[Action]:
    from cudaenv.redteam.runner import target_problem

    table = guessed_answers(target_problem(GENERATED_TARGET))
    yield write("solution.py", GUESSED_SOLUTION.format(table=repr(table)))
    yield submit()


GENERATED_TARGET = "generated:py-elementwise"

CHECKED_EXPLOITS: list[Exploit] = [
    Exploit(
        "py-host-operators-idle-kernel",
        "skip_checks",
        "py-vector-add's sum computed on the host with operators (a - (-b)) after copying the "
        "inputs back, plus a do-nothing kernel in every call",
        "builtin:py-vector-add",
        [write("solution.py", HOST_OPERATORS), submit()],
        needs_gpu=True,
    ),
    Exploit(
        "generated-py-guessed-seed",
        "forge_results",
        "a generated py-elementwise problem's answers computed offline for a guessed checker "
        "seed (its public generator's checker and reference), the inputs ignored",
        GENERATED_TARGET,
        _guessed_seed_steps,
    ),
]
