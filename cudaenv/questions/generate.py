"""Generating a question set: ``count`` questions split evenly over the asked kinds, each
drawn from the families that can make it (round-robin, so every family appears), each from
its own seeded ``random.Random``; the same arguments give the same questions, byte for byte.

A draw that cannot make a question (no exact input for these parameters, a mutant without a
model, an unverified truth when those are left out, a prompt that gives the answer away
(:mod:`cudaenv.questions.guards`), a duplicate) is retried with the next
family and a fresh stream; a kind that no selected family can make is a SpecError naming it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from cudaenv.errors import SpecError
from cudaenv.questions import kinds_code, kinds_launch, kinds_memory, kinds_occupancy, kinds_race
from cudaenv.questions.adapter import family_names
from cudaenv.questions.guards import leak
from cudaenv.questions.model import KINDS, Kind, Question

DEFAULT_COUNT = 200
DEFAULT_SEED = 2026
_ATTEMPTS = 60  # draws per question before the kind gives up

Maker = Callable[[Any, random.Random], Question | None]
#: kind -> (which families can make it; None: the kind is about a warp, not a family), maker
MAKERS: dict[Kind, tuple[Callable[[str], bool] | None, Maker]] = {
    "exec-output": (kinds_code.eligible, kinds_code.make_exec_output),
    "test-output": (kinds_code.eligible, kinds_code.make_test_output),
    "launch": (kinds_launch.eligible, kinds_launch.make_launch),
    "bug-locate": (lambda f: True, kinds_code.make_bug_locate),
    "race": (kinds_race.eligible, kinds_race.make_race),
    "occupancy": (kinds_occupancy.eligible, kinds_occupancy.make_occupancy),
    "bank": (None, kinds_memory.make_bank),
    "coalesce": (None, kinds_memory.make_coalesce),
}


def _quotas(kinds: list[Kind], count: int) -> list[int]:
    base, extra = divmod(count, len(kinds))
    return [base + (i < extra) for i in range(len(kinds))]


def _finish(q: Question) -> Question:
    topic = q.family or "warp"
    return q.model_copy(update={"task_id": f"q-{q.kind}-{topic}-{q.content_hash()[:12]}"})


def generate_questions(
    count: int = DEFAULT_COUNT,
    seed: int = DEFAULT_SEED,
    kinds: Iterable[str] | None = None,
    families: Iterable[str] | None = None,
    *,
    unverified: bool = False,
) -> list[Question]:
    """``count`` distinct questions of ``kinds`` (all by default) from ``families`` (all).

    ``unverified`` keeps questions whose truth no second path has confirmed yet (the C++
    mutants' outputs and races before a GPU run); by default they are left out.
    """
    chosen = list(kinds or KINDS)
    if unknown := sorted(set(chosen) - set(KINDS)):
        raise SpecError(
            f"unknown question kind(s) {unknown}; known: {', '.join(KINDS)}", field="kinds"
        )
    if count < 0:
        raise SpecError("count must be >= 0", field="count")
    names = family_names()
    fams = list(families) if families is not None else names
    if unknown := sorted(set(fams) - set(names)):
        raise SpecError(
            f"unknown family(ies) {unknown}; known: {', '.join(names)}", field="families"
        )
    out: list[Question] = []
    seen: set[str] = set()
    for kind, quota in zip(chosen, _quotas(chosen, count), strict=True):  # type: ignore[arg-type]
        can, make = MAKERS[kind]  # type: ignore[index]
        pool: list[Any] = [None] if can is None else [f for f in fams if can(f)]
        if quota and not pool:
            raise SpecError(f"no selected family can make {kind!r} questions", field="families")
        start = random.Random(f"questions:{seed}:{kind}").randrange(len(pool)) if pool else 0
        for slot in range(quota):
            for attempt in range(_ATTEMPTS):
                family = pool[(start + slot + attempt) % len(pool)]
                rng = random.Random(f"questions:{seed}:{kind}:{slot}:{attempt}")
                q = make(family, rng)
                if q is None or (not q.verified and not unverified) or leak(q) is not None:
                    continue
                q = _finish(q)
                if q.content_hash() in seen:
                    continue
                seen.add(q.content_hash())
                out.append(q)
                break
            else:
                raise SpecError(f"could not make {quota} distinct {kind!r} questions "
                                f"from {', '.join(str(p) for p in pool)}", field="count")  # fmt: skip
    return out


def from_source(source: str) -> list[Question]:
    """Questions for ``questions[:seed=S,count=N,kinds=a+b,families=x+y,unverified=1]``."""
    _, _, opts = source.partition(":")
    args: dict[str, Any] = {}
    for item in filter(None, (o.strip() for o in opts.split(","))):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in ("seed", "count", "kinds", "families", "unverified"):
            raise SpecError(f"bad option {item!r} in {source!r}; options: seed, count, kinds, "
                            "families, unverified", field=key or item)  # fmt: skip
        if key in ("seed", "count"):
            try:
                args[key] = int(value)
            except ValueError:
                raise SpecError(f"{key} must be an integer in {source!r}", field=key) from None
        elif key == "unverified":
            if value not in ("0", "1"):
                raise SpecError(f"unverified must be 0 or 1 in {source!r}", field=key)
            args[key] = value == "1"
        else:
            args[key] = [v for v in value.split("+") if v]
    return generate_questions(**args)


__all__ = ["DEFAULT_COUNT", "DEFAULT_SEED", "MAKERS", "from_source", "generate_questions"]
