"""The release gate of a repository task: the six transitions SWE-kokkos-bench checks.

1. ``parent_builds``: the base commit configures and its targets build (the pre-built tree).
2. ``p2p_on_parent``: the pass-to-pass checks pass on the base commit, without the test patch.
3. ``test_patch_fails``: the test patch alone fails, at the stage the row says (``compile``:
   configure, build or a build check; ``runtime``: a test check after a good build).
4. ``gold_passes``: the production patch passes every fail-to-pass and pass-to-pass check.
5. ``oracle``: the oracle agent, through a real episode (checkout, ``git apply``, the diff
   collected from its workspace), gets reward 1.
6. ``nop``: the NOP agent (submits the untouched checkout) gets reward 0.

Why here: 5 and 6 run agents through the env, which the grading package must not import.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from cudaenv.grading.release_gate import ValidationRow
from cudaenv.grading.repo_grader import grade_repository, repo_factory
from cudaenv.grading.repo_prebuild import prebuilt
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import base_tree


class Transition(BaseModel):
    name: str
    ok: bool
    detail: str
    seconds: float
    verdict: Verdict | None = None


def _describe(v: Verdict) -> str:
    return "passed" if v.passed else f"{v.failure or 'failed'}: {v.reason}"


def _stage_failed(v: Verdict) -> str | None:
    """Where a graded tree failed: compile or runtime (None: it did not fail)."""
    if v.passed is not False:
        return None
    return "runtime" if v.compiled else "compile"


NAMES = ("parent_builds", "p2p_on_parent", "test_patch_fails", "gold_passes", "oracle", "nop")


def _parent_builds(problem: Problem, sandbox: Any, opts: dict[str, Any]) -> tuple[bool, str, None]:
    spec = problem.repository
    assert spec is not None
    pre = prebuilt(spec, base_tree(spec), repo_factory(sandbox, opts))
    detail = f"configure {pre.configure.status} ({pre.configure.seconds}s), "
    return pre.ok, detail + f"build {pre.build.status} ({pre.build.seconds}s)", None


def _p2p_on_parent(
    problem: Problem, sandbox: Any, opts: dict[str, Any]
) -> tuple[bool, str, Verdict | None]:
    if not problem.repository or not problem.repository.p2p:
        return True, "no p2p checks", None
    v = grade_repository(
        problem, "", sandbox=sandbox, sandbox_options=opts, test_patch=False, phases=("p2p",)
    )
    return v.passed is True, _describe(v), v


def _test_patch_fails(
    problem: Problem, sandbox: Any, opts: dict[str, Any]
) -> tuple[bool, str, Verdict]:
    v = grade_repository(problem, "", sandbox=sandbox, sandbox_options=opts)
    where, want = _stage_failed(v), problem.repository.failure_stage if problem.repository else None
    ok = where is not None and v.failure == "agent" and (want is None or where == want)
    return ok, f"fails at {where or 'no stage'} (expected {want or 'any'}): {v.reason}", v


def _gold_passes(
    problem: Problem, sandbox: Any, opts: dict[str, Any]
) -> tuple[bool, str, Verdict | None]:
    if problem.solution is None:
        return False, "no production patch", None
    v = grade_repository(problem, problem.solution, sandbox=sandbox, sandbox_options=opts)
    return v.passed is True, _describe(v), v


def _episode(name: str) -> Any:
    def run(
        problem: Problem, sandbox: Any, opts: dict[str, Any]
    ) -> tuple[bool, str, Verdict | None]:
        from cudaenv.agents.nop import NopAgent
        from cudaenv.agents.oracle import OracleAgent
        from cudaenv.env.core import CudaEnv

        if name == "oracle" and problem.solution is None:
            return False, "no production patch", None
        agent, want = (OracleAgent(), 1.0) if name == "oracle" else (NopAgent(), 0.0)
        env = CudaEnv(problem, sandbox=sandbox, sandbox_options=opts, max_steps=10)
        try:
            traj = agent.run(env, seed=0)
        finally:
            env.close()
        v = traj.verdict
        ok = v is not None and v.failure != "infrastructure" and traj.reward == want
        return ok, f"reward {traj.reward}" + (f" ({_describe(v)})" if v is not None else ""), v

    return run


STEPS = {
    "parent_builds": _parent_builds,
    "p2p_on_parent": _p2p_on_parent,
    "test_patch_fails": _test_patch_fails,
    "gold_passes": _gold_passes,
    "oracle": _episode("oracle"),
    "nop": _episode("nop"),
}


def transitions(
    problem: Problem,
    *,
    sandbox: Any = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    only: tuple[str, ...] = NAMES,
) -> list[Transition]:
    """Run the six transitions (see the module docstring; ``only`` some of them) in order,
    each with its seconds."""
    if problem.repository is None:
        raise ValueError(f"{problem.task_id} is not a repository task")
    opts = dict(sandbox_options or {})
    out = []
    for name in NAMES:
        if name not in only:
            continue
        t = time.perf_counter()
        ok, detail, verdict = STEPS[name](problem, sandbox, opts)
        out.append(Transition(name=name, ok=ok, detail=detail, seconds=_since(t), verdict=verdict))
    return out


def _since(t: float) -> float:
    return round(time.perf_counter() - t, 2)


def validate_repository(
    problem: Problem,
    *,
    sandbox: Any = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    rounds: int = 3,
) -> ValidationRow:
    """The six transitions as a ``validate`` row (``rounds`` is unused: nothing is timed)."""
    steps = transitions(problem, sandbox=sandbox, sandbox_options=sandbox_options)
    by = {s.name: s for s in steps}
    bad = [f"{s.name}: {s.detail}" for s in steps if not s.ok]
    return ValidationRow(
        task_id=problem.task_id,
        group=problem.group,
        reference=by["gold_passes"].detail,
        nop=by["nop"].detail,
        ok=not bad,
        problem="; ".join(bad),
        verdicts={s.name: s.verdict for s in steps if s.verdict is not None},
    )


__all__ = ["Transition", "transitions", "validate_repository"]
