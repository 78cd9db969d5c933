"""`cudaenv grade` of SWE-bench predictions and patch files, and `cudaenv validate` of
repository tasks, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.problems.predictions import read_predictions
from tests.grading.repo_fixtures import pytest_repo, write_rows

runner = CliRunner()


def test_grade_predictions_and_patch_files(tmp_path: Path) -> None:
    _, row = pytest_repo(tmp_path)
    tasks = write_rows(tmp_path / "tasks.jsonl", row)
    preds = tmp_path / "preds.jsonl"
    lines = [
        {"instance_id": row["instance_id"], "model_name_or_path": "m", "model_patch": row["patch"]},
        {"instance_id": row["instance_id"], "model_name_or_path": "m", "model_patch": ""},
        {"instance_id": row["instance_id"], "model_patch": 3},
    ]
    preds.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "graded"
    res = runner.invoke(app, ["grade", str(preds), "--source", str(tasks), "--out", str(out)])
    assert res.exit_code == 1, res.output  # the malformed third line is reported, the rest graded
    assert "model_patch" in res.output
    verdicts = [json.loads(x)["verdict"] for x in (out / "graded.jsonl").read_text().splitlines()]
    assert sorted(v["passed"] for v in verdicts) == [False, True]
    patch = tmp_path / f"{row['instance_id']}.patch"
    patch.write_text(row["patch"])
    out2 = tmp_path / "graded2"
    res = runner.invoke(app, ["grade", str(patch), "--source", str(tasks), "--out", str(out2)])
    assert res.exit_code == 0, res.output
    [record] = [json.loads(x) for x in (out2 / "graded.jsonl").read_text().splitlines()]
    assert record["verdict"]["passed"] is True
    sols = read_predictions(preds, rejected=[])
    assert [s.type for s in sols] == ["patch", "file"] and sols[0].model == "m"  # type: ignore[attr-defined]


def test_validate_a_repository_task(tmp_path: Path) -> None:
    _, row = pytest_repo(tmp_path)
    tasks = write_rows(tmp_path / "tasks.jsonl", row)
    res = runner.invoke(
        app, ["validate", str(tasks), "--workers", "1", "--json", str(tmp_path / "v.json")]
    )
    assert res.exit_code == 0, res.output
    [report] = json.loads((tmp_path / "v.json").read_text())
    assert report["ok"] and report["reference"] == "passed"
    assert set(report["verdicts"]) >= {
        "p2p_on_parent",
        "test_patch_fails",
        "gold_passes",
        "oracle",
        "nop",
    }
