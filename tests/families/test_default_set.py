"""The default set (``load_suite("generated")``): at least 1,000 problems, 250 of them numba,
every family, a difficulty spread, one date and release label, all distinct, and none equal to
a hand-written problem."""

from __future__ import annotations

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


def test_every_problem_declares_valid_work_and_python_harnesses_stay_lean() -> None:
    import ast

    from cudaenv.grading.speed_of_light import BUILTIN_DEVICES, floor_ms, sol_ms, work_of
    from cudaenv.package_data import data_path
    from tests.grading.bench_work import floor_expected_ms, roofline_ms

    shared = (data_path("envs") / "cuda-python" / "_shared" / "test" / "pychild.py").read_text()
    for p in default_set():
        work = work_of(p)
        assert work is not None, p.task_id
        for device in BUILTIN_DEVICES:
            assert sol_ms(work, device) == pytest.approx(roofline_ms(work, device)), p.task_id
            assert floor_ms(work, device) == pytest.approx(floor_expected_ms(work, device))
        if p.problem_type != "cuda_python":
            continue
        files = {f.path: f.content for f in p.test_files}
        assert files["test/pychild.py"] == shared  # the group's one helper, embedded unchanged
        harness = files[p.test_command.split()[1]]
        imported = {
            a.name.split(".")[0]
            for n in ast.walk(ast.parse(harness))
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])
        }
        # the parent never imports solution code, numba or anything that starts CUDA
        assert imported <= {"sys", "os", "numpy", "pychild"}, (p.task_id, imported)
