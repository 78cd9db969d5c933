"""JSON Schemas of what a run directory holds, generated from the pydantic models that write
it, so the documented format cannot drift from the code: ``docs/schemas/*.schema.json`` are
these, and a test regenerates and compares them.

    python -m cudaenv.rollout.schemas docs/schemas    # rewrite the committed schemas
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cudaenv.env.trajectory import Trajectory
from cudaenv.grading.summary import Graded
from cudaenv.rollout.episode import EpisodeResult
from cudaenv.rollout.manifest import RunManifest

__all__ = ["SCHEMAS", "schemas", "write_schemas"]


class TrajectoryRecord(BaseModel):
    """One line of ``trajectories.jsonl``: the trajectory of the result with the same key."""

    key: str = Field(description='"<task_id>#<attempt>", as in results.jsonl')
    trajectory: Trajectory


class GradedRecord(Graded):
    """One line of ``graded.jsonl`` (``cudaenv grade``)."""

    key: str = Field(description='"<task_id>#<sample>"')


#: file name -> (model, title)
SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "results": (EpisodeResult, "results.jsonl: one line per finished episode"),
    "trajectories": (TrajectoryRecord, "trajectories.jsonl: one line per stored trajectory"),
    "graded": (GradedRecord, "graded.jsonl: one line per graded solution (cudaenv grade)"),
    "run": (RunManifest, "run.json: the settings of an eval run"),
}


def schemas() -> dict[str, dict[str, Any]]:
    """``{name: JSON Schema}`` for every file of :data:`SCHEMAS` (serialised form)."""
    out = {}
    for name, (model, title) in SCHEMAS.items():
        schema = model.model_json_schema(mode="serialization")
        schema["title"] = title
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        out[name] = schema
    return out


def write_schemas(directory: Path) -> list[Path]:
    """Write ``<name>.schema.json`` for each schema into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    for written in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")):
        sys.stdout.write(f"{written}\n")
