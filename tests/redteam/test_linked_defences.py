"""The family-1 spellings of cudaenv/redteam/catalog_linked.py against their defence, on and
off: graded against a TOKEN harness of cpu-add (the defence off: the verdict lives in the
process that links the solution) each passes with a wrong ``add``; against the split cpu-add
(its runner holds no token, the trusted checker decides) it gets nothing. Both sides are
graded with the static and toolchain rules off, so the split design alone is what stops it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.redteam.catalog_linked import (
    CTORS_WORD_HOOK,
    GMON_START_HOOK,
    RAW_SYSCALL_THIEF,
    UNIQUE_MEMCMP,
)
from cudaenv.redteam.fixtures import fixture_suite
from tests.redteam.test_split_defences import (  # noqa: F401 (fixtures)
    grade,
    private_cache,
    rules_off,
    token_add,
)

LINKED = {
    "raw-syscall-thief": (RAW_SYSCALL_THIEF, "ne"),
    "ctors-word-hook": (CTORS_WORD_HOOK, "ne"),
    "gmon-start-hook": (GMON_START_HOOK, "ne"),
    "unique-memcmp": (UNIQUE_MEMCMP, "memcmp"),
}


@pytest.mark.usefixtures("private_cache", "rules_off")
@pytest.mark.parametrize("name", list(LINKED))
def test_a_linked_trick_beats_a_token_harness_and_not_a_split_one(
    tmp_path: Path, name: str
) -> None:
    source, compare = LINKED[name]
    token = grade(token_add(tmp_path, compare), "solution.cpp", source)
    assert token.passed is True, token  # the defence off: the trick decides the verdict
    split = grade(fixture_suite().problem("cpu-add"), "solution.cpp", source)
    assert split.passed is False and split.failure == "agent", split
    assert "wrong outputs: pairs: add(a, b):" in split.reason, split.reason


@pytest.mark.usefixtures("private_cache")
def test_a_unique_memcmp_is_stopped_by_the_shadow_rule_and_by_the_split_design(
    tmp_path: Path,
) -> None:
    """Every static and toolchain rule on, a token harness: the shadow rule reads the nm kind
    'u' definition (the harnesses cudaenv does not own keep their token); the split harness
    stops it with the rules off (test_split_defences' rules_off)."""
    token = grade(token_add(tmp_path, "memcmp"), "solution.cpp", UNIQUE_MEMCMP)
    assert token.passed is False and any("'memcmp'" in s for s in token.suspected_hack), token
    split = grade(fixture_suite().problem("cpu-add"), "solution.cpp", UNIQUE_MEMCMP)
    assert split.passed is False and split.failure == "agent", split
