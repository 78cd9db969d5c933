"""The parts every rendering of one language lays out the same way, so a family passes only
what is its own (prompt, sources, cases, tags, work).

Why one place: a C++ rendering is always a context header, ``test/runner.cpp`` around it, the
family's checker, ``solution.cu`` and the generic forbidden list; a Python one is always
``test/run.py``, the checker, ``solution.py`` and a longer timeout (numba compiles on first
call). Both record the benchmark's sizes. Written once, a change to that layout reaches every
family alike.
"""

from __future__ import annotations

from typing import Any

from cudaenv.families import cpp
from cudaenv.families.base import Difficulty, Params, Parts
from cudaenv.families.checks import Cases, check_files
from cudaenv.families.runners import Io, cpp_runner, py_runner

#: a Python rendering's time limit: numba's first-call compilation counts against it
PY_TIMEOUT_S = 300


def cpp_parts(
    family: str,
    params: Params,
    task_id: str,
    *,
    header: str,
    declaration: str,
    comment: str,
    includes: list[str],
    io: Io,
    module: str,
    cases: Cases,
    prompt: str,
    reference: str,
    baseline: str,
    difficulty: Difficulty,
    tags: list[str],
    work: dict[str, Any],
    timeout_s: int = 180,
) -> Parts:
    """A C++ rendering: ``include/<header>`` (``declaration`` and ``comment``), the runner
    calling it, the checker of ``module`` on ``cases``, reference and baseline ``solution.cu``."""
    return Parts(
        prompt=prompt,
        context={f"include/{header}": cpp.header_file(declaration, comment, includes=includes)},
        tests={
            "test/runner.cpp": cpp_runner(
                io, header=header, includes=includes, task_id=task_id, family=family
            )
        },
        checks=check_files(
            module=module,
            params=params,
            rendering="cpp",
            cases=cases,
            task_id=task_id,
            family=family,
        ),
        solution={"solution.cu": reference},
        baseline={"solution.cu": baseline},
        difficulty=difficulty,
        tags=tags,
        work=work,
        forbidden=list(cpp.FORBIDDEN),
        timeout_s=timeout_s,
        extra_metadata={"bench_sizes": cases.bench_sizes()},
    )


def py_parts(
    family: str,
    params: Params,
    task_id: str,
    *,
    io: Io,
    module: str,
    cases: Cases,
    prompt: str,
    reference: str,
    baseline: str,
    difficulty: Difficulty,
    tags: list[str],
    work: dict[str, Any],
    forbidden: list[str],
) -> Parts:
    """A Python rendering: the runner adapter ``test/run.py``, the checker of ``module`` on
    ``cases``, reference and baseline ``solution.py``; no context files."""
    return Parts(
        prompt=prompt,
        context={},
        tests={"test/run.py": py_runner(io, task_id=task_id, family=family)},
        checks=check_files(
            module=module,
            params=params,
            rendering="py",
            cases=cases,
            task_id=task_id,
            family=family,
        ),
        solution={"solution.py": reference},
        baseline={"solution.py": baseline},
        difficulty=difficulty,
        tags=tags,
        work=work,
        forbidden=forbidden,
        timeout_s=PY_TIMEOUT_S,
        extra_metadata={"bench_sizes": cases.bench_sizes()},
    )


__all__ = ["PY_TIMEOUT_S", "cpp_parts", "py_parts"]
