"""Grading policies as data: presets, custom policies, and how a loaded problem gets one."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from cudaenv.errors import SpecError
from cudaenv.problems.datapack import read_problem_datapack, write_problem_datapack
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem
from cudaenv.problems.policy import (
    ALL_CHECKS,
    COMPUTEEVAL,
    PRESETS,
    REPOSITORY,
    STRICT,
    GradingPolicy,
    policy_named,
)
from cudaenv.problems.suite import Suite
from cudaenv.problems.validation import problem_from_dict


def _record(**extra: object) -> dict:
    return {
        "task_id": "t/1",
        "type": "cuda_cpp",
        "group": "g",
        "prompt": "p",
        "test_command": "./t",
        **extra,
    }


def test_the_presets() -> None:
    assert STRICT.checks == ALL_CHECKS and STRICT.source_references == "tokens"
    assert COMPUTEEVAL.source_references == "subtree" and not COMPUTEEVAL.simulator
    assert COMPUTEEVAL.checks < ALL_CHECKS and "torch" in COMPUTEEVAL.python_modules
    assert REPOSITORY.checks == frozenset() and not REPOSITORY.toolchain
    assert set(PRESETS) == {"strict", "computeeval", "repository"}
    with pytest.raises(ValueError, match="presets: computeeval, repository, strict"):
        policy_named("lenient")


def test_a_problem_is_strict_unless_it_says_otherwise() -> None:
    assert Problem.model_validate(_record()).grading_policy == STRICT
    assert "grading_policy" not in Problem.model_validate(_record()).to_record()
    p = Problem.model_validate(_record(grading_policy="computeeval"))
    assert p.grading_policy == COMPUTEEVAL
    assert p.to_record()["grading_policy"] == "computeeval"


def test_a_custom_policy_is_spelled_out_and_validated() -> None:
    custom = {
        "name": "mine",
        "checks": ["cpp_exit", "symbols_denied"],
        "source_references": "subtree",
        "python_modules": ["torch"],
        "simulator": False,
    }
    p = Problem.model_validate(_record(grading_policy=custom))
    assert p.grading_policy.checks == {"cpp_exit", "symbols_denied"}
    assert p.grading_policy.toolchain  # symbols_denied needs the compile
    assert p.to_record()["grading_policy"] == {**custom, "checks": sorted(custom["checks"])}
    with pytest.raises(SpecError) as err:
        problem_from_dict(_record(grading_policy={**custom, "checks": ["no_such_check"]}))
    assert err.value.field is not None and err.value.field.startswith("grading_policy")
    with pytest.raises(SpecError) as err:
        problem_from_dict(_record(grading_policy="lenient"))
    assert err.value.field == "grading_policy"
    with pytest.raises(SpecError):
        problem_from_dict(_record(grading_policy={**custom, "python_modules": ["os.path"]}))


def _pack_without_policy(path: Path, records: list[dict]) -> Path:
    """A datapack as ComputeEval writes one (our writer, then its metadata word removed)."""
    problems = [Problem.model_validate(r) for r in records]
    write_problem_datapack(problems, path)
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    meta = json.loads(members["metadata.json"])
    del meta["grading_policy"]
    members["metadata.json"] = json.dumps(meta).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_datapacks_carry_the_policy_and_a_foreign_pack_is_computeevals(tmp_path: Path) -> None:
    mixed = [
        Problem.model_validate(_record(task_id="a")),
        Problem.model_validate(_record(task_id="b", grading_policy="computeeval")),
        Problem.model_validate(_record(task_id="c", grading_policy="repository")),
    ]
    ours = write_problem_datapack(mixed, tmp_path / "ours.tar.gz")
    back = {p.task_id: p.grading_policy.name for p in read_problem_datapack(ours)}
    assert back == {"a": "strict", "b": "computeeval", "c": "repository"}
    foreign = _pack_without_policy(tmp_path / "foreign.tar.gz", [_record(task_id="x")])
    assert read_problem_datapack(foreign)[0].grading_policy == COMPUTEEVAL


def test_an_explicit_override_wins_and_changes_the_problems_hash() -> None:
    suite = Suite([Problem.model_validate(_record(grading_policy="computeeval"))])
    before = suite[0].content_hash()
    strict = suite.with_grading_policy("strict")
    assert strict[0].grading_policy == STRICT
    assert strict[0].content_hash() != before
    assert suite.with_grading_policy(REPOSITORY)[0].grading_policy == REPOSITORY
    with pytest.raises(ValueError, match="unknown grading policy"):
        suite.with_grading_policy("nope")


def test_the_bundled_suite_is_strict() -> None:
    assert {p.grading_policy.name for p in load_suite("builtin")} == {"strict"}


def test_a_policy_is_frozen_data() -> None:
    with pytest.raises(ValueError):
        GradingPolicy(name="", checks=frozenset())
    with pytest.raises((TypeError, ValueError)):
        STRICT.name = "other"  # type: ignore[misc]
