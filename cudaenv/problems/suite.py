"""A Suite: an ordered, read-only collection of problems, indexable by task_id and filterable."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import overload

from cudaenv.errors import ProblemNotFoundError, SpecError
from cudaenv.problems.model import Problem
from cudaenv.problems.policy import GradingPolicy, policy_named


class Suite(Sequence[Problem]):
    """Problems in a stable order; ``suite["saxpy"]`` by id, ``suite[0]`` by position."""

    def __init__(self, problems: Iterable[Problem], *, source: str = "<memory>") -> None:
        self._problems = list(problems)
        self.source = source
        self._by_id: dict[str, Problem] = {}
        for p in self._problems:
            if p.task_id in self._by_id:
                raise SpecError("duplicate task_id in suite", source=source, task_id=p.task_id)
            self._by_id[p.task_id] = p

    @overload
    def __getitem__(self, key: int) -> Problem: ...
    @overload
    def __getitem__(self, key: str) -> Problem: ...
    @overload
    def __getitem__(self, key: slice) -> Suite: ...
    def __getitem__(self, key: int | str | slice) -> Problem | Suite:
        if isinstance(key, str):
            try:
                return self._by_id[key]
            except KeyError:
                raise ProblemNotFoundError(
                    f"no problem {key!r} in {self.source}{_suggest(key, self._by_id)}"
                ) from None
        if isinstance(key, slice):
            return Suite(self._problems[key], source=self.source)
        return self._problems[key]

    def __len__(self) -> int:
        return len(self._problems)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self._problems)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self._by_id
        return item in self._problems

    def __repr__(self) -> str:
        return f"Suite({len(self)} problems from {self.source})"

    @property
    def ids(self) -> list[str]:
        return [p.task_id for p in self._problems]

    def filter(
        self,
        *,
        groups: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        difficulty: Iterable[str] | str | None = None,
        since: date | str | None = None,
        until: date | str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        problem_type: str | None = None,
        with_benchmark: bool | None = None,
    ) -> Suite:
        """A new Suite of the problems matching every given filter.

        ``since``/``until`` bound the problem date (inclusive) for contamination control;
        problems without a date are dropped when either bound is given. ``tags`` keeps
        problems carrying any of the tags.
        """
        group_set = set(groups) if groups is not None else None
        tag_set = set(tags) if tags is not None else None
        diff_set = (
            {difficulty}
            if isinstance(difficulty, str)
            else (set(difficulty) if difficulty else None)
        )
        lo = date.fromisoformat(since) if isinstance(since, str) else since
        hi = date.fromisoformat(until) if isinstance(until, str) else until
        inc = set(include) if include is not None else None
        exc = set(exclude or ())
        if inc is not None:
            missing = inc - set(self._by_id)
            if missing:
                raise ProblemNotFoundError(f"unknown task_id(s) {sorted(missing)} in {self.source}")

        def keep(p: Problem) -> bool:
            if group_set is not None and p.group not in group_set:
                return False
            if tag_set is not None and not tag_set & set(p.metadata.tags):
                return False
            if diff_set is not None and p.metadata.difficulty not in diff_set:
                return False
            if (lo or hi) and p.date is None:
                return False
            if lo and p.date and p.date < lo:
                return False
            if hi and p.date and p.date > hi:
                return False
            if inc is not None and p.task_id not in inc:
                return False
            if p.task_id in exc:
                return False
            if problem_type is not None and p.problem_type != problem_type:
                return False
            return with_benchmark is None or p.has_benchmark == with_benchmark

        return Suite([p for p in self._problems if keep(p)], source=self.source)

    def with_grading_policy(self, policy: GradingPolicy | str) -> Suite:
        """The same problems, every one graded by ``policy`` (a preset's name or a policy):
        the explicit override of what the source said (:mod:`cudaenv.problems.policy`)."""
        chosen = policy_named(policy) if isinstance(policy, str) else policy
        problems = []
        for p in self._problems:
            q = p.model_copy(update={"grading_policy": chosen})
            q._content_hash = None  # the policy decides grading: a new hash
            problems.append(q)
        return Suite(problems, source=self.source)

    def to_datapack(
        self, path: str | Path, *, release: str = "internal", description: str | None = None
    ) -> Path:
        """Write the suite as a datapack that :func:`cudaenv.load_suite` reads back equal."""
        from cudaenv.problems.datapack import write_problem_datapack

        return write_problem_datapack(
            self._problems, path, release=release, description=description
        )


def _suggest(key: str, ids: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(ids), n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""
