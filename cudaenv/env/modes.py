"""The checks of what a reset asks for, shared by the env, its suite, ``ProcessEnv`` and the
integrations: the mode, and the shape of the reset options.

The mode type itself is :data:`cudaenv.problems.model.Mode`; a bad one raises
:class:`~cudaenv.errors.ModeError` with the same wording wherever it is caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cudaenv.errors import ModeError, SpecError
from cudaenv.problems.model import MODES, Mode, Problem

__all__ = ["MODES", "RESET_OPTIONS", "Mode", "can_optimize", "check_mode", "reset_options"]

RESET_OPTIONS = frozenset({"task_id", "mode"})


def reset_options(options: object) -> dict[str, Any]:
    """``reset``'s ``options`` as a dict; SpecError naming the argument when it is not a
    mapping (``options="task_id=x"`` would otherwise be a bare ValueError from ``dict``).

    >>> reset_options(None), reset_options({"mode": "solve"})
    ({}, {'mode': 'solve'})
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise SpecError(
            f"reset options must be a dict like {{'task_id': ...}}, got "
            f"{type(options).__name__} {options!r:.80}",
            field="options",
        )
    return dict(options)


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
