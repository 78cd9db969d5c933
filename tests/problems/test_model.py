from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudaenv.errors import SpecError, UnsafePathError
from cudaenv.problems.model import RegionTiming, SourceFile
from cudaenv.problems.paths import check_relative_path
from cudaenv.problems.validation import problem_from_dict

BASE = {
    "task_id": "x",
    "type": "cuda_cpp",
    "group": "cuda-kernels",
    "prompt": "p",
    "test_command": "./t",
}


def rec(**kw):
    return {**BASE, **kw}


def test_both_type_spellings_accepted() -> None:
    a = problem_from_dict(rec())
    b = problem_from_dict(
        {**{k: v for k, v in BASE.items() if k != "type"}, "problem_type": "cuda_python"}
    )
    assert a.problem_type == "cuda_cpp"
    assert b.problem_type == "cuda_python"
    assert a.to_record()["type"] == "cuda_cpp"
    assert "problem_type" not in a.to_record()


@pytest.mark.parametrize(
    ("given_refs", "expected"),
    [
        ("cublasSgemm", {"all": ["cublasSgemm"], "any": None}),
        (["a", "b"], {"all": ["a", "b"], "any": None}),
        ({"any": ["x", "y"]}, {"all": None, "any": ["x", "y"]}),
        (None, None),
    ],
)
def test_source_references_normalised(given_refs, expected) -> None:
    p = problem_from_dict(rec(source_references=given_refs))
    assert p.to_record()["source_references"] == expected


def test_empty_source_references_rejected() -> None:
    with pytest.raises(SpecError, match="source_references"):
        problem_from_dict(rec(source_references={}))


def test_timing_modes() -> None:
    p = problem_from_dict(
        rec(timing_mode={"type": "region", "include": ["bench_region"], "time_type": "kernel"})
    )
    assert isinstance(p.timing_mode, RegionTiming)
    assert p.timing_mode.include == ["bench_region"]
    assert problem_from_dict(rec(timing_mode="gpu")).timing_mode.type == "gpu"
    with pytest.raises(SpecError, match="timing_mode"):
        problem_from_dict(rec(timing_mode={"type": "sundial"}))


def test_unknown_field_named_with_task_and_file() -> None:
    with pytest.raises(SpecError) as info:
        problem_from_dict(rec(biuld_command="nvcc"), source="spec.yaml")
    msg = str(info.value)
    assert "biuld_command" in msg and "task_id=x" in msg and "spec.yaml" in msg


def test_wrong_type_names_field() -> None:
    with pytest.raises(SpecError) as info:
        problem_from_dict(rec(timeout_seconds="soon"))
    assert info.value.field == "timeout_seconds"


def test_unknown_metadata_kept() -> None:
    p = problem_from_dict(rec(metadata={"difficulty": "hard", "origin": "ours", "tags": ["a"]}))
    assert p.metadata.difficulty == "hard"
    assert p.to_record()["metadata"]["origin"] == "ours"


def test_solution_colliding_with_test_rejected() -> None:
    with pytest.raises(UnsafePathError, match="collide"):
        problem_from_dict(
            rec(
                test_files=[{"path": "test/t.cu", "content": ""}],
                solution={"task_id": "x", "files": [{"path": "test/t.cu", "content": "x"}]},
            )
        )


def test_duplicate_paths_rejected() -> None:
    with pytest.raises(UnsafePathError, match="duplicate"):
        problem_from_dict(
            rec(context_files=[{"path": "a.h", "content": ""}, {"path": "./a.h", "content": ""}])
        )


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x", "a/../../b", "", "a\\b", "a/\x00"])
def test_unsafe_paths_rejected(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        check_relative_path(bad)
    with pytest.raises(ValueError):
        SourceFile(path=bad, content="")


segment = st.text(
    alphabet=st.characters(categories=["L", "N"], include_characters="_-."), min_size=1, max_size=8
)


@given(st.lists(segment, min_size=1, max_size=5))
def test_path_rule_properties(parts: list[str]) -> None:
    path = "/".join(parts)
    meaningful = [p for p in parts if p != "."]
    if ".." in parts or not meaningful:
        with pytest.raises(UnsafePathError):
            check_relative_path(path)
    else:
        norm = check_relative_path(path)
        assert not norm.startswith("/")
        assert ".." not in norm.split("/")
        assert norm == "/".join(meaningful)
        assert check_relative_path(norm) == norm  # idempotent


@given(st.text(max_size=20).map(lambda s: "/" + s))
def test_absolute_paths_always_rejected(path: str) -> None:
    with pytest.raises(UnsafePathError):
        check_relative_path(path)
