"""The JSON Schemas in docs/schemas are the models' own, and the files a real run writes
validate against them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.rollout.schemas import schemas

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
REGENERATE = "python -m cudaenv.rollout.schemas docs/schemas"


def test_committed_schemas_are_the_generated_ones() -> None:
    for name, schema in schemas().items():
        path = DOCS / f"{name}.schema.json"
        assert path.exists(), f"{path} missing: run {REGENERATE}"
        assert json.loads(path.read_text()) == schema, f"{path} is stale: run {REGENERATE}"


def test_a_real_run_validates(cpu_problem_dir: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "run"
    src = str(cpu_problem_dir.parent)
    runner = CliRunner()
    assert runner.invoke(app, ["eval", "--source", src, "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["grade", str(out)]).exit_code == 0
    files = {
        "results": out / "results.jsonl",
        "trajectories": out / "trajectories.jsonl",
        "graded": out / "regraded" / "graded.jsonl",
    }
    loaded = {name: json.loads((DOCS / f"{name}.schema.json").read_text()) for name in files}
    for name, path in files.items():
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert rows
        for row in rows:
            jsonschema.validate(row, loaded[name])
    run = json.loads((out / "run.json").read_text())
    jsonschema.validate(run, json.loads((DOCS / "run.schema.json").read_text()))
    with pytest.raises(jsonschema.ValidationError):  # the schemas do reject a bad row
        jsonschema.validate({**rows[0], "sample": "zero"}, loaded["graded"])
