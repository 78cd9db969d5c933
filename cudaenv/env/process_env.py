"""``ProcessEnv``: a :class:`~cudaenv.env.core.CudaEnv` living in a worker process, driven
with ``await``.

Why: ``CudaEnv.astep`` offloads a step to a thread of the trainer's own process; the Python
it runs between subprocesses (the tool call, the sandbox's protocol, grading) then competes
with the event loop for the GIL, and with hundreds of concurrent episodes the loop stalls
for tens of milliseconds at worst. A ``ProcessEnv`` runs the same env, call for call, in a
worker process (:mod:`cudaenv.env.workers`): the loop only queues a request and reads the
reply. Use it for many concurrent episodes in one event loop; use ``CudaEnv`` for
synchronous use, a handful of episodes, or a sandbox factory that cannot be pickled.

It mirrors what a trainer reads: ``messages``, ``trajectory``, ``instruction``,
``problem``, ``mode`` and ``tools``, updated by every call; the live sandbox stays in the
worker (``sandbox`` raises). ``areset``, ``astep``, ``asubmit`` return exactly what
``CudaEnv``'s ``reset``, ``step`` and ``submit`` return, and raise what they raise (a
:class:`~cudaenv.errors.WorkerError` when the worker died, was stopped or stopped answering,
or a call outran its deadline: an infrastructure fault; the next ``areset`` opens the
episode in a live worker). Each call has a deadline: ``call_timeout_s``, or by default one
derived from the episode's own time limits (:func:`default_deadline`).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import pickle
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from cudaenv.env.actions_text import MAX_CALLS_PER_REPLY
from cudaenv.env.aio import next_ticket
from cudaenv.env.external import Instruction, StepResult
from cudaenv.env.modes import reset_options
from cudaenv.env.tools import MAX_BASH_TIMEOUT_S, tool_schemas
from cudaenv.env.trajectory import Trajectory
from cudaenv.env.worker_main import EnvState
from cudaenv.env.workers import Worker, worker_pool
from cudaenv.errors import CudaEnvError, SpecError, WorkerError
from cudaenv.problems.model import Problem

__all__ = ["ProcessEnv", "check_picklable", "default_deadline"]

_ids = itertools.count()
# trajectory fields a driver in this process records (a training-mode model client's turns,
# its usage): the worker's env never writes them, so a step's update keeps them
DRIVER_FIELDS = ("turns", "agent", "usage", "cost_usd", "model_calls")


# what bounds a call, from the episode's own limits (default_deadline)
SANDBOX_START_S = 600.0  # opening a sandbox (an image to start, a workspace to lay out)
GRADE_RUNS = 16  # build, test, sanitizer and benchmark rounds of solution and baseline
GRADE_SLACK_S = 600.0
DEFAULT_RUN_S = 60.0  # a problem without timeout_seconds (the grader's default)
CALL_SLACK_S = 30.0
# a reset whose worker died under it is tried again in another (a reset is safe to repeat)
RESET_TRIES = 3


def default_deadline(method: str, problem: Problem | str) -> float:
    """How long a call may take before it fails with WorkerError, from the episode's limits:
    a step runs at most ``MAX_CALLS_PER_REPLY`` commands of at most ``MAX_BASH_TIMEOUT_S``
    each and may grade; grading runs at most ``GRADE_RUNS`` commands of the problem's
    ``timeout_seconds``; a reset opens a sandbox.

    >>> default_deadline("close", "any-task")
    600.0
    """
    run_s = getattr(problem, "timeout_seconds", None) or DEFAULT_RUN_S
    grade = GRADE_RUNS * run_s + GRADE_SLACK_S
    if method == "step":
        return MAX_CALLS_PER_REPLY * (MAX_BASH_TIMEOUT_S + CALL_SLACK_S) + grade
    if method == "submit":
        return grade
    return SANDBOX_START_S


_PICKLED_PROBLEMS: OrderedDict[int, tuple[Problem | str, bytes]] = OrderedDict()
_CACHED_PROBLEMS = 256


def _pickled_problem(problem: Problem | str) -> bytes:
    """``problem`` pickled, once per object: hundreds of episodes started together on the
    same problem would otherwise each pay for it on the event loop."""
    hit = _PICKLED_PROBLEMS.get(id(problem))
    if hit is not None and hit[0] is problem:  # the entry holds the object: its id is not reused
        _PICKLED_PROBLEMS.move_to_end(id(problem))
        return hit[1]
    data = pickle.dumps(problem, protocol=pickle.HIGHEST_PROTOCOL)
    _PICKLED_PROBLEMS[id(problem)] = (problem, data)
    if len(_PICKLED_PROBLEMS) > _CACHED_PROBLEMS:
        _PICKLED_PROBLEMS.popitem(last=False)
    return data


def _pickled(problem: Problem | str, options: Mapping[str, Any]) -> bytes:
    """The constructor's arguments as sent to a worker; SpecError names one that won't go."""
    try:
        return pickle.dumps(
            (_pickled_problem(problem), dict(options)), protocol=pickle.HIGHEST_PROTOCOL
        )
    except Exception:
        check_picklable({"problem": problem, **options})
        raise


def check_picklable(options: Mapping[str, Any]) -> None:
    """SpecError naming the first of ``options`` that cannot be sent to a worker process."""
    for name, value in options.items():
        try:
            pickle.dumps(value)
        except Exception as exc:
            raise SpecError(
                f"ProcessEnv sends its options to a worker process, and {name}={value!r} "
                f"cannot be pickled ({exc}); pass a backend name or a function defined at "
                "module level, or use CudaEnv",
                field=name,
            ) from None


class ProcessEnv:
    """A CudaEnv in a worker process (see the module docstring).

    Args:
        problem: a Problem, or a task_id looked up in ``source`` (looked up in the worker).
        call_timeout_s: each call's deadline in seconds; None: :func:`default_deadline`.
        **env_options: :class:`~cudaenv.env.core.CudaEnv`'s keywords; they must pickle
            (backend names, module-level factories), else SpecError names the keyword.
    """

    def __init__(
        self, problem: Problem | str, *, call_timeout_s: float | None = None, **env_options: Any
    ) -> None:
        if call_timeout_s is not None and not call_timeout_s > 0:
            raise SpecError(
                f"call_timeout_s must be > 0, got {call_timeout_s!r}", field="call_timeout_s"
            )
        self.call_timeout_s = call_timeout_s
        self._worker: Worker | None = None
        self._opened = False  # the worker holds this env (its constructor has been sent)
        self._ctor = _pickled(problem, env_options)
        self.problem = problem
        self.mode: str = env_options.get("mode", "solve")
        self.trajectory: Trajectory | None = None
        self._instruction: Instruction | None = None
        self._messages: list[dict[str, Any]] = []
        self._done = True
        self._id = next(_ids)
        self._ticket = 0  # every areset takes the next one
        self._busy = False

    # ---------------------------------------------------------------- what is mirrored
    @property
    def messages(self) -> list[dict[str, Any]]:
        """The episode so far as chat messages (as ``CudaEnv.messages``)."""
        return copy.deepcopy(self._messages)

    @property
    def instruction(self) -> Instruction:
        if self._instruction is None:
            raise CudaEnvError("no episode yet; await areset() first")
        return self._instruction

    @property
    def tools(self) -> list[dict[str, Any]]:
        return tool_schemas()

    @property
    def sandbox(self) -> Any:
        raise CudaEnvError(
            "a ProcessEnv's sandbox lives in its worker process; use CudaEnv to drive it directly"
        )

    def _apply(self, state: EnvState | None, *, fresh: bool) -> None:
        """Mirror what the worker's env changed (``fresh``: a reset, a new episode)."""
        if state is None:
            return
        self._done, self.mode = state.done, state.mode
        if state.problem is not None:
            self.problem = state.problem
        if state.instruction is not None:
            self._instruction = state.instruction
        old, new = self.trajectory, state.trajectory
        if new is None and state.head is not None and old is not None:
            new = state.head.model_copy(update={"steps": old.steps + state.new_steps})
        if new is not None:
            if old is not None and not fresh:  # what a driver recorded here stays
                for name in DRIVER_FIELDS:
                    setattr(new, name, getattr(old, name))
            self.trajectory = new
        if state.messages is not None:
            self._messages = state.messages
        else:
            self._messages += state.new_messages

    # ---------------------------------------------------------------- calls
    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._busy:
            raise CudaEnvError("this env is already running a call; await it before the next")
        worker = self._worker
        if worker is None or worker.exited():
            if method != "reset":
                if worker is None:
                    raise CudaEnvError("no episode is running; await areset() first")
                raise WorkerError(f"worker process {worker.pid} is gone; its episode is lost")
            worker = self._place()
        ctor = None if self._opened else self._ctor  # until the worker holds the env
        payload = _payload(method, ctor, args, kwargs)
        deadline = self.call_timeout_s or default_deadline(method, self.problem)
        fut = worker.call(self._id, self._ticket, method, payload)
        self._busy = True
        try:
            ok, value, state = await asyncio.wait_for(fut, deadline)
            self._opened = self._opened or state is not None  # a state: the env exists there
        except TimeoutError:
            # the worker's call cannot be stopped: the env is closed there once it returns
            self.close()
            raise WorkerError(
                f"{method} did not finish within {deadline:g} s in worker process "
                f"{worker.pid}; the episode is lost"
            ) from None
        except asyncio.CancelledError:
            # as above; the reply is ignored here
            self.close()
            raise
        finally:
            self._busy = False
        self._apply(state, fresh=ok and method == "reset")
        if not ok:
            raise value
        return value

    def _place(self) -> Worker:
        self._id = next(_ids)  # a drop still queued for the old id cannot hit the new env
        self._opened = False
        self._worker = worker_pool().place()
        return self._worker

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """``CudaEnv.reset`` in the worker; a new episode queues behind the older ones."""
        options = reset_options(options) or None  # not a dict: SpecError here, not there
        if not self._busy:
            self._ticket = next_ticket()
        for attempt in range(1, RESET_TRIES + 1):
            try:
                return await self._call("reset", seed=seed, options=options)  # type: ignore[no-any-return]
            except WorkerError:
                # the worker died under the reset (killed just before it, say): no episode
                # was running there yet, so it opens in another. A deadline (the env was
                # closed: no worker) is not tried again.
                worker = self._worker
                if attempt == RESET_TRIES or worker is None or not worker.exited():
                    raise
        raise AssertionError("unreachable: the last try returns or raises")

    async def astep(self, action: Any) -> StepResult:
        """``CudaEnv.step`` in the worker; one call at a time per env."""
        return await self._call("step", action)  # type: ignore[no-any-return]

    async def asubmit(self, truncation_reason: str | None = None) -> StepResult:
        """``CudaEnv.submit`` in the worker: grade the workspace now."""
        return await self._call("submit", truncation_reason)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """``CudaEnv.close`` in the worker, awaited: the sandbox is gone when it returns."""
        if self._worker is not None and not self._worker.exited() and not self._busy:
            await self._call("close")
        self.close()

    def close(self) -> None:
        """End the episode and close its sandbox in the worker (queued; never blocks)."""
        self._done = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.drop(self._id, self._ticket)

    def __del__(self) -> None:  # an env dropped without close: its sandbox goes with it
        self.close()


def _payload(
    method: str, ctor: bytes | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bytes:
    """A call as sent to the worker; SpecError naming the argument that cannot be pickled
    (a reset option, a step's action) instead of the bare PicklingError."""
    try:
        return pickle.dumps((ctor, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        named = {"action" if method == "step" else f"argument {i}": a for i, a in enumerate(args)}
        named |= {f"options[{k!r}]": v for k, v in (kwargs.get("options") or {}).items()} | {
            k: v for k, v in kwargs.items() if k != "options"
        }
        for name, value in named.items():
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                raise SpecError(
                    f"ProcessEnv.a{method} sends its arguments to a worker process, and "
                    f"{name}={value!r:.80} cannot be pickled ({exc})",
                    field=name.split("[", 1)[0],
                ) from None
        raise
