"""``SuiteEnv``: one env over many problems, a task chosen at every reset.

Training loops sample tasks per episode; one env per problem (and one gymnasium id each)
would make them manage a pool of envs. ``reset(seed=)`` draws the task from the env's
gymnasium ``np_random`` (so a seed reproduces it) unless ``options["task_id"]`` names one.
Made by :func:`cudaenv.make_suite` or ``gymnasium.make("cudaenv/suite-v0", ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cudaenv.env.core import CudaEnv
from cudaenv.env.modes import can_optimize, check_mode
from cudaenv.errors import ModeError, SpecError
from cudaenv.problems.model import Mode, Problem
from cudaenv.problems.suite import Suite


def _select(
    suite: Suite, ids: Iterable[str] | None, groups: Iterable[str] | None, mode: Mode
) -> Suite:
    check_mode(mode)
    for task_id in ids or ():
        suite[task_id]  # an unknown id raises, naming it and its close matches
    chosen = suite.filter(
        include=list(ids) if ids is not None else None,
        groups=list(groups) if groups is not None else None,
    )
    if mode == "optimize":
        able = [p for p in chosen if can_optimize(p)]
        if ids is not None and len(able) < len(chosen):
            lacking = sorted(set(chosen.ids) - {p.task_id for p in able})
            raise ModeError(f"optimize mode needs a benchmark and a baseline; {lacking} lack them")
        chosen = Suite(able, source=suite.source)
    if not len(chosen):
        raise SpecError(
            f"no problem of {suite.source} matches ids={ids!r} groups={groups!r} in {mode} mode",
            field="ids",
        )
    return chosen


class SuiteEnv(CudaEnv):
    """A :class:`CudaEnv` whose problem is drawn from a suite at every ``reset``.

    Args:
        source: a suite source (``load_suite``'s argument) or a :class:`Suite`.
        ids: keep only these task ids (unknown ones raise, naming them).
        groups: keep only problems of these groups.
        mode: the mode of every episode (``reset(options={"mode": ...})`` switches it).
        **env_options: the rest of :class:`CudaEnv`'s options (sandbox, max_steps, ...).

    ``problems`` lists the candidates; ``options["task_id"]`` outside them raises
    :class:`~cudaenv.errors.ProblemNotFoundError` with the close matches.
    """

    def __init__(
        self,
        source: str | Suite = "builtin",
        *,
        ids: Iterable[str] | None = None,
        groups: Iterable[str] | None = None,
        mode: Mode = "solve",
        **env_options: Any,
    ) -> None:
        if "problem" in env_options:
            raise SpecError("SuiteEnv picks the problem itself; pass ids=[...]", field="problem")
        if isinstance(source, Suite):
            full = source
        else:
            from cudaenv.problems.loader import load_suite

            full = load_suite(source)
        chosen = _select(full, ids, groups, mode)
        super().__init__(chosen[0], mode=mode, source=full.source, **env_options)
        self._suite = chosen

    @property
    def problems(self) -> Suite:
        """The problems a reset draws from."""
        assert self._suite is not None
        return self._suite

    def _choose(self, options: Mapping[str, Any]) -> Problem:
        if options.get("task_id") is not None:
            return super()._choose(options)
        suite = self.problems
        return suite[int(self.np_random.integers(len(suite)))]
