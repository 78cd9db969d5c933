"""The grading queue's order: strict priority between levels, round-robin across problems
within a level, first come first served within a problem.

Why round-robin by problem: an RL step submits a whole group of samples of one problem at
once; served in arrival order, one problem's 64 benchmarks would hold every grader while
the other problems' episodes (and their workers) wait. Pure data, no Ray: the scheduler
holds one queue per grader kind.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class FairQueue(Generic[T]):
    """Items under (priority, problem): :meth:`pop` takes the lowest priority number first
    and, within it, the problem that was served longest ago."""

    def __init__(self) -> None:
        self._levels: dict[int, OrderedDict[str, deque[T]]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, item: T, *, priority: int, problem: str, front: bool = False) -> None:
        """Queue ``item``; ``front``: ahead of its problem's others (work being retried)."""
        level = self._levels.setdefault(priority, OrderedDict())
        items = level.get(problem)
        if items is None:
            items = level[problem] = deque()
            if front:
                level.move_to_end(problem, last=False)
        (items.appendleft if front else items.append)(item)
        self._size += 1

    def pop(self) -> T | None:
        for priority in sorted(self._levels):
            level = self._levels[priority]
            if not level:
                continue
            problem, items = next(iter(level.items()))
            item = items.popleft()
            if items:
                level.move_to_end(problem)  # its next item waits for every other problem's
            else:
                del level[problem]
            self._size -= 1
            return item
        return None

    def remove(self, pred: Callable[[T], bool]) -> list[T]:
        """Take out every item ``pred`` holds for (e.g. work that waited too long)."""
        out: list[T] = []
        for level in self._levels.values():
            for problem in list(level):
                keep = deque(x for x in level[problem] if not pred(x))
                out += [x for x in level[problem] if pred(x)]
                if keep:
                    level[problem] = keep
                else:
                    del level[problem]
        self._size -= len(out)
        return out

    def __iter__(self) -> Iterator[T]:
        for priority in sorted(self._levels):
            for items in self._levels[priority].values():
                yield from items
