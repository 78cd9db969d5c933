"""Turn pydantic validation failures into one clear SpecError naming file, task and field."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cudaenv.errors import SpecError, UnsafePathError
from cudaenv.problems.model import Problem, Solution


def _raise(exc: ValidationError, source: str | None, task_id: str | None) -> None:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or "<record>"
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, UnsafePathError):
        msg, cls = cause.detail, UnsafePathError
    else:
        msg, cls = err.get("msg", "invalid value"), SpecError
        if "collide" in msg or "share" in msg:
            cls = UnsafePathError
    extra = f" (+{exc.error_count() - 1} more errors)" if exc.error_count() > 1 else ""
    raise cls(f"{msg}{extra}", source=source, task_id=task_id, field=field) from exc


def problem_from_dict(data: Any, *, source: str | None = None) -> Problem:
    """Validate a problem record or spec; raise SpecError naming file, task_id and field."""
    task_id = data.get("task_id") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        raise SpecError("a problem record must be a mapping", source=source)
    try:
        return Problem.model_validate(data)
    except ValidationError as exc:
        _raise(exc, source, task_id if isinstance(task_id, str) else None)
        raise  # unreachable


def solution_from_dict(data: Any, *, source: str | None = None) -> Solution:
    """Validate a solution record; raise SpecError naming file, task_id and field."""
    if not isinstance(data, dict):
        raise SpecError("a solution record must be a mapping", source=source)
    task_id = data.get("task_id")
    try:
        return Solution.model_validate(data)
    except ValidationError as exc:
        _raise(exc, source, task_id if isinstance(task_id, str) else None)
        raise
