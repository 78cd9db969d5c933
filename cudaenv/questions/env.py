"""``QuestionEnv``: one question as a one-step Gymnasium environment (``mode="answer"``).

The observation is the question with the prompt style's instructions; the one tool is
``answer {"answer": str}``; assistant text holding ``[ANSWER] ... [/ANSWER]`` (LiveCodeBench's
form) is accepted as well, and so is a bare reply that is only the value. The first step ends
the episode with reward 1.0 for a right answer and 0.0 otherwise; ``info`` carries the raw
and parsed answer, the reason and the kind. There is no sandbox, nothing is compiled or run:
an episode costs microseconds, so these can sit in an RL batch beside the agentic tasks.

It speaks the surface :class:`~cudaenv.env.core.CudaEnv` drivers use (``messages``,
``tools``, ``trajectory``, ``step``, ``submit``, ``areset``/``astep``), so the
OpenAI-compatible agent, ``cudaenv eval`` and the trainer adapters run it unchanged.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import gymnasium as gym

from cudaenv.env.actions_text import parse_reply
from cudaenv.env.text import MAX_OBS_CHARS, text_space, to_charset
from cudaenv.env.tools import MAX_ACTION_CHARS
from cudaenv.env.trajectory import StepRecord, Trajectory
from cudaenv.errors import CudaEnvError, ModeError, SpecError
from cudaenv.grading.verdict import Verdict
from cudaenv.questions.answers import from_text, judge
from cudaenv.questions.model import Question

MODES = ("answer",)
#: the CLI's and the env factories' default mode; for a question it means "answer"
_DEFAULT_MODE = "solve"
PROMPT_STYLES = ("direct", "cot")
#: CudaEnv options drivers pass along; a question has no sandbox, budget or grader to use them
IGNORED_OPTIONS = frozenset({
    "sandbox", "sandbox_options", "grading_sandbox", "max_steps", "max_tokens",
    "grade_on_truncation", "grade_options", "step_penalty", "grader",
})  # fmt: skip
RESET_OPTIONS = frozenset({"task_id", "mode", "prompt_style"})
SYSTEM_PROMPT = (
    "You answer questions about CUDA programs: what a kernel writes, what a correct solution "
    "must write, how a call is launched, which line is wrong, whether threads race, how many "
    "blocks fit on an SM, how a warp's memory accesses are served. Give the answer exactly in "
    "the form the question asks for."
)
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give your final answer to the question. Ends the episode.",
        "parameters": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "description": "the answer, in the form the question asks for",
                }
            },
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}


def instruction(q: Question, style: str) -> str:
    """The question as the model sees it in prompt style ``style`` ("direct" or "cot")."""
    how = f"Answer with {q.format_text}"
    if style == "cot":
        return (f"{q.question}\n\n{how} Think it through step by step first, then give the final "
                "answer by calling the `answer` tool, or end your reply with [ANSWER] <answer> [/ANSWER].")  # fmt: skip
    return (f"{q.question}\n\n{how} Reply with the answer only: call the `answer` tool with it, "
            "or write [ANSWER] <answer> [/ANSWER].")  # fmt: skip


def extract_answer(action: Any) -> tuple[str | None, str | None]:
    """(the answer text in a reply, the tool call id it came in); never raises."""
    reply = parse_reply(action)
    for parsed in reply.calls:
        raw = parsed.raw
        fn = raw.get("function") if isinstance(raw, dict) else getattr(raw, "function", None)
        name = (
            (fn.get("name") if isinstance(fn, dict) else getattr(fn, "name", None))
            if fn is not None
            else None
        )
        args: Any = None
        if name is not None:
            args = fn.get("arguments") if isinstance(fn, dict) else getattr(fn, "arguments", None)
        elif isinstance(raw, dict):
            name, args = raw.get("tool", raw.get("name")), raw.get("args", raw.get("arguments"))
        if name != "answer":
            continue
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None, None
        value = args.get("answer") if isinstance(args, dict) else None
        call_id = raw.get("id") if isinstance(raw, dict) else getattr(raw, "id", None)
        if value is None:
            return None, call_id
        return (value if isinstance(value, str) else json.dumps(value)), call_id
    content = reply.message.get("content")
    if isinstance(content, str) and content.strip():
        tagged = from_text(content)
        return (tagged if tagged is not None else content), None
    return None, None


def _json_safe(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=repr))
    except (TypeError, ValueError):
        return repr(value)


class QuestionEnv(gym.Env[str, str]):
    """One question, one step (see the module docstring).

    Args:
        question: a :class:`Question`, or a task_id looked up in ``source``.
        source: where task ids are looked up (a ``questions:...`` string, a datapack, or a
            QuestionSuite).
        mode: "answer" ("solve", every driver's default mode, is taken to mean it).
        prompt_style: "direct" (the answer only) or "cot" (reason first, then answer).
        draw: every ``reset`` without a ``task_id`` draws the question from ``source`` (a
            suite) with the env's ``np_random``, as :class:`~cudaenv.env.suite.SuiteEnv` draws
            problems (``cudaenv.make_suite("questions:...")`` sets it).
        Other CudaEnv options (``sandbox``, ``max_steps``...) are accepted and unused.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, question: Question | str, *, source: Any = "questions", mode: str = "answer",
                 prompt_style: str = "direct", render_mode: str | None = None, draw: bool = False,
                 **options: Any) -> None:  # fmt: skip
        if unknown := sorted(set(options) - IGNORED_OPTIONS):
            raise SpecError(f"unknown QuestionEnv option(s) {unknown}", field="options")
        self._suite: Any = None
        if not isinstance(source, str):  # a QuestionSuite: task ids are looked up in it
            self._suite, source = source, source.source
        self.source = source
        self.question = self._lookup(question) if isinstance(question, str) else question
        self.mode = self._check_mode(mode)
        self.prompt_style = self._check_style(prompt_style)
        if render_mode not in (None, "ansi"):
            raise ModeError(f"unsupported render_mode {render_mode!r}; only 'ansi'")
        self.render_mode = render_mode
        self.draw = draw
        self.observation_space = text_space(MAX_OBS_CHARS + 200, 0)
        self.action_space = text_space(MAX_ACTION_CHARS, 1)
        self.trajectory: Trajectory | None = None
        self._messages: list[dict[str, Any]] = []
        self._done = True

    @staticmethod
    def _check_mode(mode: object) -> str:
        if mode == _DEFAULT_MODE:
            return "answer"
        if mode not in MODES:
            raise ModeError(f"a question has one mode, 'answer'; got {mode!r}")
        return str(mode)

    @staticmethod
    def _check_style(style: object) -> str:
        if style not in PROMPT_STYLES:
            raise SpecError(
                f"unknown prompt style {style!r}; choose {' or '.join(PROMPT_STYLES)}",
                field="prompt_style",
            )
        return str(style)

    def _questions(self) -> Any:
        """Where task ids are looked up and questions drawn (``source``, loaded once)."""
        if self._suite is None:
            from cudaenv.problems.loader import load_suite

            self._suite = load_suite(self.source)
        return self._suite

    def _lookup(self, task_id: Any) -> Question:
        if not isinstance(task_id, str):
            raise SpecError(f"task_id must be a string, got {task_id!r}", field="task_id")
        return self._questions()[task_id]  # type: ignore[no-any-return]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(ANSWER_TOOL)]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._messages)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start the episode. ``options``: ``task_id`` (another question of ``source``),
        ``prompt_style``, ``mode``. Returns the instruction and ``info`` with ``task_id``,
        ``kind``, ``mode``, ``prompt_style`` and ``tools``."""
        super().reset(seed=seed)
        opts = dict(options or {})
        if unknown := sorted(set(opts) - RESET_OPTIONS):
            raise SpecError(
                f"unknown reset option(s) {unknown}; expected {sorted(RESET_OPTIONS)}",
                field="options",
            )
        if opts.get("task_id") is not None:
            self.question = self._lookup(opts["task_id"])
        elif self.draw:
            suite = (
                self._suite
                if self._suite is not None
                else self._lookup(self.question.task_id) and self._suite
            )
            self.question = suite[int(self.np_random.integers(len(suite)))]
        if opts.get("mode") is not None:
            self.mode = self._check_mode(opts["mode"])
        if opts.get("prompt_style") is not None:
            self.prompt_style = self._check_style(opts["prompt_style"])
        text = to_charset(instruction(self.question, self.prompt_style))
        self._messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": text},
        ]
        self.trajectory = Trajectory(task_id=self.question.task_id, mode="answer", instruction=text)
        self._done = False
        return text, {"task_id": self.question.task_id, "kind": self.question.kind, "mode": self.mode,
                      "prompt_style": self.prompt_style, "tools": self.tools}  # fmt: skip

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Judge the reply's answer and end the episode.

        Returns ``(observation, reward, terminated=True, truncated=False, info)``: reward 1.0
        for a right answer, else 0.0; ``info`` has ``answer`` (the raw text or None),
        ``parsed`` (its value, JSON-safe, or None), ``reason``, ``kind``, ``is_success``,
        ``reward_valid`` (always True: nothing here can fail for the machinery's reasons),
        ``failure``, ``task_id``, ``mode``, ``speedup`` (None), ``truncation_reason`` (None),
        ``tool``, ``step``, and the ``verdict`` and ``trajectory`` objects.
        Raises CudaEnvError when no episode is running.
        """
        if self._done or self.trajectory is None:
            raise CudaEnvError("episode is over; call reset()")
        raw, call_id = extract_answer(action)
        message = parse_reply(action).message
        self._messages.append(message)
        return self._end(raw, call_id, None)

    def submit(
        self, truncation_reason: str | None = None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """End the episode without an answer (a driver ran out of turns): reward 0."""
        if self._done or self.trajectory is None:
            raise CudaEnvError("episode is over; call reset()")
        return self._end(None, None, truncation_reason or "no answer")

    def _end(
        self, raw: str | None, call_id: str | None, truncation: str | None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        q, traj = self.question, self.trajectory
        assert traj is not None
        verdict_ = judge(q, raw)
        reward = 1.0 if verdict_.correct else 0.0
        obs = to_charset("correct" if verdict_.correct else f"incorrect: {verdict_.reason}")
        if call_id is not None:
            self._messages.append({"role": "tool", "tool_call_id": call_id, "content": obs})
        verdict = Verdict(task_id=q.task_id, mode="answer", compiled=False, passed=verdict_.correct,
                          failure=None if verdict_.correct else "agent", reason=verdict_.reason)  # fmt: skip
        traj.steps.append(StepRecord(index=0, tool="answer" if raw is not None else None,
                                     args={"answer": raw} if raw is not None else {}, call_id=call_id,
                                     observation=obs, reward=reward))  # fmt: skip
        traj.verdict, traj.reward = verdict, reward
        traj.terminated, traj.truncated = truncation is None, truncation is not None
        traj.truncation_reason = truncation
        traj.seconds = 0.0  # microseconds; a timing here would only make info nondeterministic
        self._done = True
        info = {
            "tool": "answer" if raw is not None else None, "calls": 1, "error": None, "step": 1,
            "is_success": verdict_.correct, "reward_valid": True,
            "failure": None if verdict_.correct else "agent", "reason": verdict_.reason,
            "task_id": q.task_id, "mode": "answer", "speedup": None, "truncation_reason": truncation,
            "kind": q.kind, "answer": raw, "parsed": _json_safe(verdict_.parsed),
            "verdict": verdict, "trajectory": traj,
        }  # fmt: skip
        return obs, reward, truncation is None, truncation is not None, info

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        return self.reset(seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.step(action)

    async def asubmit(
        self, truncation_reason: str | None = None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.submit(truncation_reason)

    def render(self) -> str | None:  # type: ignore[override]
        if self.render_mode != "ansi" or self.trajectory is None:
            return None
        lines = [self.trajectory.instruction]
        lines += [
            f"\n>>> answer {s.args.get('answer')!r}\n{s.observation}" for s in self.trajectory.steps
        ]
        return "\n".join(lines)

    def close(self) -> None:
        """End the episode (nothing to free). Safe to call twice."""
        self._done = True


def question_suite_env(
    source: Any, ids: Any = None, groups: Any = None, **options: Any
) -> QuestionEnv:
    """A :class:`QuestionEnv` drawing a question of ``source`` (filtered by ``ids`` and
    ``groups``, the kinds) at every reset: ``cudaenv.make_suite`` for question sources."""
    from cudaenv.problems.loader import load_suite

    options.pop("mode", None)
    suite = load_suite(source).filter(  # type: ignore[call-arg]
        include=list(ids) if ids is not None else None,
        groups=list(groups) if groups is not None else None,
    )
    if not len(suite):
        raise SpecError(
            f"no question of {source} matches ids={ids!r} groups={groups!r}", field="ids"
        )
    return QuestionEnv(suite[0], source=suite, draw=True, **options)


__all__ = [
    "ANSWER_TOOL",
    "PROMPT_STYLES",
    "SYSTEM_PROMPT",
    "QuestionEnv",
    "extract_answer",
    "instruction",
    "question_suite_env",
]
