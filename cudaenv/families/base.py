"""The family framework: a parameter space plus renderers that turn one parameter set into a
complete :class:`~cudaenv.problems.model.Problem` in the authoring layout (prompt, context
header, hidden harness with its independent host reference, reference solution, naive
baseline) and into the wrong solutions (mutants) the harness must reject.

A family module defines one :class:`Family` subclass and one line in
:mod:`cudaenv.families.registry`; everything shared (commands, ids, metadata, release label)
is added here, so every generated problem has the same shape.
"""

from __future__ import annotations

import hashlib
import json
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, ClassVar, Literal

from cudaenv.errors import SpecError
from cudaenv.problems.model import Problem, ProblemType, Solution, SourceFile

#: bumped whenever any family renders different text for the same parameters
GENERATOR_VERSION = "1"
#: the date of this generator version's release: the default ``date`` of its problems
GENERATOR_DATE = Date(2026, 12, 2)
#: the release label (``metadata.releases``) of problems made by this generator version
RELEASE = f"generated-v{GENERATOR_VERSION}"

Params = dict[str, Any]
Difficulty = Literal["easy", "medium", "hard"]
MutantKind = Literal["tail", "operator", "axis", "sync", "accumulation", "identity", "boundary"]


@dataclass(frozen=True)
class Mutant:
    """A wrong solution rendered beside the reference: ``files`` replace the reference's."""

    name: str
    kind: MutantKind
    description: str
    files: dict[str, str]
    #: the harness rejects it deterministically (False: a race, only likely on a real GPU)
    deterministic: bool = True

    def solution(self, task_id: str) -> Solution:
        return Solution(task_id=task_id, files=_files(self.files))


@dataclass
class Parts:
    """What a family renders for one parameter set; :func:`build_problem` adds the rest."""

    prompt: str
    context: dict[str, str]  # workspace-relative paths (include/...)
    tests: dict[str, str]  # paths under test/
    solution: dict[str, str]
    baseline: dict[str, str]
    difficulty: Difficulty
    tags: list[str]
    work: dict[str, Any]  # flops, bytes, dtype of everything timed in bench_region
    forbidden: list[str]
    harness: str = "test/test_main.cu"  # the test entry point (Python: its script)
    timeout_s: int = 180
    extra_metadata: dict[str, Any] = field(default_factory=dict)


class Family(ABC):
    """A parameter space and its renderers. Subclasses set the class attributes and implement
    :meth:`draw`, :meth:`render` and :meth:`mutants`; a finite space may list itself in
    :meth:`space` (then generation samples it without repeats)."""

    name: ClassVar[str]  # registry key, a slug ("reduce-axis")
    slug: ClassVar[str]  # short task_id prefix ("red")
    problem_type: ClassVar[ProblemType]
    group: ClassVar[str]
    #: share of a mixed generation this family gets, relative to the others
    weight: ClassVar[float] = 1.0

    def space(self) -> list[Params] | None:
        """Every parameter set, when the space is small enough to list (else None)."""
        return None

    @abstractmethod
    def draw(self, rng: random.Random) -> Params:
        """One parameter set (JSON-safe values), drawn from ``rng`` only."""

    @abstractmethod
    def label(self, params: Params) -> str:
        """The readable middle of the task_id, e.g. ``"row-argmax-f16"``."""

    @abstractmethod
    def render(self, params: Params, task_id: str) -> Parts:
        """The problem's texts for ``params`` (``task_id`` only names it in comments)."""

    @abstractmethod
    def mutants(self, params: Params) -> list[Mutant]:
        """At least three wrong solutions of the same problem, each one bug away from the
        reference: the harness must reject every one."""

    def check(self, params: Params) -> Params:
        """``params`` validated and in canonical form; a SpecError names the bad field."""
        return params


def canonical(params: Params) -> str:
    """The one text of a parameter set (sorted keys, no spaces): equal params, equal text."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def task_id(family: Family, params: Params) -> str:
    """``gen-<family slug>-<readable part>-<8 hex of the family, version and params>``."""
    digest = hashlib.sha256(
        f"{family.name}|{GENERATOR_VERSION}|{canonical(params)}".encode()
    ).hexdigest()[:8]
    return f"gen-{family.slug}-{family.label(params)}-{digest}"


def _files(files: dict[str, str]) -> list[SourceFile]:
    return [SourceFile(path=p, content=c) for p, c in sorted(files.items())]


def _commands(problem_type: ProblemType, harness: str) -> dict[str, Any]:
    if problem_type == "cuda_cpp":
        return {
            "build_command": "nvcc -I include -O2 -o test.out solution.cu test/*.cu",
            "test_command": "./test.out",
            "benchmark_command": "./test.out --perf",
            "min_cuda_toolkit": "12.0",
        }
    return {
        "build_command": "python -m py_compile solution.py",
        "test_command": f"python {harness}",
        "benchmark_command": f"python {harness} --perf",
    }


def build_problem(
    family: Family, params: Params, *, date: Date | None = None, parts: Parts | None = None
) -> Problem:
    """The complete Problem for ``params`` (rendered unless ``parts`` is given)."""
    params = family.check(params)
    tid = task_id(family, params)
    parts = parts or family.render(params, tid)
    if parts.difficulty not in ("easy", "medium", "hard"):
        raise SpecError(f"difficulty {parts.difficulty!r}", task_id=tid, field="difficulty")
    metadata: dict[str, Any] = {
        "difficulty": parts.difficulty,
        "tags": ["generated", family.name, *parts.tags],
        "releases": [RELEASE],
        "family": family.name,
        "params": params,
        "generator_version": GENERATOR_VERSION,
        "forbidden_references": parts.forbidden,
        "work": parts.work,
        **parts.extra_metadata,
    }
    return Problem(
        task_id=tid,
        problem_type=family.problem_type,
        date=date or GENERATOR_DATE,
        group=family.group,
        prompt=parts.prompt,
        metadata=metadata,
        context_files=_files(parts.context),
        test_files=_files(parts.tests),
        timing_mode={"type": "region", "include": ["bench_region"], "time_type": "kernel"},
        timeout_seconds=parts.timeout_s,
        compute_capability="8.0",
        solution=Solution(task_id=tid, files=_files(parts.solution)),
        baseline_solution=Solution(task_id=tid, files=_files(parts.baseline)),
        **_commands(family.problem_type, parts.harness),
    )


__all__ = [
    "GENERATOR_DATE",
    "GENERATOR_VERSION",
    "RELEASE",
    "Family",
    "Mutant",
    "Params",
    "Parts",
    "build_problem",
    "canonical",
    "task_id",
]
