"""The one check of an episode's mode, shared by the env, its suite and the integrations.

The mode type itself is :data:`cudaenv.problems.model.Mode`; a bad one raises
:class:`~cudaenv.errors.ModeError` with the same wording wherever it is caught.
"""

from __future__ import annotations

from cudaenv.errors import ModeError
from cudaenv.problems.model import MODES, Mode, Problem

__all__ = ["MODES", "Mode", "can_optimize", "check_mode"]


def check_mode(mode: object) -> Mode:
    """``mode`` itself when it is one of :data:`MODES`, else ModeError naming the choices.

    >>> check_mode("repair")
    'repair'
    """
    if not isinstance(mode, str) or mode not in MODES:
        raise ModeError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]


def can_optimize(problem: Problem) -> bool:
    """Whether ``problem`` can run in optimize mode: it needs a benchmark and a baseline."""
    return bool(problem.benchmark_command) and problem.baseline_solution is not None
