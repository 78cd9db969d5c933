"""Run numba-cuda solutions on the simulator (``NUMBA_ENABLE_CUDASIM=1``): the second,
independent path to a Python question's answer, and the recorder of what a host function
launches.

The simulator must be chosen before numba is imported, so every batch runs in a child
process (``python -m cudaenv.questions.simulate IN OUT``): the parent writes the jobs (source,
function, arguments) as JSON plus ``.npy`` arrays into a private directory and reads the
results back the same way. Only trusted sources run here (the families' references and
mutants); nothing a model wrote.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class SimJob:
    """Call ``function(*args)`` of ``source``; ``args`` name arrays of ``arrays`` in order."""

    source: str
    function: str
    args: list[str]
    arrays: dict[str, np.ndarray]
    output: str
    record_launches: bool = False
    #: with ``record_launches``: run the kernels too (False: only record what is launched, so
    #: large shapes cost nothing)
    run_kernels: bool = True


@dataclass
class SimResult:
    output: np.ndarray | None = None
    launches: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def run_jobs(jobs: list[SimJob], *, timeout_s: float = 600.0) -> list[SimResult]:
    """Every job in one simulator process; a job that raises gets its ``error``."""
    if not jobs:
        return []
    with tempfile.TemporaryDirectory(prefix="cudaenv-sim-") as tmp:
        root = Path(tmp)
        meta = []
        for i, job in enumerate(jobs):
            names = {}
            for k, a in job.arrays.items():
                path = root / f"{i}-{k}.npy"
                np.save(path, a, allow_pickle=False)
                names[k] = path.name
            meta.append({"source": job.source, "function": job.function, "args": job.args,
                         "arrays": names, "output": job.output,
                         "record": job.record_launches, "run": job.run_kernels})  # fmt: skip
        (root / "jobs.json").write_text(json.dumps(meta))
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "NUMBA_DISABLE_JIT": "0"}
        proc = subprocess.run(
            [sys.executable, "-m", "cudaenv.questions.simulate", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the simulator process failed: {proc.stderr[-2000:]}")
        results = json.loads((root / "results.json").read_text())
        out = []
        for i, res in enumerate(results):
            arr = np.load(root / f"{i}-result.npy") if res.get("ok") else None
            out.append(SimResult(arr, res.get("launches", []), res.get("error")))
        return out


class _Recorder:
    """Stands in for a ``@cuda.jit`` kernel: records ``kernel[grid, block]`` and runs it
    (or, with ``run=False``, does not)."""

    def __init__(self, name: str, kernel: Any, log: list[dict[str, Any]], run: bool) -> None:
        self._name, self._kernel, self._log, self._run = name, kernel, log, run

    def __getitem__(self, config: Any) -> Any:
        grid, block = config[0], config[1]
        dynamic = config[3] if len(config) > 3 else 0

        def dims(v: Any) -> list[int]:
            t = list(v) if isinstance(v, tuple | list) else [v]
            return [int(d) for d in t] + [1] * (3 - len(t))

        self._log.append(
            {
                "kernel": self._name,
                "grid": dims(grid),
                "block": dims(block),
                "dynamic": int(dynamic),
            }
        )
        if not self._run:
            return lambda *args: None
        return self._kernel[config]


_ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "int16": 2, "int32": 4, "int64": 8}


def shared_arrays(source: str) -> dict[str, int]:
    """Bytes of the ``cuda.shared.array`` allocations of each ``@cuda.jit`` kernel of a numba
    source, read from its syntax tree (module-level integer constants resolved; nothing is
    run)."""
    tree = ast.parse(source)
    consts: dict[str, int] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            with contextlib.suppress(ValueError):
                consts[node.targets[0].id] = _int(node.value, consts)

    def is_kernel(fn: ast.FunctionDef) -> bool:
        return any(ast.unparse(d) == "cuda.jit" for d in fn.decorator_list)

    out: dict[str, int] = {}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and is_kernel(n)):
        total = 0
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            if ast.unparse(call.func) != "cuda.shared.array":
                continue
            shape = call.args[0]
            dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]
            dtype = next(k.value for k in call.keywords if k.arg == "dtype")
            count = 1
            for d in dims:
                count *= _int(d, consts)
            total += count * _ITEMSIZE[ast.unparse(dtype)]
        out[fn.name] = total
    return out


def _int(node: ast.AST, consts: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _int(node.left, consts), _int(node.right, consts)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if type(node.op) in ops:
            return ops[type(node.op)]
        if isinstance(node.op, ast.FloorDiv) and b:
            return a // b
    raise ValueError(f"not an integer constant: {ast.unparse(node)}")


def _child(root: Path) -> None:
    import types

    from numba.cuda.simulator.kernel import FakeCUDAKernel

    meta = json.loads((root / "jobs.json").read_text())
    results = []
    for i, job in enumerate(meta):
        arrays = {k: np.load(root / name) for k, name in job["arrays"].items()}
        mod = types.ModuleType(f"solution_{i}")
        log: list[dict[str, Any]] = []
        try:
            exec(compile(job["source"], "solution.py", "exec"), mod.__dict__)
            if job["record"]:
                for name, value in list(mod.__dict__.items()):
                    if isinstance(value, FakeCUDAKernel) and not getattr(value, "_device", False):
                        mod.__dict__[name] = _Recorder(name, value, log, job["run"])
            getattr(mod, job["function"])(*[arrays[a] for a in job["args"]])
            np.save(root / f"{i}-result.npy", arrays[job["output"]], allow_pickle=False)
            results.append({"ok": True, "launches": log})
        except Exception as exc:  # the job's failure, reported, not the batch's
            results.append({"ok": False, "error": f"{type(exc).__name__}: {exc}", "launches": log})
    (root / "results.json").write_text(json.dumps(results))


if __name__ == "__main__":
    _child(Path(sys.argv[1]))


__all__ = ["SimJob", "SimResult", "run_jobs", "shared_arrays"]
