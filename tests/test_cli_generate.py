"""``cudaenv generate`` and ``cudaenv validate generated --sample N`` through the real CLI."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.problems import load_suite

runner = CliRunner()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_generate_writes_a_datapack_deterministically(tmp_path: Path) -> None:
    args = ["generate", "py-reduce-axis", "reduce-axis", "--count", "4", "--seed", "7"]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a.tar.gz")])
    assert first.exit_code == 0, first.output
    assert "wrote 4 problems" in first.output
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "b.tar.gz")])
    assert again.exit_code == 0, again.output
    suite_a, suite_b = load_suite(tmp_path / "a.tar.gz"), load_suite(tmp_path / "b.tar.gz")
    assert [p.content_hash() for p in suite_a] == [p.content_hash() for p in suite_b]
    assert {p.metadata.family for p in suite_a} == {"py-reduce-axis", "reduce-axis"}
    other = runner.invoke(app, [*args[:-1], "8", "--out", str(tmp_path / "c.tar.gz")])
    assert other.exit_code == 0, other.output
    hashes_c = {p.content_hash() for p in load_suite(tmp_path / "c.tar.gz")}
    assert hashes_c != {p.content_hash() for p in suite_a}


def test_generate_to_a_directory_loads_as_a_problem_tree(tmp_path: Path) -> None:
    out = tmp_path / "tree"
    res = runner.invoke(app, ["generate", "py-elementwise", "--count", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(load_suite(out)) == 2


def test_generate_names_an_unknown_family(tmp_path: Path) -> None:
    res = runner.invoke(app, ["generate", "no-such", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "unknown family 'no-such'" in res.output and "reduce-axis" in res.output


@pytest.mark.slow
def test_validate_a_generated_sample_runs_its_mutants() -> None:
    res = runner.invoke(
        app,
        ["validate", "generated:seed=5,count=6,families=py-elementwise", "--sample", "1"],
        terminal_width=200,
    )
    assert res.exit_code == 0, res.output
    assert "1/1 ok" in res.output
