"""TRL adapter: cudaenv problems as ``GRPOTrainer(environment_factory=...)`` environments.

What TRL (1.8 and later: the first with ``get_reward``) does with the class, read from its
``GRPOTrainer``:

- it calls the factory with no arguments, once to probe and then whenever a batch needs more
  instances; instances are pooled and **reused** across batches (``reset`` between rollouts);
- every public function of the class other than ``reset`` and ``get_reward`` becomes a tool;
  its schema comes from the type hints and the Google-style ``Args:`` docstring. A coroutine
  function is awaited on TRL's own event loop thread (``inspect.iscoroutinefunction``), so
  the trainer's process never blocks in one of them while the loop is free;
- ``reset(**row)`` (called synchronously) receives the whole dataset row; a returned string
  is appended to the last user message of the row's ``prompt``;
- a tool's return value is the tool message; an exception becomes ``{"error": ...}``;
- ``get_reward()`` is called once per finished rollout, after the whole batch has generated;
  a coroutine function is awaited (TRL awaits the rollouts' in turn). ``None`` marks the
  rollout unscorable **only when every reward function returns None for it**: it is then
  left out of its group's baseline with zero advantage (the mask for an infrastructure
  fault). An extra reward function must therefore return None for the same rollouts:
  wrap it with :func:`mask_infrastructure`.

Here every tool and ``get_reward`` are coroutine functions. ``submit`` starts the grading on
cudaenv's bounded thread pool (:mod:`cudaenv.env.aio`) and returns at once, so a batch's
gradings run side by side, and beside the rest of the batch's generation, instead of one
after another inside the trainer's tool loop; ``get_reward`` awaits the rollout's grading. A
rollout that never submitted is graded when its reward is asked for.

So every helper here is private or a property, and the only public functions are the six
tools. Rows come from :func:`dataset_rows`; ``datasets.Dataset.from_list(rows)`` makes the
``train_dataset``.

>>> Env = environment_factory("builtin", ids=["py-vector-add"])
>>> [n for n, _ in inspect.getmembers(Env, inspect.isfunction) if not n.startswith("_")]
['bash', 'edit_file', 'get_reward', 'list_files', 'read_file', 'reset', 'submit', 'write_file']
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import Future
from typing import Any, ClassVar

from cudaenv.env.modes import check_mode
from cudaenv.errors import CudaEnvError, ModeError, ProblemNotFoundError, SpecError
from cudaenv.problems.model import Mode

__all__ = ["CudaTRLEnv", "dataset_rows", "environment_factory", "mask_infrastructure"]
#: CudaEnv options the factory sets itself
_RESERVED = frozenset({"self", "problem", "mode", "source"})


class CudaTRLEnv:
    """One reusable rollout slot: a cudaenv suite env driven through six tool methods.

    Made by :func:`environment_factory` (which binds the source, mode and env options);
    TRL constructs it with no arguments. The constructor opens nothing: the suite env and
    its sandbox are made at the first ``reset``, and every ``reset`` closes the previous
    episode's sandbox before it opens the next one.

    After ``submit`` (or the env's step budget) the episode is over and every tool raises
    :class:`~cudaenv.errors.CudaEnvError` until the next ``reset``. The tools and
    ``get_reward`` are coroutine functions (``await env.bash("ls")``).
    """

    _source: ClassVar[Any] = "builtin"
    _mode: ClassVar[Mode] = "solve"
    _ids: ClassVar[list[str] | None] = None
    _groups: ClassVar[list[str] | None] = None
    _env_options: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._env: Any = None
        self._info: dict[str, Any] | None = None
        self._reward: float | None = None
        self._over = True
        self._fault: str | None = None
        self._started = False
        self._grading: Future[tuple[str, float, bool, bool, dict[str, Any]]] | None = None
        self._tail: Future[None] | None = None  # the last call's end: calls run in call order

    # ------------------------------------------------------------------ TRL hooks
    def reset(self, task_id: str | None = None, mode: str | None = None, **row: Any) -> str:
        """Start the row's task and return its instruction (TRL appends it to the prompt).

        Other row columns (``prompt``, ...) are ignored. An unknown ``task_id`` or mode
        raises (a dataset bug); a sandbox that cannot start marks the rollout as an
        infrastructure fault instead: the returned text says so and ``get_reward()`` is None.
        """
        env = self._suite_env()
        if self._grading is not None:  # the last rollout's grading must end first: one env
            with contextlib.suppress(Exception):
                self._grading.result()
            self._grading = None
        self._tail = None
        self._info, self._reward, self._fault, self._over = None, None, None, True
        self._started = True
        options: dict[str, Any] = {"task_id": task_id}
        if mode is not None:
            options["mode"] = mode
        try:
            text, _ = env.reset(options=options)
        except (SpecError, ProblemNotFoundError, ModeError):
            raise
        except Exception as exc:  # the sandbox machinery, never the policy: mask the rollout
            env.close()
            self._fault = f"{type(exc).__name__}: {exc}"
            return f"error: the environment could not start ({self._fault})"
        self._over = False
        return text

    async def get_reward(self) -> float | None:
        """The rollout's reward, once its grading ends; None when it must be masked (an
        infrastructure fault).

        A rollout that ends without ``submit`` (TRL's completion budget ran out) is graded
        as it stands when the env grades on truncation (its default), else scores 0.0;
        either way the episode is over afterwards. Calling it again (or concurrently)
        returns the same value.
        """
        if not self._started:
            raise CudaEnvError("get_reward() before reset(): no rollout to score")
        if self._fault is not None:
            return None
        async with self._in_order():
            if not self._over:
                if self._env.grade_on_truncation:
                    self._start_grading()
                else:
                    self._env.close()
                    self._over, self._reward = True, 0.0
        if self._grading is not None:
            self._take(*await asyncio.wrap_future(self._grading))
        return self._reward

    # ------------------------------------------------------------------ tools
    async def bash(self, command: str, timeout: int = 120) -> str:
        """Run a bash command in the workspace and return its exit code and output.

        Args:
            command: The bash command, run in the workspace directory.
            timeout: Seconds before the command is killed (1 to 600).
        """
        return await self._act("bash", {"command": command, "timeout": timeout})

    async def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file in the workspace.

        Args:
            path: Workspace-relative path of the file.
            content: The whole new content of the file.
        """
        return await self._act("write_file", {"path": path, "content": content})

    async def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace one exact occurrence of `old` with `new` in a workspace file.

        Args:
            path: Workspace-relative path of the file.
            old: The exact text to replace; it must occur exactly once.
            new: The replacement text.
        """
        return await self._act("edit_file", {"path": path, "old": old, "new": new})

    async def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Read a workspace file, optionally a line range.

        Args:
            path: Workspace-relative path of the file.
            start_line: First line to show (1-based); omit to start at the top.
            end_line: Last line to show (inclusive); omit to read to the end.
        """
        args: dict[str, Any] = {"path": path}
        if start_line is not None:
            args["start_line"] = start_line
        if end_line is not None:
            args["end_line"] = end_line
        return await self._act("read_file", args)

    async def list_files(self) -> str:
        """List every file in the workspace."""
        return await self._act("list_files", {})

    async def submit(self) -> str:
        """Submit the workspace for grading. Ends the episode; no tool works after it."""
        async with self._in_order():
            self._check_running("submit")
            self._start_grading()
        return "submitted for grading; the result is the reward"

    # ------------------------------------------------------------------ read-only state
    @property
    def env(self) -> Any:
        """The underlying :class:`~cudaenv.env.suite.SuiteEnv` (None before the first reset)."""
        return self._env

    @property
    def info(self) -> dict[str, Any] | None:
        """The last episode's terminal ``info`` (flat keys, verdict, trajectory), once over."""
        return self._info

    # ------------------------------------------------------------------ internals
    def _suite_env(self) -> Any:
        if self._env is None:
            from cudaenv.env.registration import make_suite
            from cudaenv.problems.loader import load_suite
            from cudaenv.problems.suite import Suite

            cls = type(self)
            if not isinstance(cls._source, Suite):  # loaded once, shared by the pooled instances
                cls._source = load_suite(cls._source)
            self._env = make_suite(
                cls._source,
                ids=self._ids,
                groups=self._groups,
                mode=self._mode,
                **self._env_options,
            )
        return self._env

    def _check_running(self, tool: str) -> None:
        if not self._started:
            raise CudaEnvError(f"{tool}() before reset(): no episode is running")
        if self._fault is not None:
            raise CudaEnvError(
                f"{tool}(): this rollout's environment failed at reset ({self._fault})"
            )
        if self._over:
            raise CudaEnvError(
                f"{tool}(): the episode is over (submitted or out of steps); reset() starts the next"
            )

    async def _act(self, tool: str, args: dict[str, Any]) -> str:
        """One tool call through ``env.astep``; bad arguments come back as an error string."""
        async with self._in_order():
            self._check_running(tool)
            result = await self._env.astep({"tool": tool, "args": args})
        obs, _, terminated, truncated, _ = result
        if terminated or truncated:  # the step budget ran out: it was graded in that step
            self._over = True
            self._take(*result)
        return obs

    @contextlib.asynccontextmanager
    async def _in_order(self) -> AsyncIterator[None]:
        """Run the block after every call begun before it has ended. TRL gathers the calls
        of one reply concurrently; they must reach the env one at a time, in the reply's
        order (a ``write_file`` then a ``submit`` grades the written file)."""
        previous, mine = self._tail, Future[None]()
        self._tail = mine
        try:
            if previous is not None:
                await asyncio.wrap_future(previous)
            yield
        finally:
            mine.set_result(None)

    def _start_grading(self) -> None:
        """Submit on cudaenv's thread pool; the episode is over from now on (no await here,
        so a concurrent caller sees either no grading or this one)."""
        from cudaenv.env.aio import executor

        self._over = True
        self._grading = executor().submit(self._env.step, {"tool": "submit", "args": {}})

    def _take(self, obs: str, reward: float, term: bool, trunc: bool, info: dict) -> None:
        """The terminal step's outcome: the reward (None: mask it) and the info."""
        self._info = info
        self._reward = float(reward) if info.get("reward_valid", True) else None

    def __del__(self) -> None:  # a pooled instance dropped mid-episode still frees its sandbox
        env = getattr(self, "_env", None)
        if env is not None:
            with contextlib.suppress(Exception):  # best effort, even at interpreter shutdown
                env.close()


def _check_options(mode: Mode, env_options: dict[str, Any]) -> None:
    check_mode(mode)
    from cudaenv.env.core import CudaEnv

    allowed = set(inspect.signature(CudaEnv.__init__).parameters) - _RESERVED
    if unknown := sorted(set(env_options) - allowed):
        raise SpecError(
            f"unknown env option(s) {unknown}; CudaEnv accepts {sorted(allowed)}",
            field="env_options",
        )


def environment_factory(
    source: Any = "builtin",
    mode: Mode = "solve",
    *,
    ids: Iterable[str] | None = None,
    groups: Iterable[str] | None = None,
    **env_options: Any,
) -> type[CudaTRLEnv]:
    """A :class:`CudaTRLEnv` subclass bound to these settings, for ``environment_factory=``.

    Args:
        source: a suite source (``load_suite``'s argument) or a Suite.
        mode: "solve", "optimize" or "repair"; a row's ``mode`` column overrides it.
        ids: limit the tasks rows may name (unknown ids raise at the first reset).
        groups: limit them to these groups.
        **env_options: :class:`~cudaenv.env.core.CudaEnv` options (``sandbox``,
            ``max_steps``, ``reward``, ``grade_on_truncation``, ...); unknown names raise now.

    TRL logs the reward under the class name, ``CudaTRLEnv``. A question source
    (``questions:...``) gives a :class:`~cudaenv.integrations.trl_questions.QuestionTRLEnv`
    instead (one tool, ``answer``).
    """
    from cudaenv.questions.source import is_question_source

    if is_question_source(source):
        from cudaenv.integrations.trl_questions import question_environment_factory

        return question_environment_factory(source, ids=ids, groups=groups, **env_options)  # type: ignore[return-value]
    _check_options(mode, env_options)
    attrs = {
        "_source": source,
        "_mode": mode,
        "_ids": list(ids) if ids is not None else None,
        "_groups": list(groups) if groups is not None else None,
        "_env_options": dict(env_options),
        "__doc__": CudaTRLEnv.__doc__,
        "__module__": __name__,
    }
    return type("CudaTRLEnv", (CudaTRLEnv,), attrs)


def dataset_rows(
    source: Any = "builtin",
    mode: Mode = "solve",
    ids: Iterable[str] | None = None,
    groups: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per selected problem: ``{"prompt": [...], "task_id": ...}``.

    A plain list of dicts (JSON-safe, no dependency); ``datasets.Dataset.from_list(rows)``
    makes TRL's ``train_dataset``. ``prompt`` holds cudaenv's system prompt and an empty
    user message: the task's instruction comes from ``reset`` (it depends on the mode and
    the workspace), so it is never duplicated. Selection and its errors are
    :func:`cudaenv.make_suite`'s (in optimize mode only problems with a baseline).
    """
    from cudaenv.env.instructions import SYSTEM_PROMPT
    from cudaenv.env.registration import make_suite
    from cudaenv.questions.source import is_question_source

    if is_question_source(source):  # questions: rows of the answer-mode system prompt
        from cudaenv.integrations.trl_questions import question_rows

        return question_rows(source, ids, groups)
    check_mode(mode)
    env = make_suite(source, ids=ids, groups=groups, mode=mode)
    try:
        task_ids = list(env.problems.ids)
    finally:
        env.close()
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ""}]
    return [{"prompt": [dict(m) for m in prompt], "task_id": t} for t in task_ids]


def mask_infrastructure(reward_fn: Callable[..., Any]) -> Callable[..., Any]:
    """A reward function for ``GRPOTrainer(reward_funcs=[...])`` beside the env's own reward
    that returns None wherever the env masked the rollout.

    TRL leaves a rollout out of its group only when *every* reward function returns None for
    it; a shaping reward that scores an infrastructure fault would put it back as a sample
    (its reward then the shaping term alone). The wrapper awaits each rollout's
    ``get_reward()`` (``environments`` is among the keywords TRL passes) and returns None
    where that is None, else ``reward_fn``'s value (sync or async ``reward_fn``).
    """

    @functools.wraps(reward_fn)
    async def masked(*args: Any, **kwargs: Any) -> list[float | None]:
        values = reward_fn(*args, **kwargs)
        if inspect.isawaitable(values):
            values = await values
        envs = kwargs.get("environments")
        if envs is None:
            return list(values)
        own = [await e.get_reward() if isinstance(e, CudaTRLEnv) else 0.0 for e in envs]
        return [None if r is None else v for v, r in zip(values, own, strict=True)]

    return masked
