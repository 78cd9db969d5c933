"""``CudaEnv``: one CUDA problem as a Gymnasium environment.

Observations and actions are text. ``reset`` opens a fresh sandbox holding the problem's
visible files; ``step`` runs one model reply (its tool calls, in order); ``submit`` (or the
step/token budget) ends the episode and grades the workspace's files in a fresh grading sandbox (never the live one).
"""

from __future__ import annotations

import copy
import functools
import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from cudaenv.env.actions_text import MAX_CALLS_PER_REPLY, Reply, no_call_help, parse_reply
from cudaenv.env.aio import Offloader
from cudaenv.env.info import terminal_info
from cudaenv.env.instructions import SYSTEM_PROMPT, instruction
from cudaenv.env.messages import Outcome, join_observations, reply_messages
from cudaenv.env.run_tool import run_tool
from cudaenv.env.text import CHARSET, MAX_OBS_CHARS, clip, to_charset
from cudaenv.env.tokens import count_tokens
from cudaenv.env.tools import MAX_ACTION_CHARS, ToolCall, tool_schemas
from cudaenv.env.trajectory import StepRecord, Trajectory
from cudaenv.env.workspace import collect_solution
from cudaenv.errors import (
    CudaEnvError,
    ModeError,
    SandboxError,
    SandboxPathError,
    SpecError,
    ToolError,
)
from cudaenv.grading.grader import grade
from cudaenv.grading.rewards import RewardFn, get_reward
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.problems.suite import Suite
from cudaenv.sandbox import make_sandbox
from cudaenv.sandbox.base import Sandbox

RESET_OPTIONS = frozenset({"task_id", "mode"})
Mode = str


@functools.cache
def _text_prototype(max_length: int, min_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=min_length, charset=CHARSET)


def _text_space(max_length: int, min_length: int) -> spaces.Text:
    """A Text space over CHARSET: a copy of one prototype (building its character tables
    takes ~1 ms, paid by every env made on an event loop) with its own, unseeded RNG."""
    space = copy.copy(_text_prototype(max_length, min_length))
    space._np_random = None
    return space


class CudaEnv(gym.Env[str, str]):
    """A CUDA problem as an episodic text environment. See the module docstring.

    ``reset(seed=, options=)``: ``options`` may hold ``task_id`` (switch to that problem of
    ``source``; an unknown id raises :class:`~cudaenv.errors.ProblemNotFoundError` naming it
    and the close matches) and ``mode``; the switch lasts until the next one.

    An action is one model reply: a tool call (``{"tool", "args"}`` dict, its JSON, an OpenAI
    tool call dict or SDK object), a list of tool calls, an assistant message, or assistant
    text with Hermes ``<tool_call>`` blocks or bare JSON calls
    (:mod:`cudaenv.env.actions_text`). Several calls run in order in one step (calls after a
    ``submit`` are not run); the observation joins their outputs, each labelled. A reply with
    no call, or a malformed one, gets an error observation, never an exception.
    ``env.messages`` holds one assistant message per reply, as the model produced it, then
    one ``tool`` message per call. Every step's ``info`` has ``tool`` (the last call's tool),
    ``calls``, ``error`` (None or the reply's errors) and ``step`` (replies so far).

    When an episode ends (``submit``, or a budget: truncated) its ``info`` also has, all
    JSON-safe (:mod:`cudaenv.env.info`):

    - ``is_success`` (bool): the verdict passed (False when ungraded or not decided here).
    - ``reward_valid`` (bool): False when the verdict is an infrastructure failure: the
      reward says nothing about the policy, mask the sample.
    - ``failure`` ("agent", "infrastructure" or None), ``reason`` (the verdict's reason).
    - ``task_id``, ``mode``; ``speedup`` (float or None: optimize mode, where timed).
    - ``truncation_reason`` ("max_steps", "max_tokens" or None when terminated).
    - ``verdict`` (:class:`~cudaenv.grading.verdict.Verdict`, absent when a truncated
      episode is not graded) and ``trajectory`` (:class:`~cudaenv.env.trajectory.Trajectory`).

    ``await env.areset(...)`` / ``await env.astep(...)`` run the same calls on a bounded
    thread pool shared by the process (:mod:`cudaenv.env.aio`).

    Args:
        problem: a Problem, or a task_id looked up in ``source``.
        mode: "solve" (context only), "optimize" (start from the baseline; speedup reward)
            or "repair" (start from ``repair_solution`` and its grading output).
        sandbox: backend name ("local", "docker") or a factory returning a Sandbox.
        source: where task ids (here and in ``reset`` options) are looked up.
        max_steps: replies before the episode is truncated (and graded).
        max_tokens: observation-token budget (tiktoken cl100k) before truncation; None = off.
        reward: a reward name from ``cudaenv.grading.rewards`` or a callable of a Verdict.
        step_penalty: optional per-step shaping, subtracted at every non-final step (off: 0).
        grade_on_truncation: grade what is there when a budget runs out (else reward 0).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        problem: Problem | str,
        *,
        mode: Mode = "solve",
        sandbox: str | Callable[[], Sandbox] = "local",
        sandbox_options: Mapping[str, Any] | None = None,
        grading_sandbox: str | Callable[[], Sandbox] | None = None,
        source: str = "builtin",
        max_steps: int = 50,
        max_tokens: int | None = None,
        reward: str | RewardFn | None = None,
        step_penalty: float = 0.0,
        grade_on_truncation: bool = True,
        grade_options: Mapping[str, Any] | None = None,
        repair_solution: Solution | Mapping[str, str] | None = None,
        repair_verdict: Verdict | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.source = source
        self._suite: Suite | None = None
        if isinstance(problem, str):
            problem = self._task_suite()[problem]
        self._repair_files = self._files_of(repair_solution)
        self._check_mode(problem, mode)
        if render_mode not in (None, "ansi"):
            raise ModeError(f"unsupported render_mode {render_mode!r}; only 'ansi'")
        self.problem = problem
        self._known: dict[str, Problem] = {problem.task_id: problem}
        self.mode = mode
        self.render_mode = render_mode
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self._reward_spec = reward
        self.reward_fn = get_reward(reward, mode)
        self.step_penalty = step_penalty
        self.grade_on_truncation = grade_on_truncation
        self.grade_options = dict(grade_options or {})
        self._sandbox_spec = sandbox
        self._sandbox_options = dict(sandbox_options or {})
        self._grading_sandbox = grading_sandbox or sandbox
        self._repair_verdict = repair_verdict
        self.observation_space = _text_space(MAX_OBS_CHARS + 200, 0)
        self.action_space = _text_space(MAX_ACTION_CHARS, 1)
        self._sandbox: Sandbox | None = None
        self._done = True
        self.trajectory: Trajectory | None = None
        self._messages: list[dict[str, Any]] = []
        self._started = 0.0
        self._replies = 0
        self._offload = Offloader(self.close)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _files_of(sol: Solution | Mapping[str, str] | None) -> list[SourceFile]:
        if sol is None:
            return []
        if isinstance(sol, Solution):
            return list(sol.files)
        return [SourceFile(path=k, content=v) for k, v in sol.items()]

    def _check_mode(self, problem: Problem, mode: str) -> None:
        if mode not in ("solve", "optimize", "repair"):
            raise ModeError(f"unknown mode {mode!r}; choose solve, optimize or repair")
        if mode == "optimize" and (
            not problem.benchmark_command or problem.baseline_solution is None
        ):
            raise ModeError(
                f"problem {problem.task_id!r} has no benchmark and baseline; optimize mode needs both"
            )
        if mode == "repair" and not self._repair_files:
            raise ModeError(
                "repair mode needs repair_solution (the failing solution to start from)"
            )

    def _task_suite(self) -> Suite:
        """Where task ids are looked up (``source``, loaded once)."""
        if self._suite is None:
            from cudaenv.problems.loader import load_suite

            self._suite = load_suite(self.source)
        return self._suite

    def _lookup(self, task_id: Any) -> Problem:
        if not isinstance(task_id, str):
            raise SpecError(
                f"options['task_id'] must be a string, got {task_id!r}", field="task_id"
            )
        if task_id not in self._known:
            self._known[task_id] = self._task_suite()[task_id]
        return self._known[task_id]

    def _choose(self, options: Mapping[str, Any]) -> Problem:
        """The problem of the next episode: ``options["task_id"]`` or the current one."""
        if "task_id" in options and options["task_id"] is not None:
            return self._lookup(options["task_id"])
        return self.problem

    def _new_sandbox(self) -> Sandbox:
        spec = self._sandbox_spec
        return spec() if callable(spec) else make_sandbox(spec, **self._sandbox_options)

    def _start_files(self) -> list[SourceFile]:
        files = list(self.problem.context_files)
        if self.mode == "optimize" and self.problem.baseline_solution:
            files += self.problem.baseline_solution.files
        if self.mode == "repair":
            files += self._repair_files
        return files

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function schemas."""
        return tool_schemas()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The episode so far as OpenAI-style chat messages (see the class docstring)."""
        return copy.deepcopy(self._messages)

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            raise CudaEnvError("call reset() before using the sandbox")
        return self._sandbox

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        opts = dict(options or {})
        if unknown := sorted(set(opts) - RESET_OPTIONS):
            raise SpecError(
                f"unknown reset option(s) {unknown}; expected {sorted(RESET_OPTIONS)}",
                field="options",
            )
        problem = self._choose(opts)
        mode = opts.get("mode") or self.mode
        self._check_mode(problem, mode)  # before the old episode's sandbox goes
        if mode != self.mode:
            self.reward_fn = get_reward(self._reward_spec, mode)
        self.problem, self.mode = problem, mode
        self._close_sandbox()
        self._done = True
        self._sandbox = self._new_sandbox()
        files = self._start_files()
        for f in files:
            self._sandbox.write_file(f.path, f.content)
        text = instruction(
            self.problem,
            self.mode,
            sorted(f.path for f in files),
            repair_verdict=self._repair_verdict,
        )
        text = to_charset(text)
        self.trajectory = Trajectory(task_id=self.problem.task_id, mode=self.mode, instruction=text)
        self._messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": text},
        ]
        self._done = False
        self._replies = 0
        self._started = time.perf_counter()
        return text, {"task_id": self.problem.task_id, "mode": self.mode, "tools": self.tools}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.trajectory is None:
            raise CudaEnvError("episode is over; call reset()")
        reply = parse_reply(action)
        index = self._replies
        self._replies += 1
        traj = self.trajectory
        outs: list[Outcome] = []
        submitted = False
        for k, parsed in enumerate(reply.calls):
            t0 = time.perf_counter()
            call = parsed.call
            call_id = (call.call_id if call else None) or (
                f"call_{index}" if k == 0 else f"call_{index}_{k}"
            )
            if submitted:
                obs, error = "not run: the episode ended at submit", "after submit"
            elif k >= MAX_CALLS_PER_REPLY:
                error = f"at most {MAX_CALLS_PER_REPLY} tool calls run per reply"
                obs = f"not run: {error}"
            elif call is None:
                error = parsed.error or "unparseable tool call"
                obs = f"error: {error}"
            else:
                obs, error = self._run_call(call)
                submitted = call.tool == "submit" and error is None
            outs.append(
                Outcome(call, call_id, to_charset(clip(obs)), error, time.perf_counter() - t0)
            )
        if reply.kind == "invalid" and not outs:
            outs.append(
                Outcome(None, f"call_{index}", no_call_help(), "no tool call in the reply", 0.0)
            )
        obs = outs[0].observation if len(outs) == 1 else to_charset(clip(join_observations(outs)))
        tokens = count_tokens(obs) if self.max_tokens else 0
        traj.observation_tokens += tokens
        self._record_messages(reply, outs)
        terminated = submitted
        truncated = False
        reason = None
        if not terminated and index + 1 >= self.max_steps:
            truncated, reason = True, "max_steps"
        elif (
            not terminated
            and self.max_tokens is not None
            and traj.observation_tokens >= self.max_tokens
        ):
            truncated, reason = True, "max_tokens"
        reward = 0.0
        errors = [o.error for o in outs if o.error]
        info: dict[str, Any] = {
            "tool": next((o.call.tool for o in reversed(outs) if o.call is not None), None),
            "calls": len(outs),
            "error": "; ".join(errors) if errors else None,
            "step": index + 1,
        }
        if terminated or truncated:
            verdict = None
            if terminated or self.grade_on_truncation:
                verdict = self._grade()
                reward = float(self.reward_fn(verdict))
                info["verdict"] = verdict
            traj.verdict, traj.reward = verdict, reward
            traj.terminated, traj.truncated, traj.truncation_reason = terminated, truncated, reason
            traj.seconds = round(time.perf_counter() - self._started, 4)
            info.update(terminal_info(self.problem.task_id, self.mode, verdict, reason))
            info["trajectory"] = traj
            self._done = True
            self._close_sandbox()
        elif self.step_penalty:
            reward = -self.step_penalty
        for k, (call, call_id, out, error, seconds) in enumerate(outs):  # one record per call
            traj.steps.append(
                StepRecord(
                    index=len(traj.steps),
                    tool=call.tool if call else None,
                    args=call.args if call else {},
                    call_id=call_id,
                    observation=out,
                    reward=reward if k == len(outs) - 1 else 0.0,
                    error=error,
                    duration_s=round(seconds, 6),
                    tokens=tokens if k == len(outs) - 1 else 0,
                )
            )
        return obs, reward, terminated, truncated, info

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """:meth:`reset` on the shared bounded thread pool (:mod:`cudaenv.env.aio`)."""
        return await self._offload.run(self.reset, seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """:meth:`step` on the shared bounded thread pool; one call at a time per env."""
        return await self._offload.run(self.step, action)

    def _run_call(self, call: ToolCall) -> tuple[str, str | None]:
        """One call's observation and error (None when it ran cleanly)."""
        try:
            return run_tool(self.sandbox, call), None
        except ToolError as exc:
            return f"error: {exc}", str(exc)
        except SandboxPathError as exc:  # the agent's bad path, not a failure of the sandbox
            where = call.args.get("path", "")
            return (
                f"error: {call.tool}: bad path {where!r}: {exc}",
                f"bad path {where!r}: {exc}",
            )
        except SandboxError as exc:
            return f"error: the sandbox failed: {exc}", f"sandbox: {exc}"

    def _record_messages(self, reply: Reply, outs: list[Outcome]) -> None:
        """One assistant message as the model produced it, then one message per call."""
        self._messages += reply_messages(reply, outs)

    def workspace_solution(self) -> list[SourceFile]:
        """The workspace's text files minus unchanged visible files, sources first."""
        return collect_solution(self.sandbox, self.problem)

    def _grade(self) -> Verdict:
        try:
            # escape: freeze the workspace first, so nothing the agent left running (a setsid
            # loop rewriting solution.cpp) can change the files between its last action and
            # their collection
            self.sandbox.kill_processes()
            files = self.workspace_solution()
        except SandboxError as exc:
            return Verdict(
                task_id=self.problem.task_id,
                mode=self.mode,
                passed=None,
                failure="infrastructure",
                reason=f"could not collect the workspace: {exc}",
            )
        # escape: close the agent's sandbox before grading, so nothing it left running (a
        # process rewriting files, a CPU or GPU hog slowing the baseline's timing) outlives the
        # episode into the grading window
        self._close_sandbox()
        sandbox = self._grading_sandbox
        # the agent's sandbox may have network (CLI agents reach their model server); grading never
        options = {k: v for k, v in self._sandbox_options.items() if k != "network"}
        try:
            return grade(
                self.problem,
                files,
                mode=self.mode,  # type: ignore[arg-type]
                sandbox=sandbox,
                sandbox_options=None if callable(sandbox) else options,
                **self.grade_options,
            )
        except Exception as exc:  # the grading machinery, never the agent: mask, don't score
            return Verdict(
                task_id=self.problem.task_id,
                mode=self.mode,
                passed=None,
                failure="infrastructure",
                reason=f"grading raised {type(exc).__name__}: {exc}",
            )

    def render(self) -> str | None:  # type: ignore[override]
        if self.render_mode != "ansi" or self.trajectory is None:
            return None
        lines = [self.trajectory.instruction]
        for s in self.trajectory.steps:
            lines.append(f"\n>>> [{s.index}] {s.tool} {json.dumps(s.args)[:500]}")
            lines.append(s.observation)
        return "\n".join(lines)

    def _close_sandbox(self) -> None:
        if self._sandbox is not None:
            box, self._sandbox = self._sandbox, None
            box.close()

    def close(self) -> None:
        self._close_sandbox()
        self._done = True


def episode_id() -> str:
    return uuid.uuid4().hex
