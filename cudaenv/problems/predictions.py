"""Solutions that are patches: SWE-bench predictions and patch files.

- A predictions JSONL (SWE-bench's format): one ``{"instance_id", "model_patch",
  "model_name_or_path"}`` object per line; ``model_patch`` may be empty or null (the model
  changed nothing: graded as no change).
- A patch file ``<task_id>.patch`` (or ``.diff``): a unified or git diff against the task's
  base commit; the file name is the task id.

Each becomes a ``patch`` Solution (an empty ``file`` Solution when the patch is empty), which
the grader applies to the task's base commit (:mod:`cudaenv.grading.repo_compose`).
"""

from __future__ import annotations

import json
from pathlib import Path

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.model import Solution

PATCH_SUFFIXES = (".patch", ".diff")


def patch_solution(task_id: str, patch: str | None, **extra: str) -> Solution:
    """A Solution for ``patch`` (no files when it is empty)."""
    if patch is None or not patch.strip():
        return Solution(task_id=task_id, type="file", files=[], **extra)
    return Solution(task_id=task_id, type="patch", patch=patch, **extra)


def is_predictions(path: Path) -> bool:
    return path.is_file() and path.suffix == ".jsonl"


def read_predictions(
    path: str | Path, *, rejected: list[SpecError] | None = None
) -> list[Solution]:
    """Every line of a SWE-bench predictions file; malformed lines go to ``rejected`` (when
    given, else the first one raises)."""
    path = Path(path)
    if not path.is_file():
        raise SourceNotFoundError(f"predictions {path} do not exist")
    out: list[Solution] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise SpecError("not a JSON object", source=f"{path}:{lineno}")
            task_id = row.get("instance_id")
            if not isinstance(task_id, str) or not task_id:
                raise SpecError(
                    "needs an instance_id", source=f"{path}:{lineno}", field="instance_id"
                )
            patch = row.get("model_patch")
            if patch is not None and not isinstance(patch, str):
                raise SpecError(
                    "must be a string",
                    source=f"{path}:{lineno}",
                    task_id=task_id,
                    field="model_patch",
                )
            model = row.get("model_name_or_path")
            extra = {"model": model} if isinstance(model, str) else {}
            out.append(patch_solution(task_id, patch, **extra))
        except (json.JSONDecodeError, SpecError) as exc:
            err = (
                exc
                if isinstance(exc, SpecError)
                else SpecError(f"not valid JSON: {exc}", source=f"{path}:{lineno}")
            )
            if rejected is None:
                raise err from exc
            rejected.append(err)
    return out


def read_patch_file(path: str | Path) -> Solution:
    """A ``<task_id>.patch`` / ``<task_id>.diff`` file as the solution of that task."""
    path = Path(path)
    if not path.is_file():
        raise SourceNotFoundError(f"patch {path} does not exist")
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    return patch_solution(path.stem, text)


__all__ = [
    "PATCH_SUFFIXES",
    "is_predictions",
    "patch_solution",
    "read_patch_file",
    "read_predictions",
]
