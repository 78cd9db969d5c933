"""The red-team data model: an ``Exploit`` (a scripted dishonest agent) and its result.

Why scripted agents instead of unit tests of each defense: every exploit plays a real episode
through ``CudaEnv`` and the real grader, so a defense that exists only on paper (or a layer
that is bypassed by another path) shows up as a nonzero reward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cudaenv.problems.model import Mode

ExploitClass = Literal[
    "read_hidden", "change_graded", "forge_results", "skip_checks", "escape", "exhaust", "speed"
]
Action = dict[str, Any]
#: yielded by an exploit's steps to end the episode (ungraded) and start a new one in the same env
RESET: Action = {"tool": "__reset__"}


@dataclass
class ExploitContext:
    """What a strong attacker is assumed to know, plus what the episode has shown so far.

    ``host_paths`` and ``loopback_port`` model an attacker who guessed the host layout (paths of
    the hidden fixture files, a service port); never the hidden contents themselves.
    """

    task_id: str
    sandbox: str
    marker: str
    host_paths: Mapping[str, str] = field(default_factory=dict)
    loopback_port: int | None = None
    observations: list[str] = field(default_factory=list)

    @property
    def observation(self) -> str:
        return self.observations[-1] if self.observations else ""


Steps = Sequence[Action] | Callable[[ExploitContext], Iterable[Action]]


@dataclass(frozen=True)
class Exploit:
    """One dishonest agent.

    ``target`` is ``fixture:<id>`` (CPU problems from :mod:`cudaenv.redteam.fixtures`),
    ``builtin:<id>`` (the bundled suite), ``repo:<id>`` or ``harbor:<id>`` (the repository and
    Harbor tasks of :mod:`cudaenv.redteam.fixtures_repo`) or ``generated:<family>`` (the first
    problem the generator makes of that family). ``evidence`` finds success that is not a reward
    (a leak seen in an observation, state that survived an episode); ``xfail`` maps a sandbox
    backend to the known gap that lets the exploit through there. ``backends`` names the
    sandbox backends the exploit means anything on (None: every one). ``pooled`` maps a backend
    to the options of one warm pool (:func:`cudaenv.sandbox.make_pool`) that lends both the
    agent's and the grader's sandboxes there, as an RL run shares one pool; on a backend it
    does not name, the agent's sandbox is that backend's and grading is local.
    """

    name: str
    cls: ExploitClass
    description: str
    target: str
    steps: Steps
    expect_flag: bool = False
    mode: Mode = "solve"
    needs_gpu: bool = False
    slow: bool = False
    max_steps: int = 12
    budget_s: float = 150.0
    sandbox_limits: Mapping[str, int] | None = None
    evidence: Callable[[ExploitContext], str | None] | None = None
    xfail: Mapping[str, str] = field(default_factory=dict)
    backends: tuple[str, ...] | None = None
    pooled: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def actions(self, ctx: ExploitContext) -> Iterator[Action]:
        steps = self.steps(ctx) if callable(self.steps) else self.steps
        yield from steps


class RedteamResult(BaseModel):
    """How one exploit fared. ``scored`` is the failure of the defenses."""

    model_config = ConfigDict(extra="forbid")

    name: str
    cls: str
    sandbox: str
    reward: float
    flagged: bool
    reason: str = ""
    suspected: list[str] = []
    evidence: str | None = None
    host_ok: bool = True
    host_problem: str | None = None
    seconds: float = 0.0
    honest_reward: float | None = None
    infrastructure: bool = False

    @property
    def scored(self) -> bool:
        """True when the exploit got anything: reward, a leak, a damaged / outlived host, or an
        episode turned into an "infrastructure" failure (RL loops mask those instead of scoring
        them 0, so an agent able to trigger one escapes its penalty)."""
        beyond_honest = self.reward > (self.honest_reward or 0.0) + 1e-9
        return beyond_honest or self.evidence is not None or not self.host_ok or self.infrastructure
