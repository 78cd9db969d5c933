"""The default set (``load_suite("generated")``): at least 1,000 problems, 250 of them numba,
every family, a difficulty spread, one date and release label, all distinct, and none equal to
a hand-written problem."""

from __future__ import annotations

import ast
import sys
from collections import Counter

import pytest

from cudaenv.families import GENERATOR_DATE, RELEASE, default_set, family_names
from cudaenv.problems import load_suite


def test_default_set_size_spread_and_distinctness() -> None:
    problems = default_set()
    assert len(problems) >= 1000
    kinds = Counter(p.problem_type for p in problems)
    assert kinds["cuda_python"] >= 250
    families = Counter(p.metadata.family for p in problems)
    assert set(families) == set(family_names())
    diff = Counter(p.metadata.difficulty for p in problems)
    assert all(diff[d] >= len(problems) // 10 for d in ("easy", "medium", "hard")), diff
    assert {p.date for p in problems} == {GENERATOR_DATE}
    assert all(RELEASE in p.metadata.releases for p in problems)
    assert len({p.task_id for p in problems}) == len(problems)
    assert len({p.content_hash() for p in problems}) == len(problems)
    canon = {(p.metadata.family, repr(sorted(p.metadata.params.items()))) for p in problems}
    assert len(canon) == len(problems)
    suite = load_suite("generated")
    assert suite.ids == [p.task_id for p in problems]
    assert len(suite.filter(since=str(GENERATOR_DATE), until=str(GENERATOR_DATE))) == len(suite)


def test_no_generated_problem_equals_a_hand_written_one() -> None:
    builtin = load_suite("builtin")
    ids = set(builtin.ids)
    hashes = {p.content_hash() for p in builtin}
    prompts = {p.prompt for p in builtin}
    for p in default_set():
        assert p.task_id not in ids and p.content_hash() not in hashes
        assert p.prompt not in prompts


def _imports(source: str) -> set[str]:
    return {
        a.name.split(".")[0]
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])
    }


def test_every_problem_declares_valid_work_and_a_split_harness() -> None:
    """Valid work; a runner (the shared runner library embedded unchanged) and a trusted
    checker: its family's reference module and the glue verbatim, NumPy and the standard
    library only, no token or seed anywhere."""
    from cudaenv.families.checks import ref_source
    from cudaenv.grading.speed_of_light import BUILTIN_DEVICES, floor_ms, sol_ms, work_of
    from cudaenv.problems.shared_libs import shared_libraries
    from tests.grading.bench_work import floor_expected_ms, roofline_ms

    libs = {f.path: f.content for side in shared_libraries().values() for f in side}
    runner = {"cuda_cpp": {"test/runner.cpp", "test/cudaenv_runner.h"},
              "cuda_python": {"test/run.py", "test/cudaenv_pyrunner.py"}}  # fmt: skip
    checks = {"check/check.py", "check/reference.py", "check/family_check.py",
              "check/cudaenv_check.py"}  # fmt: skip
    allowed = {"numpy", "argparse", "sys", "__future__", "collections", "typing", "family_check",
               "reference", "cudaenv_check"} | set(sys.stdlib_module_names)  # fmt: skip
    for p in default_set():
        work = work_of(p)
        assert work is not None, p.task_id
        for device in BUILTIN_DEVICES:
            assert sol_ms(work, device) == pytest.approx(roofline_ms(work, device)), p.task_id
            assert floor_ms(work, device) == pytest.approx(floor_expected_ms(work, device))
        tests = {f.path: f.content for f in p.test_files}
        found = {f.path: f.content for f in p.check_files}
        assert p.split and p.checker.command == "python check/check.py", p.task_id  # type: ignore[union-attr]
        assert set(tests) == runner[p.problem_type] and set(found) == checks, p.task_id
        for path in set(tests) | set(found):
            text = {**tests, **found}[path]
            if path in libs:
                assert text == libs[path], (p.task_id, path)
            assert "CUDAENV_BENCH_SEED" not in text and "CUDAENV_COMPLETION_TOKEN" not in text
        module = str(p.metadata.family).removeprefix("py-").replace("-", "_")
        assert found["check/reference.py"] == ref_source(module), p.task_id
        assert found["check/family_check.py"] == ref_source("family_check"), p.task_id
        for path, text in found.items():
            assert _imports(text) <= allowed, (p.task_id, path, _imports(text) - allowed)
