"""``CudaEnv``: one CUDA problem as a Gymnasium environment.

Observations and actions are text. ``reset`` opens a fresh sandbox holding the problem's
visible files; ``step`` runs one tool call; ``submit`` (or the step/token budget) ends the
episode and grades the workspace's files in a fresh grading sandbox (never the live one).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from cudaenv.env.instructions import SYSTEM_PROMPT, instruction
from cudaenv.env.tokens import count_tokens
from cudaenv.env.tools import MAX_ACTION_CHARS, ToolCall, parse_action, tool_schemas
from cudaenv.env.trajectory import StepRecord, Trajectory
from cudaenv.errors import CudaEnvError, ModeError, SandboxError, SandboxPathError, ToolError
from cudaenv.grading.grader import grade
from cudaenv.grading.rewards import RewardFn, get_reward
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.sandbox import make_sandbox
from cudaenv.sandbox.base import Sandbox

MAX_OBS_CHARS = 200_000
_EXTRA = (
    "\n\t\r\ufffd"
    + "".join(chr(c) for c in range(0xA0, 0x250))
    + (
        "\u2500\u2502\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u253c\u2550\u2551\u2554\u2557\u255a\u255d\u2501\u2503\u250f\u2513\u2517\u251b\u2192\u2190\u2191\u2193\u2022\u2026\u2013\u2014\u2018\u2019\u201c\u201d\u2713\u2717\u00d7\u00f7\u2264\u2265\u2260\u00b1\u00b5\u00b0"  # box drawing, arrows, dashes, quotes, marks
    )
)
# a sorted string, not a set: gymnasium indexes characters by their order, and set order
# differs between processes (AsyncVectorEnv's shared memory would decode garbage)
CHARSET = "".join(sorted({chr(c) for c in range(32, 127)} | set(_EXTRA)))
_CHARSET_SET = frozenset(CHARSET)
SOURCE_FIRST = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".py")
Mode = str


def to_charset(text: str) -> str:
    """Map characters outside the declared charset to U+FFFD, so obs stay in the space."""
    if all(ch in _CHARSET_SET for ch in text):
        return text
    return "".join(ch if ch in _CHARSET_SET else "\ufffd" for ch in text)


def _clip(text: str) -> str:
    if len(text) <= MAX_OBS_CHARS:
        return text
    half = MAX_OBS_CHARS // 2 - 50
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters truncated ...]\n{text[-half:]}"


class CudaEnv(gym.Env[str, str]):
    """A CUDA problem as an episodic text environment. See the module docstring.

    Args:
        problem: a Problem, or a task_id looked up in ``source``.
        mode: "solve" (context only), "optimize" (start from the baseline; speedup reward)
            or "repair" (start from ``repair_solution`` and its grading output).
        sandbox: backend name ("local", "docker") or a factory returning a Sandbox.
        max_steps: steps before the episode is truncated (and graded).
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
        if isinstance(problem, str):
            from cudaenv.problems.loader import load_suite

            problem = load_suite(source)[problem]
        if mode not in ("solve", "optimize", "repair"):
            raise ModeError(f"unknown mode {mode!r}; choose solve, optimize or repair")
        if mode == "optimize" and (
            not problem.benchmark_command or problem.baseline_solution is None
        ):
            raise ModeError(
                f"problem {problem.task_id!r} has no benchmark and baseline; optimize mode needs both"
            )
        if mode == "repair" and repair_solution is None:
            raise ModeError(
                "repair mode needs repair_solution (the failing solution to start from)"
            )
        if render_mode not in (None, "ansi"):
            raise ModeError(f"unsupported render_mode {render_mode!r}; only 'ansi'")
        self.problem = problem
        self.mode = mode
        self.render_mode = render_mode
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.reward_fn = get_reward(reward, mode)
        self.step_penalty = step_penalty
        self.grade_on_truncation = grade_on_truncation
        self.grade_options = dict(grade_options or {})
        self._sandbox_spec = sandbox
        self._sandbox_options = dict(sandbox_options or {})
        self._grading_sandbox = grading_sandbox or sandbox
        self._repair_files = self._files_of(repair_solution)
        self._repair_verdict = repair_verdict
        self.observation_space = spaces.Text(
            max_length=MAX_OBS_CHARS + 200, min_length=0, charset=CHARSET
        )
        self.action_space = spaces.Text(max_length=MAX_ACTION_CHARS, min_length=1, charset=CHARSET)
        self._sandbox: Sandbox | None = None
        self._done = True
        self.trajectory: Trajectory | None = None
        self._messages: list[dict[str, Any]] = []
        self._started = 0.0

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _files_of(sol: Solution | Mapping[str, str] | None) -> list[SourceFile]:
        if sol is None:
            return []
        if isinstance(sol, Solution):
            return list(sol.files)
        return [SourceFile(path=k, content=v) for k, v in sol.items()]

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
        """The episode so far as OpenAI-style chat messages."""
        return [dict(m) for m in self._messages]

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
        self._close_sandbox()
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
        self._started = time.perf_counter()
        return text, {"task_id": self.problem.task_id, "mode": self.mode, "tools": self.tools}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.trajectory is None:
            raise CudaEnvError("episode is over; call reset()")
        t0 = time.perf_counter()
        call: ToolCall | None = None
        error = None
        try:
            call = parse_action(action)
            obs = self._run_tool(call)
        except ToolError as exc:
            error = str(exc)
            obs = f"error: {exc}"
        except SandboxPathError as exc:  # the agent's bad path, not a failure of the sandbox
            where = call.args.get("path", "") if call else ""
            error = f"bad path {where!r}: {exc}"
            obs = f"error: {call.tool if call else 'action'}: bad path {where!r}: {exc}"
        except SandboxError as exc:
            error = f"sandbox: {exc}"
            obs = f"error: the sandbox failed: {exc}"
        obs = to_charset(_clip(obs))
        tokens = count_tokens(obs) if self.max_tokens else 0
        traj = self.trajectory
        traj.observation_tokens += tokens
        index = len(traj.steps)
        call_id = (call.call_id if call else None) or f"call_{index}"
        self._record_messages(call, action, call_id, obs)
        terminated = call is not None and call.tool == "submit"
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
        info: dict[str, Any] = {
            "tool": call.tool if call else None,
            "error": error,
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
            info["trajectory"] = traj
            self._done = True
            self._close_sandbox()
        elif self.step_penalty:
            reward = -self.step_penalty
        traj.steps.append(
            StepRecord(
                index=index,
                tool=call.tool if call else None,
                args=call.args if call else {},
                call_id=call_id,
                observation=obs,
                reward=reward,
                error=error,
                duration_s=round(time.perf_counter() - t0, 6),
                tokens=tokens,
            )
        )
        return obs, reward, terminated, truncated, info

    def _record_messages(self, call: ToolCall | None, raw: Any, call_id: str, obs: str) -> None:
        if call is None:
            text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
            self._messages.append({"role": "assistant", "content": str(text)[:2000]})
            self._messages.append({"role": "user", "content": obs})
            return
        self._messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.tool, "arguments": call.arguments_json()},
                    }
                ],
            }
        )
        self._messages.append({"role": "tool", "tool_call_id": call_id, "content": obs})

    def _run_tool(self, call: ToolCall) -> str:
        box = self.sandbox
        a = call.args
        if call.tool == "bash":
            res = box.exec(a["command"], timeout=a.get("timeout", 120))
            head = "timed out (killed)" if res.timed_out else f"exit code: {res.exit_code}"
            parts = [head + (" (output truncated)" if res.truncated else "")]
            if res.stdout:
                parts.append(f"stdout:\n{res.stdout}")
            if res.stderr:
                parts.append(f"stderr:\n{res.stderr}")
            return "\n".join(parts)
        if call.tool == "write_file":
            try:
                box.write_file(a["path"], a["content"])
            except SandboxPathError:
                raise
            except OSError as exc:  # a parent that is a file, a full workspace
                raise ToolError(f"write_file: cannot write {a['path']!r}: {exc.strerror}") from None
            return f"wrote {len(a['content'].encode())} bytes to {a['path']}"
        if call.tool in ("edit_file", "read_file"):
            try:
                text = box.read_file(a["path"]).decode("utf-8", errors="replace")
            except FileNotFoundError:
                raise ToolError(f"{call.tool}: no such file: {a['path']!r}") from None
            except IsADirectoryError:
                raise ToolError(f"{call.tool}: {a['path']!r} is a directory") from None
            except SandboxPathError:
                raise
            except OSError as exc:
                raise ToolError(f"{call.tool}: cannot read {a['path']!r}: {exc.strerror}") from None
            if call.tool == "read_file":
                lines = text.splitlines(keepends=True)
                start = a.get("start_line", 1)
                end = a.get("end_line", len(lines))
                return "".join(lines[start - 1 : end]) or "(empty)"
            count = text.count(a["old"])
            if count != 1 or not a["old"]:
                raise ToolError(
                    f"edit_file: `old` must match exactly once in {a['path']}, found {count} matches"
                )
            box.write_file(a["path"], text.replace(a["old"], a["new"], 1))
            return f"edited {a['path']}"
        if call.tool == "list_files":
            return "\n".join(box.list_files()) or "(no files)"
        if call.tool == "submit":
            return "submitted for grading"
        raise ToolError(f"unknown tool {call.tool!r}")

    def workspace_solution(self) -> list[SourceFile]:
        """The workspace's text files minus unchanged visible files, sources first."""
        box = self.sandbox
        pristine = {f.path: f.content for f in self.problem.context_files}
        out: list[SourceFile] = []
        for path in box.list_files():
            try:
                data = box.read_file(path)
            except (OSError, CudaEnvError):
                continue
            if len(data) > 1 << 20 or b"\0" in data:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if pristine.get(path) == text:
                continue
            out.append(SourceFile(path=path, content=text))
        out.sort(key=lambda f: (not f.path.endswith(SOURCE_FIRST), f.path))
        return out

    def _grade(self) -> Verdict:
        try:
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
        return grade(
            self.problem,
            files,
            mode=self.mode,  # type: ignore[arg-type]
            sandbox=sandbox,
            sandbox_options=None if callable(sandbox) else options,
            **self.grade_options,
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
