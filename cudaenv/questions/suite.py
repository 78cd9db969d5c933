"""``QuestionSuite``: questions in a stable order, by task_id or position, filterable the way
the CLI filters problems (``include`` ids, ``groups`` = kinds), with per-kind statistics."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from cudaenv.errors import ProblemNotFoundError, SpecError
from cudaenv.questions.model import Question, kind_counts


class QuestionSuite(Sequence[Question]):
    """``suite["q-..."]`` by id, ``suite[0]`` by position; ``source`` names where it came from."""

    def __init__(self, questions: Iterable[Question], *, source: str = "<memory>") -> None:
        self._items = list(questions)
        self.source = source
        self._by_id: dict[str, Question] = {}
        for q in self._items:
            if q.task_id in self._by_id:
                raise SpecError(
                    "duplicate task_id in question suite", source=source, task_id=q.task_id
                )
            self._by_id[q.task_id] = q

    @overload
    def __getitem__(self, key: int) -> Question: ...
    @overload
    def __getitem__(self, key: str) -> Question: ...
    @overload
    def __getitem__(self, key: slice) -> QuestionSuite: ...
    def __getitem__(self, key: int | str | slice) -> Question | QuestionSuite:
        if isinstance(key, str):
            try:
                return self._by_id[key]
            except KeyError:
                raise ProblemNotFoundError(f"no question {key!r} in {self.source}") from None
        if isinstance(key, slice):
            return QuestionSuite(self._items[key], source=self.source)
        return self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Question]:
        return iter(self._items)

    def __contains__(self, item: object) -> bool:
        return item in self._by_id if isinstance(item, str) else item in self._items

    def __repr__(self) -> str:
        return f"QuestionSuite({len(self)} questions from {self.source})"

    @property
    def ids(self) -> list[str]:
        return [q.task_id for q in self._items]

    def filter(
        self,
        *,
        include: Iterable[str] | None = None,
        groups: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        families: Iterable[str] | None = None,
        verified: bool | None = None,
        **unsupported: Any,
    ) -> QuestionSuite:
        """The questions matching every filter (``groups`` are kinds); a problem-only filter
        (``tags``, ``difficulty``, dates...) given a value is a SpecError."""
        if given := sorted(k for k, v in unsupported.items() if v is not None):
            raise SpecError(f"questions cannot be filtered by {given}", field=given[0])
        inc = set(include) if include is not None else None
        if inc is not None and (missing := inc - set(self._by_id)):
            raise ProblemNotFoundError(f"unknown question id(s) {sorted(missing)} in {self.source}")
        kinds = set(groups) if groups is not None else None
        fams = set(families) if families is not None else None
        exc = set(exclude or ())

        def keep(q: Question) -> bool:
            return (
                (inc is None or q.task_id in inc)
                and q.task_id not in exc
                and (kinds is None or q.kind in kinds)
                and (fams is None or q.family in fams)
                and (verified is None or q.verified == verified)
            )

        return QuestionSuite([q for q in self._items if keep(q)], source=self.source)

    def by_kind(self) -> dict[str, dict[str, Any]]:
        """Per kind: the count, how many are verified, and the chance level
        (:func:`cudaenv.questions.model.kind_counts`)."""
        return kind_counts(self._items)

    def to_datapack(self, path: str | Path, *, description: str | None = None) -> Path:
        """Write the questions as a datapack (answers in their own file); see
        :func:`cudaenv.questions.datapack.write_questions`."""
        from cudaenv.questions.datapack import write_questions

        return write_questions(self._items, path, source=self.source, description=description)


__all__ = ["QuestionSuite"]
