"""The default set (``load_suite("generated")``): at least 1,000 problems, 250 of them numba,
every family, a difficulty spread, one date and release label, all distinct, and none equal to
a hand-written problem."""

from __future__ import annotations

from collections import Counter

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
