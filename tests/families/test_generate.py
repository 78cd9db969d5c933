"""Generation: deterministic for a seed, distinct problems, none equal to a hand-written one,
the default set's size and spread, the ``generated`` sources, and storage (directories and
datapacks read back equal, hashes verified)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from cudaenv.errors import IntegrityError, SpecError
from cudaenv.families import (
    FAMILIES,
    RELEASE,
    family_names,
    generate,
    get_family,
    mutants,
    sample,
    write,
)
from cudaenv.families.generate import allocate, from_source
from cudaenv.grading.speed_of_light import work_of
from cudaenv.problems import load_suite
from cudaenv.problems.datapack import read_problem_datapack
from cudaenv.problems.directory import load_problem_tree


def test_same_seed_same_problems_other_seed_others() -> None:
    a = generate(count=40, seed=11)
    b = generate(count=40, seed=11)
    c = generate(count=40, seed=12)
    assert [p.content_hash() for p in a] == [p.content_hash() for p in b]
    assert [p.task_id for p in a] != [p.task_id for p in c]
    assert len(a) == 40


def test_every_family_is_registered_and_renders_its_contract() -> None:
    assert family_names() == list(FAMILIES)
    for name in family_names():
        fam = get_family(name)
        assert fam.name == name
        (p,) = generate([name], count=1, seed=3)
        meta = p.metadata
        assert meta.family == name and meta.params and meta.generator_version
        assert meta.difficulty in ("easy", "medium", "hard")
        assert "generated" in meta.tags and RELEASE in meta.releases
        assert p.solution is not None and p.baseline_solution is not None
        assert p.has_benchmark and work_of(p) is not None
        assert meta.forbidden_references, name
        assert len([m for m in mutants(p) if m.deterministic]) >= 3
        kinds = {m.kind for m in mutants(p)}
        assert "tail" in kinds and kinds & {"operator", "axis"}, (name, kinds)
        ref = {f.path: f.content for f in p.solution.files}
        for m in mutants(p):
            assert set(m.files) == set(ref) and m.files != ref, (name, m.name)


def test_unknown_family_and_bad_options_name_the_field() -> None:
    with pytest.raises(SpecError) as err:
        generate(["no-such-family"], count=1)
    assert err.value.field == "families"
    with pytest.raises(SpecError) as err:
        from_source("generated:seed=1,colour=red")
    assert err.value.field == "colour"
    with pytest.raises(SpecError) as err:
        from_source("generated:seed=x")
    assert err.value.field == "seed"


def test_allocation_respects_weights_and_full_spaces() -> None:
    fams = [get_family(n) for n in family_names()]
    quota = allocate(fams, 100)
    assert sum(quota) == 100 and all(q > 0 for q in quota)
    finite = [f for f in fams if f.space() is not None]
    sizes = [len(f.space() or []) for f in finite]
    assert allocate(finite, sum(sizes)) == sizes
    with pytest.raises(SpecError):
        allocate(finite, sum(sizes) + 1)
    small = min(range(len(finite)), key=lambda i: sizes[i])
    pair = [finite[small], finite[(small + 1) % len(finite)]]
    want = 2 * sizes[small] + 3
    if want <= sizes[small] + len(pair[1].space() or []):
        got = allocate(pair, want)  # the small space is full; the other takes the rest
        assert got == [sizes[small], want - sizes[small]]


def test_sample_spans_every_family_and_is_deterministic() -> None:
    problems = generate(count=120, seed=5)
    picked = sample(problems, 30, seed=1)
    assert len(picked) == 30
    assert {p.metadata.family for p in picked} == {p.metadata.family for p in problems}
    assert [p.task_id for p in picked] == [p.task_id for p in sample(problems, 30, seed=1)]
    assert [p.task_id for p in picked] != [p.task_id for p in sample(problems, 30, seed=2)]


def test_generated_source_and_dates() -> None:
    suite = load_suite("generated:seed=4,count=12,date=2027-01-15")
    assert len(suite) == 12 and suite.source == "generated:seed=4,count=12,date=2027-01-15"
    assert {p.date for p in suite} == {date(2027, 1, 15)}
    assert len(suite.filter(since="2027-01-01")) == 12
    assert len(suite.filter(until="2026-12-31")) == 0
    two = load_suite("generated:seed=4,count=6,families=reduce-axis")
    assert {p.metadata.family for p in two} == {"reduce-axis"}


def test_directory_and_datapack_read_back_equal(tmp_path: Path) -> None:
    problems = generate(count=len(family_names()) * 2, seed=8)
    pack = write(problems, tmp_path / "gen.tar.gz")
    back = read_problem_datapack(pack)
    assert [p.content_hash() for p in back] == [p.content_hash() for p in problems]
    tree = write(problems, tmp_path / "tree")
    loaded = {p.task_id: p for p in load_problem_tree(tree)}
    for p in problems:
        assert loaded[p.task_id].content_hash() == p.content_hash(), p.task_id
    # a tampered pack is refused (the datapack's hashes are verified on read)
    import tarfile

    with tarfile.open(pack) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    members["problems.jsonl"] = members["problems.jsonl"].replace(b'"prompt":"', b'"prompt":"X', 1)
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        import io

        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(IntegrityError):
        read_problem_datapack(bad)


def test_generated_problems_register_and_reset_like_bundled_ones() -> None:
    import gymnasium as gym

    from cudaenv.env.registration import register_suite

    suite = load_suite("generated:count=2,seed=9")
    ids = register_suite(suite)
    env = gym.make(ids[0])
    try:
        obs, info = env.reset(seed=0)
        assert info["task_id"] == suite[0].task_id and suite[0].prompt.splitlines()[0] in obs
    finally:
        env.close()
