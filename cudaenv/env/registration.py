"""Gymnasium registration: ``gymnasium.make("cudaenv/<id>-v0")``, ``cudaenv.make``, and
the suite env: ``gymnasium.make("cudaenv/suite-v0", source=..., ids=..., mode=...)`` /
``cudaenv.make_suite``.

The bundled suite is registered on ``import cudaenv`` from its directory names alone (the
authoring convention names each problem's folder after its task_id), so importing stays
cheap; the problem itself is loaded when an env is made.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

import gymnasium as gym

from cudaenv.problems.model import Mode, Problem
from cudaenv.problems.suite import Suite

NAMESPACE = "cudaenv"
VERSION = 0
ENTRY_POINT = "cudaenv.env.core:CudaEnv"
SUITE_ID = f"{NAMESPACE}/suite-v{VERSION}"
SUITE_ENTRY_POINT = "cudaenv.env.suite:SuiteEnv"


def env_id(task_id: str) -> str:
    """The gymnasium id of a task: ``cudaenv/<task_id with unsafe chars as '-'>-v0``."""
    return f"{NAMESPACE}/{re.sub(r'[^A-Za-z0-9_.]+', '-', task_id).strip('-')}-v{VERSION}"


def _register(
    task_id: str, source: str, problem: Problem | None = None, *, override: bool = False
) -> str:
    eid = env_id(task_id)
    if eid in gym.registry and not override:
        return eid
    kwargs: dict[str, Any] = {
        "problem": problem if problem is not None else task_id,
        "source": source,
    }
    gym.register(id=eid, entry_point=ENTRY_POINT, kwargs=kwargs, disable_env_checker=True)
    return eid


def register_suite_env() -> str:
    """Register ``cudaenv/suite-v0`` (a task per reset; see :class:`cudaenv.env.suite.SuiteEnv`)."""
    if SUITE_ID not in gym.registry:
        gym.register(id=SUITE_ID, entry_point=SUITE_ENTRY_POINT, disable_env_checker=True)
    return SUITE_ID


def register_builtin() -> list[str]:
    """Register the suite env and every bundled problem, reading only folder names."""
    from cudaenv.package_data import data_path

    register_suite_env()  # first: a problem folder named "suite" must not take its id

    try:
        root = data_path("envs")
    except FileNotFoundError:
        return []
    ids = []
    for group in sorted(os.scandir(root), key=lambda e: e.name):
        if not group.is_dir():
            continue
        for entry in sorted(os.scandir(group.path), key=lambda e: e.name):
            if os.path.isfile(os.path.join(entry.path, "problem-spec.yaml")):
                ids.append(_register(entry.name, "builtin"))
    return ids


def register_suite(suite: Suite, *, override: bool = False) -> list[str]:
    """Register every problem of ``suite``; returns the gymnasium ids."""
    return [_register(p.task_id, suite.source, p, override=override) for p in suite]


def _spec(eid: str, entry_point: str, kwargs: dict[str, Any]) -> gym.envs.registration.EnvSpec:
    """The spec ``gymnasium.make`` would have set: the id, entry point and these kwargs."""
    from gymnasium.envs.registration import EnvSpec

    return EnvSpec(id=eid, entry_point=entry_point, kwargs=kwargs, disable_env_checker=True)


def make(problem: Problem | str, *, source: str = "builtin", **options: Any) -> Any:
    """Make a CudaEnv for a problem (object or task_id in ``source``); its ``spec`` is the
    one ``gymnasium.make`` gives (``spec.id`` is :func:`env_id` of the task). For a question
    (a :class:`~cudaenv.questions.model.Question`, or a task_id of a question source) a
    :class:`~cudaenv.questions.env.QuestionEnv`."""
    from cudaenv.questions.model import Question
    from cudaenv.questions.source import is_question_source

    if isinstance(problem, Question) or (isinstance(problem, str) and is_question_source(source)):
        from cudaenv.questions.env import QuestionEnv

        return QuestionEnv(problem, source=source, **options)
    from cudaenv.env.core import CudaEnv

    env = CudaEnv(problem, source=source, **options)
    kwargs = {"problem": problem, "source": source, **options}
    env.spec = _spec(env_id(env.problem.task_id), ENTRY_POINT, kwargs)
    return env


def make_suite(
    source: str | Suite = "builtin",
    ids: Iterable[str] | None = None,
    groups: Iterable[str] | None = None,
    *,
    mode: Mode = "solve",
    **options: Any,
) -> Any:
    """A :class:`~cudaenv.env.suite.SuiteEnv`: one env that draws a task per reset (for a
    question source, a :class:`~cudaenv.questions.env.QuestionEnv` drawing a question)."""
    from cudaenv.env.suite import SuiteEnv
    from cudaenv.questions.source import is_question_source

    if is_question_source(source):
        from cudaenv.questions.env import question_suite_env

        return question_suite_env(source, ids, groups, **options)
    env = SuiteEnv(source, ids=ids, groups=groups, mode=mode, **options)
    kwargs = {"source": source, "ids": ids, "groups": groups, "mode": mode, **options}
    env.spec = _spec(SUITE_ID, SUITE_ENTRY_POINT, kwargs)
    return env
