"""The family framework: one parameter space per family, renderings that turn one parameter set
into a complete :class:`~cudaenv.problems.model.Problem` in the authoring layout (prompt,
context header, a split harness: the runner in ``test/`` and the trusted checker in ``check/``
with the family's NumPy reference semantics, reference solution, naive baseline), and the wrong
solutions (mutants) the checker must reject.

A family is ONE :class:`Space` (its parameters, drawn or listed, and their label) and ONE
reference semantics (``cudaenv/families/refs/<family>.py``, NumPy only, copied verbatim into
every problem's checker); its C++ and Python renderings are :class:`Family` subclasses (the
registry's entries) that take the part of the space their language supports (``limits``).
Everything shared (commands, ids, metadata, the checker, release label) is added here, so
every generated problem has the same shape.
"""

from __future__ import annotations

import hashlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, ClassVar, Literal

from cudaenv.errors import SpecError
from cudaenv.problems.model import Problem, ProblemType, Solution, SourceFile
from cudaenv.problems.shared_libs import with_shared_libraries

#: bumped whenever any family renders different text for the same parameters
#: (2: split harnesses: a runner and a trusted NumPy checker; benchmark sizes for the files)
GENERATOR_VERSION = "2"
#: the date of this generator version's release: the default ``date`` of its problems
GENERATOR_DATE = Date(2026, 12, 2)
#: the release label (``metadata.releases``) of problems made by this generator version
RELEASE = f"generated-v{GENERATOR_VERSION}"
#: how the grader runs every generated problem's checker (``check/check.py``)
CHECKER_COMMAND = "python check/check.py"

Params = dict[str, Any]
Limits = Mapping[str, tuple[Any, ...]]
Difficulty = Literal["easy", "medium", "hard"]
MutantKind = Literal["tail", "operator", "axis", "sync", "accumulation", "identity", "boundary"]


@dataclass(frozen=True)
class Mutant:
    """A wrong solution rendered beside the reference: ``files`` replace the reference's."""

    name: str
    kind: MutantKind
    description: str
    files: dict[str, str]
    #: the checker rejects it deterministically (False: a race, only likely on a real GPU)
    deterministic: bool = True

    def solution(self, task_id: str) -> Solution:
        return Solution(task_id=task_id, files=_files(self.files))


@dataclass
class Parts:
    """What a rendering makes for one parameter set; :func:`build_problem` adds the rest."""

    prompt: str
    context: dict[str, str]  # workspace-relative paths (include/...)
    tests: dict[str, str]  # the runner: paths under test/
    checks: dict[str, str]  # the trusted checker: paths under check/
    solution: dict[str, str]
    baseline: dict[str, str]
    difficulty: Difficulty
    tags: list[str]
    work: dict[str, Any]  # flops, bytes, dtype of everything timed in bench_region
    forbidden: list[str]
    timeout_s: int = 180
    extra_metadata: dict[str, Any] = field(default_factory=dict)


class Space(ABC):
    """A family's one parameter space, shared by its renderings. ``limits`` (field -> allowed
    values) is the part a rendering supports, e.g. ``{"dtype": ("f32", "f64")}``."""

    @abstractmethod
    def draw(self, rng: random.Random, limits: Limits) -> Params:
        """One parameter set (JSON-safe values) within ``limits``, drawn from ``rng`` only."""

    @abstractmethod
    def label(self, params: Params) -> str:
        """The readable middle of the task_id, e.g. ``"row-argmax-f16"``."""

    def listed(self, limits: Limits) -> list[Params] | None:
        """Every parameter set within ``limits``, when the space is small enough to list."""
        return None

    def invalid(self, params: Params, limits: Limits) -> str | None:
        """The field that makes ``params`` no member of the space within ``limits`` (None:
        a member). The default tests membership of the listed space."""
        listed = self.listed(limits)
        if listed is None:
            raise NotImplementedError("a drawn space says what makes params invalid")
        if params in listed:
            return None
        return next((k for k, v in params.items() if v not in limits.get(k, (v,))), "params")


class Listed(Space):
    """A space small enough to list: drawing picks a member, checking is membership."""

    def __init__(self, points: Callable[[], list[Params]], label: Callable[[Params], str]):
        self._points, self._label = points, label
        self._cache: dict[str, list[Params]] = {}

    def listed(self, limits: Limits) -> list[Params]:
        key = json.dumps({k: list(v) for k, v in sorted(limits.items())})
        if key not in self._cache:
            self._cache[key] = [
                p
                for p in self._points()
                if all(p.get(k) in allowed for k, allowed in limits.items())
            ]
        return self._cache[key]

    def draw(self, rng: random.Random, limits: Limits) -> Params:
        return rng.choice(self.listed(limits))

    def label(self, params: Params) -> str:
        return self._label(params)


class Family(ABC):
    """A rendering of a family (one registry entry): a language's view of the family's
    :class:`Space` and its renderers. Subclasses set the class attributes and implement
    :meth:`render` and :meth:`mutants`; drawing, checking and labels come from the space."""

    name: ClassVar[str]  # registry key, a slug ("reduce-axis")
    slug: ClassVar[str]  # short task_id prefix ("red")
    problem_type: ClassVar[ProblemType]
    group: ClassVar[str]
    params_space: ClassVar[Space]
    #: the part of the space this rendering supports (field -> allowed values)
    limits: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    #: share of a mixed generation this family gets, relative to the others
    weight: ClassVar[float] = 1.0

    def space(self) -> list[Params] | None:
        """Every parameter set, when the space is small enough to list (else None)."""
        return self.params_space.listed(self.limits)

    def draw(self, rng: random.Random) -> Params:
        """One parameter set (JSON-safe values), drawn from ``rng`` only."""
        return self.params_space.draw(rng, self.limits)

    def check(self, params: Params) -> Params:
        """``params`` validated; a SpecError names the bad field."""
        bad = self.params_space.invalid(params, self.limits)
        if bad is not None:
            raise SpecError(f"not a {self.name} parameter set ({bad}): {params}", field="params")
        return params

    def label(self, params: Params) -> str:
        """The readable middle of the task_id, e.g. ``"row-argmax-f16"``."""
        return self.params_space.label(params)

    @abstractmethod
    def render(self, params: Params, task_id: str) -> Parts:
        """The problem's texts for ``params`` (``task_id`` only names it in comments)."""

    @abstractmethod
    def mutants(self, params: Params) -> list[Mutant]:
        """At least three wrong solutions of the same problem, each one bug away from the
        reference: the checker must reject every one."""


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


def _commands(problem_type: ProblemType) -> dict[str, Any]:
    if problem_type == "cuda_cpp":
        return {
            "build_command": "nvcc -I include -O2 -o test.out solution.cu test/*.cpp",
            "test_command": "./test.out",
            "benchmark_command": "./test.out --perf",
            "min_cuda_toolkit": "12.0",
        }
    return {
        "build_command": "python -m py_compile solution.py",
        "test_command": "python test/cudaenv_pyrunner.py",
        "benchmark_command": "python test/cudaenv_pyrunner.py --perf",
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
    commands = _commands(family.problem_type)
    tests, checks = with_shared_libraries(
        _files(parts.tests), _files(parts.checks), [*commands.values(), CHECKER_COMMAND]
    )
    return Problem(
        task_id=tid,
        problem_type=family.problem_type,
        date=date or GENERATOR_DATE,
        group=family.group,
        prompt=parts.prompt,
        metadata=metadata,
        context_files=_files(parts.context),
        test_files=tests,
        checker={"command": CHECKER_COMMAND},
        check_files=checks,
        timing_mode={"type": "region", "include": ["bench_region"], "time_type": "kernel"},
        timeout_seconds=parts.timeout_s,
        compute_capability="8.0",
        solution=Solution(task_id=tid, files=_files(parts.solution)),
        baseline_solution=Solution(task_id=tid, files=_files(parts.baseline)),
        **commands,
    )


__all__ = [
    "CHECKER_COMMAND",
    "GENERATOR_DATE",
    "GENERATOR_VERSION",
    "RELEASE",
    "Family",
    "Limits",
    "Listed",
    "Mutant",
    "Params",
    "Parts",
    "Space",
    "build_problem",
    "canonical",
    "task_id",
]
