"""``CudaEnv``: one CUDA problem as a Gymnasium environment.

Observations and actions are text. ``reset`` opens a fresh sandbox holding the problem's
visible files; ``step`` runs one model reply (its tool calls, in order); ``submit`` (or the
step/token budget) ends the episode and grades the workspace's files in a fresh grading
sandbox (never the live one). A driver with its own tools (a CLI agent) uses the boundary of
:mod:`cudaenv.env.external` instead of ``step``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from cudaenv.env.actions_text import ActionSpace, parse_reply
from cudaenv.env.aio import Offloader
from cudaenv.env.external import ExternalDriving, Instruction
from cudaenv.env.info import terminal_info
from cudaenv.env.instructions import SYSTEM_PROMPT, task_text, with_tools
from cudaenv.env.messages import join_observations, reply_messages, step_records
from cudaenv.env.modes import RESET_OPTIONS, can_optimize, check_mode, reset_options
from cudaenv.env.run_tool import run_reply
from cudaenv.env.text import MAX_OBS_CHARS, clip, text_space, to_charset
from cudaenv.env.tokens import count_tokens
from cudaenv.env.tools import MAX_ACTION_CHARS, tool_schemas
from cudaenv.env.trajectory import Trajectory
from cudaenv.env.workspace import collect_solution
from cudaenv.errors import CudaEnvError, ModeError, SandboxError, SpecError
from cudaenv.grading.request import Grader, GradeRequest, grade_here
from cudaenv.grading.rewards import RewardFn, get_reward
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Mode, Problem, Solution, SourceFile
from cudaenv.problems.suite import Suite
from cudaenv.sandbox import make_sandbox
from cudaenv.sandbox import sandbox_options as check_sandbox_options
from cudaenv.sandbox.base import Sandbox


class CudaEnv(ExternalDriving, gym.Env[str, str]):
    """A CUDA problem as an episodic text environment. See the module docstring.

    :meth:`reset` opens an episode, :meth:`step` runs one model reply, :meth:`close` frees
    the sandbox; their docstrings state every element of what they return, every ``info``
    key included. ``env.messages`` is the episode as chat messages, ``env.trajectory`` its
    record, ``env.instruction`` the task as data. A driver with its own tools records its
    steps with ``record_step`` and ends the episode with ``submit``
    (:mod:`cudaenv.env.external`). ``await env.areset(...)`` / ``await env.astep(...)`` /
    ``await env.asubmit(...)`` run the same calls on a bounded thread pool shared by the
    process (:mod:`cudaenv.env.aio`).

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
        grade_options: ``grade()``'s keywords (``benchmark``, ``sanitizer``, ``rounds``...).
        grader: grades the collected files: a :data:`~cudaenv.grading.request.Grader`
            (a :class:`~cudaenv.grading.request.GradeRequest` in, a Verdict out; the
            ``grader`` attribute); None = ``grade()`` in this process. The env freezes,
            collects and closes the agent's sandbox before calling it, and masks what it
            raises as an infrastructure verdict.
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
        grader: Grader | None = None,
    ) -> None:
        self.source = source
        self._suite: Suite | None = None
        if isinstance(problem, str):
            problem = self._task_suite()[problem]
        self._repair_files = self._files_of(repair_solution)
        mode = self._check_mode(problem, mode)
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
        self.grader: Grader = grade_here if grader is None else grader
        self._sandbox_spec = sandbox
        self._sandbox_options = dict(sandbox_options or {})
        if isinstance(sandbox, str):  # a typo in an option fails here, naming it, not at reset
            check_sandbox_options(sandbox, self._sandbox_options)
        self._grading_sandbox = grading_sandbox or sandbox
        self._repair_verdict = repair_verdict
        self.observation_space = text_space(MAX_OBS_CHARS + 200, 0)
        self.action_space = text_space(MAX_ACTION_CHARS, 1, ActionSpace)
        self._sandbox: Sandbox | None = None
        self._done = True
        self.trajectory: Trajectory | None = None
        self._instruction: Instruction | None = None
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

    def _check_mode(self, problem: Problem, mode: object) -> Mode:
        """``mode`` if ``problem`` can run in it here, else ModeError saying what is missing."""
        mode = check_mode(mode)
        if mode == "optimize" and not can_optimize(problem):
            raise ModeError(
                f"problem {problem.task_id!r} has no benchmark and baseline; optimize mode needs both"
            )
        if mode == "repair" and not self._repair_files:
            raise ModeError(
                "repair mode needs repair_solution (the failing solution to start from)"
            )
        return mode

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
        """Start an episode: close the last one's sandbox, open a fresh one holding the start
        files (context files; plus the baseline in optimize mode, the failing solution in
        repair mode), and return the instruction.

        Args:
            seed: seeds ``np_random`` (a :class:`~cudaenv.env.suite.SuiteEnv` draws its task
                from it) and the action space's sampler; None keeps the current generators.
            options: at most ``task_id`` (switch to that problem of ``source``) and ``mode``
                ("solve", "optimize", "repair"); a switch lasts until the next one.

        Returns:
            observation (str): the instruction: the task, where to write the solution, the
                grading rules, the build (and, in optimize and repair mode, test and
                benchmark) commands, the files in the workspace and the env's tools; in
                ``CHARSET``. The same text is ``env.instruction.text`` and the first user
                message of ``env.messages``.
            info (dict): ``task_id`` (str, the episode's problem), ``mode`` (str) and
                ``tools`` (list of OpenAI function schemas, as ``env.tools``).

        Raises:
            SpecError: options that are not a dict, an option other than ``task_id``
                and ``mode``, or a task_id that is not a string. ProblemNotFoundError: an unknown task_id (naming close
                matches). ModeError: an unknown mode, optimize mode without a benchmark and
                baseline, repair mode without ``repair_solution``. These three are raised
                before the running episode is touched. SandboxError: the sandbox failed.
        """
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        opts = reset_options(options)
        if unknown := sorted(set(opts) - RESET_OPTIONS):
            raise SpecError(
                f"unknown reset option(s) {unknown}; expected {sorted(RESET_OPTIONS)}",
                field="options",
            )
        problem = self._choose(opts)
        mode = self._check_mode(problem, opts.get("mode") or self.mode)  # the old episode stays
        if mode != self.mode:
            self.reward_fn = get_reward(self._reward_spec, mode)
        self.problem, self.mode = problem, mode
        self._close_sandbox()
        self._done = True
        self._sandbox = self._new_sandbox()
        files = self._start_files()
        for f in files:
            self._sandbox.write_file(f.path, f.content)
        if problem.repository is not None:  # a checkout and its build tree, not files
            from cudaenv.env.repo_workspace import seed

            seed(self._sandbox, problem, self._grading_factory())
        paths = sorted(f.path for f in files)
        task = to_charset(task_text(problem, mode, paths, repair_verdict=self._repair_verdict))
        text = with_tools(task)
        self._instruction = Instruction(
            task_id=problem.task_id,
            mode=mode,
            task=task,
            files=sorted({f.path: f for f in files}.values(), key=lambda f: f.path),
            tools=self.tools,
            text=text,
        )
        self.trajectory = Trajectory(task_id=problem.task_id, mode=mode, instruction=text)
        self._messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": text},
        ]
        self._done = False
        self._replies = 0
        self._started = time.perf_counter()
        return text, {"task_id": problem.task_id, "mode": mode, "tools": self.tools}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one model reply: its tool calls in order, each in the episode's sandbox.

        Args:
            action: a tool call (``{"tool", "args"}`` dict, its JSON, an OpenAI tool call
                dict or SDK object), a list of them, an assistant message, or assistant text
                with Hermes ``<tool_call>`` blocks or bare JSON calls
                (:mod:`cudaenv.env.actions_text`). At most ``MAX_CALLS_PER_REPLY`` calls
                run; calls after a ``submit`` do not. A reply with no call, or a malformed
                one, gets an error observation, never an exception.

        Returns:
            observation (str): the call's output (``bash``: exit code, stdout, stderr), or
                for several calls each output labelled ``[tool call k of n: tool]``; an
                error text for a call that failed or was refused. Head and tail are kept of
                an output over ``MAX_OBS_CHARS``; in ``CHARSET``.
            reward (float): on the final step ``reward_fn(verdict)`` (0.0 when a truncated
                episode is not graded); before it 0.0, or ``-step_penalty`` when set.
            terminated (bool): a ``submit`` call ran: the episode reached its end.
            truncated (bool): a budget ended it first: ``max_steps`` replies or
                ``max_tokens`` observation tokens (a submit in the same reply wins).
            info (dict): on every step ``tool`` (str or None: the last parsed call's tool),
                ``calls`` (int: the reply's calls, refused ones included), ``error`` (None
                or the calls' errors joined by "; ") and ``step`` (int: replies so far).
                When the episode ends, also the JSON-safe keys of
                :data:`cudaenv.env.info.TERMINAL_KEYS`: ``is_success`` (bool: the verdict
                passed), ``reward_valid`` (bool: False for an infrastructure verdict; mask
                the sample), ``failure`` ("agent", "infrastructure" or None), ``reason``
                (str or None: the verdict's), ``task_id``, ``mode``, ``speedup`` (float or
                None: optimize mode, where timed), ``truncation_reason`` ("max_steps",
                "max_tokens", a driver's reason given to ``submit``, or None when
                terminated); and ``verdict`` (:class:`~cudaenv.grading.verdict.Verdict`,
                absent when a truncated episode is not graded) and ``trajectory``
                (:class:`~cudaenv.env.trajectory.Trajectory`).

        ``env.messages`` gains one assistant message (the reply as the model produced it)
        and one ``tool`` message per call. At the end the workspace is frozen
        (``kill_processes``), its files collected, the sandbox closed, and the files graded
        in a fresh sandbox; a grading fault is an infrastructure verdict, not an exception.

        Raises:
            CudaEnvError: no episode is running (before ``reset``, or after the end).
        """
        return self._step(action)

    def _step(
        self, action: Any, end_reason: str | None = None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """:meth:`step`; ``end_reason`` turns a submit's end into a truncation (``submit``)."""
        if self._done or self.trajectory is None:
            raise CudaEnvError("episode is over; call reset()")
        reply = parse_reply(action)
        index = self._replies
        self._replies += 1
        traj = self.trajectory
        outs, submitted = run_reply(self.sandbox, reply, index)
        obs = outs[0].observation if len(outs) == 1 else to_charset(clip(join_observations(outs)))
        tokens = count_tokens(obs) if self.max_tokens else 0
        traj.observation_tokens += tokens
        self._messages += reply_messages(reply, outs)
        terminated = submitted and end_reason is None
        truncated, reason = submitted and not terminated, end_reason if submitted else None
        if not submitted and index + 1 >= self.max_steps:
            truncated, reason = True, "max_steps"
        elif (
            not submitted
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
            if submitted or self.grade_on_truncation:
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
        traj.steps += step_records(outs, len(traj.steps), reward, tokens)
        return obs, reward, terminated, truncated, info

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """:meth:`reset` on the shared bounded thread pool (:mod:`cudaenv.env.aio`)."""
        return await self._offload.begin(self.reset, seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """:meth:`step` on the shared bounded thread pool; one call at a time per env."""
        return await self._offload.run(self.step, action)

    def workspace_solution(self) -> list[SourceFile] | Solution:
        """The workspace's text files minus unchanged visible files, sources first (for a
        repository task: the checkout's diff, a Solution)."""
        return collect_solution(self.sandbox, self.problem)

    def _grade(self) -> Verdict:
        def masked(reason: str) -> Verdict:  # the machinery, never the agent: don't score
            return Verdict(
                task_id=self.problem.task_id,
                mode=self.mode,
                passed=None,
                failure="infrastructure",
                reason=reason,
            )

        try:
            # escape: freeze the workspace first, so nothing the agent left running (a setsid
            # loop rewriting solution.cpp) can change the files between its last action and
            # their collection
            self.sandbox.kill_processes()
            files = self.workspace_solution()
        except SandboxError as exc:
            return masked(f"could not collect the workspace: {exc}")
        if self.trajectory is not None:  # what is graded, kept: a run can be graded again
            self.trajectory.solution_files = files
        # escape: close the agent's sandbox before grading, so nothing it left running (a
        # process rewriting files, a CPU or GPU hog slowing the baseline's timing) outlives the
        # episode into the grading window
        self._close_sandbox()
        sandbox, options = self._grading_target()
        request = GradeRequest(
            problem=self.problem,
            files=files,
            mode=self.mode,  # type: ignore[arg-type]
            sandbox=sandbox,
            sandbox_options=None if callable(sandbox) else options,
            options=dict(self.grade_options),
        )
        try:
            return self.grader(request)
        except Exception as exc:
            return masked(f"grading raised {type(exc).__name__}: {exc}")

    def _grading_target(self) -> tuple[str | Callable[[], Sandbox], dict[str, Any]]:
        """Where grading runs: the grading sandbox and its options (never the network; the
        agent's sandbox may have it: CLI agents reach their model server)."""
        options = {k: v for k, v in self._sandbox_options.items() if k != "network"}
        return self._grading_sandbox, options

    def _grading_factory(self) -> Callable[[], Sandbox]:
        """Sandboxes made as grading makes them (a repository task's pre-built tree)."""
        from cudaenv.grading.repo_grader import repo_factory

        sandbox, options = self._grading_target()
        return repo_factory(sandbox, None if callable(sandbox) else options)

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
        """End the episode without grading it and close its sandbox (its processes killed,
        its workspace removed). Returns None. Safe to call twice, before ``reset`` and after
        the end; ``reset`` starts a fresh episode afterwards. An episode closed before its
        end keeps its trajectory as it stood (``terminated`` and ``truncated`` both False),
        and ``step``, ``record_step`` and ``submit`` raise CudaEnvError until ``reset``."""
        self._done = True  # first: a call racing the close sees the episode over
        self._close_sandbox()
