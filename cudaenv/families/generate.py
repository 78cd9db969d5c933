"""Generation: ``generate(families, count, seed)`` draws distinct parameter sets from each family
(its share by weight, capped by the size of its space) and renders them; ``default_set()`` is
the released set that ``load_suite("generated")`` serves; ``sample`` picks a slice spanning
every family; ``write`` stores problems as authoring directories or a datapack."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Sequence
from datetime import date as Date
from pathlib import Path
from typing import Any

from cudaenv.errors import SpecError
from cudaenv.families.base import RELEASE, Family, Mutant, Params, build_problem, canonical
from cudaenv.families.registry import family_names, get_family
from cudaenv.problems.model import Problem

DEFAULT_COUNT = 1200
DEFAULT_SEED = 2026
_DRAW_ATTEMPTS = 200  # per wanted parameter set, for families without a listed space


def allocate(families: Sequence[Family], count: int) -> list[int]:
    """How many problems each family gets: shares by weight (largest remainders first),
    none above the size of its space; what a full family cannot take goes to the others."""
    caps = [len(s) if (s := f.space()) is not None else None for f in families]
    quota = [0] * len(families)
    open_ = [i for i in range(len(families))]
    left = count
    while left > 0 and open_:
        total = sum(families[i].weight for i in open_)
        shares = {i: left * families[i].weight / total for i in open_}
        add = {i: int(shares[i]) for i in open_}
        rest = left - sum(add.values())
        for i in sorted(open_, key=lambda i: (-(shares[i] - add[i]), i))[:rest]:
            add[i] += 1
        left = 0
        for i in list(open_):
            cap = caps[i]
            room = add[i] if cap is None else min(add[i], cap - quota[i])
            quota[i] += room
            left += add[i] - room
            if cap is not None and quota[i] >= cap:
                open_.remove(i)
    if left:
        raise SpecError(f"the families hold only {count - left} distinct problems", field="count")
    return quota


def _choose(family: Family, k: int, seed: int) -> list[Params]:
    rng = random.Random(f"{seed}:{family.name}")
    space = family.space()
    if space is not None:
        return rng.sample(space, k)
    seen: dict[str, Params] = {}
    for _ in range(k * _DRAW_ATTEMPTS):
        if len(seen) == k:
            break
        params = family.check(family.draw(rng))
        seen.setdefault(canonical(params), params)
    if len(seen) < k:
        raise SpecError(f"{family.name}: found {len(seen)} distinct problems of {k}", field="count")
    return list(seen.values())


def generate(
    families: Iterable[str] | None = None,
    count: int = DEFAULT_COUNT,
    seed: int = DEFAULT_SEED,
    date: Date | str | None = None,
) -> list[Problem]:
    """``count`` distinct problems from ``families`` (all registered ones by default); the
    same arguments give the same problems, byte for byte."""
    names = list(families or family_names())
    fams = [get_family(n) for n in names]
    if count < 0:
        raise SpecError("count must be >= 0", field="count")
    day = Date.fromisoformat(date) if isinstance(date, str) else date
    problems: list[Problem] = []
    for fam, k in zip(fams, allocate(fams, count), strict=True):
        problems += [build_problem(fam, p, date=day) for p in _choose(fam, k, seed)]
    _check_distinct(problems)
    return problems


def _check_distinct(problems: Sequence[Problem]) -> None:
    ids: set[str] = set()
    hashes: set[str] = set()
    for p in problems:
        h = p.content_hash()
        if p.task_id in ids or h in hashes:
            raise SpecError("two generated problems coincide", task_id=p.task_id)
        ids.add(p.task_id)
        hashes.add(h)


@functools.cache
def _default() -> tuple[Problem, ...]:
    return tuple(generate())


def default_set() -> list[Problem]:
    """The released set (``load_suite("generated")``): made, not shipped; cached."""
    return list(_default())


def from_source(source: str) -> list[Problem]:
    """Problems for a ``generated`` or ``generated:seed=S,count=N,families=a+b,date=D`` source."""
    _, _, opts = source.partition(":")
    if not opts:
        return default_set()
    args: dict[str, Any] = {}
    for item in opts.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in ("seed", "count", "families", "date"):
            raise SpecError(f"bad option {item!r} in {source!r}", field=key or item)
        try:
            args[key] = int(value) if key in ("seed", "count") else value.strip()
        except ValueError:
            raise SpecError(f"{key} must be an integer in {source!r}", field=key) from None
    if "families" in args:
        args["families"] = [f for f in args["families"].split("+") if f]
    return generate(**args)


def sample(problems: Sequence[Problem], n: int, seed: int = 0) -> list[Problem]:
    """``n`` problems spanning every family present: each family's problems shuffled by
    ``seed``, then taken round-robin (families in first-seen order)."""
    by_family: dict[str, list[Problem]] = {}
    for p in problems:
        by_family.setdefault(str(getattr(p.metadata, "family", "") or p.group), []).append(p)
    rng = random.Random(f"sample:{seed}")
    queues = []
    for name, items in by_family.items():
        items = list(items)
        random.Random(f"{rng.random()}:{name}").shuffle(items)
        queues.append(items)
    out: list[Problem] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def mutants(problem: Problem) -> list[Mutant]:
    """The wrong solutions of a generated problem, rendered again from its metadata."""
    meta = problem.metadata
    family, params = getattr(meta, "family", None), getattr(meta, "params", None)
    if not family or params is None:
        raise SpecError("not a generated problem", task_id=problem.task_id, field="metadata")
    return get_family(str(family)).mutants(dict(params))


def write(problems: Iterable[Problem], out: str | Path, *, description: str | None = None) -> Path:
    """Store problems: ``*.tar.gz`` -> a datapack (hashes verified on read, references in
    it), anything else -> authoring directories ``out/<group>/<task_id>/``."""
    out = Path(out)
    problems = list(problems)
    if out.name.endswith((".tar.gz", ".tgz")):
        from cudaenv.problems.datapack import write_problem_datapack

        return write_problem_datapack(problems, out, release=RELEASE, description=description)
    from cudaenv.problems.directory import write_problem_dir

    for p in problems:
        record = p.to_record()
        spec = {"task_id": p.task_id, "problem_type": record.pop("type")}
        for key in ("context_files", "test_files", "check_files", "baseline_solution", "task_id"):
            record.pop(key, None)
        spec.update(record)
        files = {f"context/{f.path}": f.content for f in p.context_files}
        files |= {f.path: f.content for f in (*p.test_files, *p.check_files)}
        for name, sol in (("solution", p.solution), ("baseline", p.baseline_solution)):
            files |= {f"{name}/{f.path}": f.content for f in (sol.files if sol else [])}
        write_problem_dir(out / p.group, spec, files)
    return out


__all__ = [
    "DEFAULT_COUNT",
    "DEFAULT_SEED",
    "allocate",
    "default_set",
    "from_source",
    "generate",
    "mutants",
    "sample",
    "write",
]
