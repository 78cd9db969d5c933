"""The baseline cache trusts only runs where no solution ran, and says who wrote each entry.

A grade times the baseline interleaved with a solution whose leftovers could slow it; such a
timing decides that one verdict and is never cached. ``time_baseline`` (``cudaenv validate``,
``cudaenv baseline``) times the baseline alone and records its provenance. Real builds and
runs in local sandboxes; only the timed runs' durations are scripted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.grading.baseline_cache import BaselineCache, baseline_key
from cudaenv.grading.baseline_pass import time_baseline
from cudaenv.grading.verdict import Timing
from cudaenv.problems.model import Problem
from cudaenv.toolkit import cpu_identity
from tests.grading.test_benchmark_cpu import cpu_problem
from tests.grading.test_pristine_stages import Boxes, _grade


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Problem:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    return cpu_problem(tmp_path / "suite", "cpu-provenance")


def _entry_path(problem: Problem) -> Path:
    return BaselineCache().root / f"{baseline_key(problem, cpu_identity())}.json"


def test_a_grade_never_writes_the_baseline_cache(problem: Problem) -> None:
    boxes = Boxes(problem)
    v = _grade(problem, boxes)
    assert v.passed is True and v.baseline_timing and v.speedup is not None, v.reason
    assert [b.role for b in boxes.made] == ["solution", "baseline"]
    assert not _entry_path(problem).exists()
    assert list(BaselineCache().root.glob("*.json")) == []


def test_the_baseline_pass_writes_its_provenance_and_grades_use_it(problem: Problem) -> None:
    boxes = Boxes(problem, ms=40.0)
    timing = time_baseline(problem, sandbox=boxes, rounds=2, writer="a test")
    assert [b.role for b in boxes.made] == ["solution"]  # one box: the baseline's, alone
    assert timing.samples_ms == [40.0, 40.0]
    entry = BaselineCache().entry(baseline_key(problem, cpu_identity()))
    assert entry is not None and entry.timing == timing
    prov = entry.provenance
    assert (prov.writer, prov.solution_ran, prov.rounds) == ("a test", False, 2)
    assert prov.device.startswith("cpu: ") and prov.sandbox == boxes.made[0].isolation
    assert prov.written_at and prov.host and prov.pid > 0
    graded = Boxes(problem, ms=10.0)
    v = _grade(problem, graded)
    assert [b.role for b in graded.made] == ["solution"]  # no baseline box: the cache's
    assert v.baseline_timing and v.baseline_timing.samples_ms == [40.0, 40.0]
    assert v.speedup == pytest.approx(4.0)


@pytest.mark.parametrize(
    "payload",
    [
        Timing(samples_ms=[1.0], median_ms=1.0, source="process").model_dump_json(),
        json.dumps(
            {
                "timing": Timing(samples_ms=[1.0], median_ms=1.0, source="process").model_dump(),
                "provenance": {
                    "writer": "grade",
                    "solution_ran": True,
                    "rounds": 1,
                    "device": "cpu",
                    "sandbox": "local",
                },
            }
        ),
    ],
    ids=["no provenance", "a solution ran"],
)
def test_an_entry_without_trusted_provenance_is_a_miss(problem: Problem, payload: str) -> None:
    """Entries written before provenance existed (by grades), or claiming a solution ran,
    are not used: the grade times the baseline itself."""
    path = _entry_path(problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload)
    assert BaselineCache().get(baseline_key(problem, cpu_identity())) is None
    boxes = Boxes(problem, ms=5.0)
    v = _grade(problem, boxes)
    assert [b.role for b in boxes.made] == ["solution", "baseline"]
    assert v.baseline_timing and v.baseline_timing.samples_ms == [5.0, 5.0]


def test_the_baseline_command_times_and_caches_with_provenance(
    problem: Problem, tmp_path: Path
) -> None:
    res = CliRunner().invoke(app, ["baseline", str(tmp_path / "suite"), "--rounds", "1"])
    assert res.exit_code == 0, res.output
    assert "cpu-provenance: median" in res.output
    entry = BaselineCache().entry(baseline_key(problem, cpu_identity()))
    assert entry is not None and entry.provenance.writer == "cli baseline"
    assert len(entry.timing.samples_ms) == 1
