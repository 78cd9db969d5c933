"""cudaenv: CUDA programming problems as Gymnasium environments for LLM agents.

The import stays light: heavy parts (grading, environments, Docker, Ray) load on first use.

This package is also the verifiers plugin for ``vf-eval cudaenv``: verifiers imports a
taskset id as a module and takes the Taskset, Harness and Env classes its ``__all__``
exports. Where verifiers is installed (``pip install 'cudaenv[verifiers]'``), ``__all__``
names those three (:mod:`cudaenv.integrations.verifiers`); they load only when asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "Problem": "cudaenv.problems.model",
    "Solution": "cudaenv.problems.model",
    "SourceFile": "cudaenv.problems.model",
    "Suite": "cudaenv.problems.suite",
    "load_suite": "cudaenv.problems.loader",
    "ExecResult": "cudaenv.sandbox.base",
    "Sandbox": "cudaenv.sandbox.base",
    "make_sandbox": "cudaenv.sandbox",
    "Verdict": "cudaenv.grading.verdict",
    "grade": "cudaenv.grading.grader",
    "GradeRequest": "cudaenv.grading.request",
    "rewards": "cudaenv.grading.rewards",
    "CudaEnv": "cudaenv.env.core",
    "ProcessEnv": "cudaenv.env.process_env",
    "SuiteEnv": "cudaenv.env.suite",
    "BatchedEnvs": "cudaenv.rollout.batched",
    "make": "cudaenv.env.registration",
    "make_suite": "cudaenv.env.registration",
    "register_suite": "cudaenv.env.registration",
    "errors": "cudaenv.errors",
}
#: the verifiers plugin's classes (``vf-eval cudaenv``)
_VERIFIERS = ("CudaHarness", "CudaTaskset", "CudaVfEnv")
_LAZY.update(dict.fromkeys(_VERIFIERS, "cudaenv.integrations.verifiers"))

__all__ = [
    "BatchedEnvs",
    "CudaEnv",
    "ExecResult",
    "GradeRequest",
    "Problem",
    "ProcessEnv",
    "Sandbox",
    "Solution",
    "SourceFile",
    "Suite",
    "SuiteEnv",
    "Verdict",
    "__version__",
    "errors",
    "grade",
    "load_suite",
    "make",
    "make_sandbox",
    "make_suite",
    "register_suite",
    "rewards",
]
if importlib.util.find_spec("verifiers") is not None:  # verifiers resolves `cudaenv` by these
    __all__ += _VERIFIERS


def _register_builtin() -> None:
    """Register the bundled problems with gymnasium (cheap: folder names only)."""
    try:
        from cudaenv.env.registration import register_builtin
    except ImportError:  # gymnasium missing in a broken install: importing still works
        return
    register_builtin()


_register_builtin()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cudaenv' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if name == module.rsplit(".", 1)[-1] else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from cudaenv import errors
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.process_env import ProcessEnv
    from cudaenv.env.registration import make, make_suite, register_suite
    from cudaenv.env.suite import SuiteEnv
    from cudaenv.grading import rewards
    from cudaenv.grading.grader import grade
    from cudaenv.grading.request import GradeRequest
    from cudaenv.grading.verdict import Verdict
    from cudaenv.problems.loader import load_suite
    from cudaenv.problems.model import Problem, Solution, SourceFile
    from cudaenv.problems.suite import Suite
    from cudaenv.rollout.batched import BatchedEnvs
    from cudaenv.sandbox import make_sandbox
    from cudaenv.sandbox.base import ExecResult, Sandbox
