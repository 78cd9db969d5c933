"""``run_episodes``: many episodes, in threads or on Ray, streamed and stored as they finish.

Every finished episode is appended at once to ``<out_dir>/results.jsonl`` (an
:class:`EpisodeResult`) and its trajectory to ``<out_dir>/trajectories.jsonl`` under the same
key ("<task_id>#<attempt>"); a rerun with the same ``out_dir`` skips the keys already there
(except infrastructure failures, which are retried unless ``retry_infrastructure=False``; the
last record of a key wins). While it runs, the process holds ``out_dir`` (an ``flock``):
a second process on the same directory gets :class:`~cudaenv.errors.OutDirBusyError` at
once instead of running every episode again; an unwritable ``out_dir`` is
:class:`~cudaenv.errors.OutDirError` before any episode starts.

Stopping early (Ctrl-C, ``break``, an exception in the consuming loop) stops submitting,
keeps what is stored and abandons what is running, without waiting for it: the store is
sealed first, so an abandoned episode (whose sandboxes the exiting interpreter may close
under it) is never stored, and the interpreter does not wait for its thread at exit. Wrap
the iterator in ``contextlib.closing`` to make the stop immediate rather than at garbage
collection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cudaenv.problems.model import Problem
from cudaenv.rollout.episode import AgentSpec, EpisodeResult, Job, resolve_agent, run_job
from cudaenv.rollout.pool import DaemonPool
from cudaenv.rollout.store import ResultStore, claim_dir

__all__ = ["EpisodeResult", "arun_episodes", "latest_results", "run_episodes"]


class _Recorder:
    """Appends results and trajectories to the stores (thread-safe; no-op without out_dir).

    It claims ``out_dir`` for this process until :meth:`seal`, after which nothing more is
    stored: a run that stopped abandons its running episodes, and their results (possibly
    graded while the interpreter closed their sandboxes) must not reach the store.
    """

    def __init__(self, out_dir: str | Path | None) -> None:
        self._claim = claim_dir(out_dir) if out_dir is not None else None
        if self._claim is not None:  # an iterator dropped unstarted still lets the dir go
            weakref.finalize(self, self._claim.release)
        self.results = ResultStore(out_dir, "results") if out_dir is not None else None
        self.trajectories = ResultStore(out_dir, "trajectories") if out_dir is not None else None
        self._lock = threading.Lock()
        self._sealed = False

    def seal(self) -> None:
        """Store nothing more (an in-flight append completes first) and let the directory go."""
        with self._lock:
            self._sealed = True
        if self._claim is not None:
            self._claim.release()

    def done_keys(self, retry_infrastructure: bool) -> set[str]:
        if self.results is None:
            return set()
        latest = latest_results(self.results)
        return {
            k
            for k, r in latest.items()
            if not (retry_infrastructure and r.get("status") == "infrastructure")
        }

    def record(self, res: EpisodeResult) -> EpisodeResult:
        if self.results is None or self.trajectories is None:
            return res
        with self._lock:
            if self._sealed:
                return res  # abandoned by a stopped run: never stored
            if res.trajectory is not None:
                self.trajectories.append(
                    {"key": res.key, "trajectory": res.trajectory.model_dump(mode="json")}
                )
                res.trajectory_path = str(self.trajectories.path)
            self.results.append(res.record())
        return res


def latest_results(store: ResultStore) -> dict[str, dict[str, Any]]:
    """The last record per key (a rerun may have replaced an infrastructure failure)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in store.records():
        if "key" in rec:
            out[str(rec["key"])] = rec
    return out


class _ThreadBackend:
    """Episodes in daemon threads; one agent per thread; results stored by the thread that
    finished them (until the run stops and the recorder is sealed)."""

    def __init__(
        self,
        agent_spec: AgentSpec,
        env_options: Mapping[str, Any],
        workers: int,
        recorder: _Recorder,
    ) -> None:
        self._spec = agent_spec
        self._env_options = dict(env_options)
        self._workers = workers
        self._recorder = recorder
        self._local = threading.local()
        self._pool = DaemonPool(workers, "cudaenv-episode")
        self._futures: set[Future[EpisodeResult]] = set()

    def _work(self, job: Job) -> EpisodeResult:
        agent = getattr(self._local, "agent", None)
        if agent is None:
            agent = self._local.agent = resolve_agent(self._spec)
        res = run_job(agent, job, self._env_options, worker=threading.current_thread().name)
        return self._recorder.record(res)

    def has_capacity(self) -> bool:
        return len(self._futures) < self._workers

    def busy(self) -> bool:
        return bool(self._futures)

    def submit(self, job: Job) -> None:
        self._futures.add(self._pool.submit(self._work, job))  # type: ignore[arg-type]

    def wait(self, timeout: float) -> list[EpisodeResult]:
        done, _ = wait(self._futures, timeout=timeout, return_when=FIRST_COMPLETED)
        self._futures -= done
        return [f.result() for f in done]

    def stop(self) -> None:
        self._pool.shutdown()


def _jobs(
    problems: Iterable[Problem | str | Job], attempts: int, env_options: Mapping[str, Any]
) -> list[Job]:
    items = list(problems)
    given = [p for p in items if isinstance(p, Job)]
    if given:  # episodes made by the caller (repair mode), each with its own env options
        if len(given) != len(items):
            raise ValueError("give problems or jobs, not both")
        return given
    resolved: list[Problem] = []
    suite = None
    for p in items:
        assert not isinstance(p, Job)
        if isinstance(p, str):
            if suite is None:
                from cudaenv.problems.loader import load_suite

                suite = load_suite(env_options.get("source", "builtin"))
            p = suite[p]
        resolved.append(p)
    return [Job(problem=p, attempt=a) for a in range(attempts) for p in resolved]


def run_episodes(
    agent: AgentSpec,
    problems: Iterable[Problem | str | Job],
    *,
    attempts: int = 1,
    workers: int = 1,
    use_ray: bool = False,
    out_dir: str | Path | None = None,
    env_options: Mapping[str, Any] | None = None,
    ray_address: str | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    max_retries: int = 2,
    retry_infrastructure: bool = True,
) -> Iterator[EpisodeResult]:
    """Run ``attempts`` episodes per problem and yield each :class:`EpisodeResult` as it finishes.

    Args:
        agent: an agent factory (any zero-argument callable, e.g. a class), a registered
            name ("oracle", "nop", "openai"), or ``{"name": ..., **options}``. Ray pickles it
            to every actor.
        problems: Problems, or task_ids looked up in ``env_options["source"]`` (builtin);
            or :class:`~cudaenv.rollout.episode.Job` objects, run as given (``attempts`` is
            then unused; each job's ``env_options`` go over ``env_options``).
        attempts: episodes per problem (keys ``<task_id>#0`` .. ``#attempts-1``).
        workers: threads (in-process) or Ray actors running episodes at once.
        use_ray: run on a pool of Ray actors (``ray.init`` locally unless Ray is already up
            or ``ray_address`` is given, e.g. "auto" for a cluster).
        out_dir: where ``results.jsonl`` / ``trajectories.jsonl`` go; None: nothing stored.
        env_options: keyword arguments of :class:`~cudaenv.env.core.CudaEnv`.
        num_cpus / num_gpus: resources each Ray actor declares.
        max_retries: re-runs of an episode whose Ray worker died under it.
        retry_infrastructure: on resume, re-run keys whose stored result is an infrastructure failure.
    """
    env_options = dict(env_options or {})
    if attempts < 1 or workers < 1:
        raise ValueError("attempts and workers must be >= 1")
    resolve_agent(agent)  # fail fast on a bad spec or a missing extra, before any worker starts
    if use_ray:
        from cudaenv.rollout.ray_pool import _ray

        _ray()  # MissingExtraError now, not at the first next()
    jobs = _jobs(problems, attempts, env_options)  # unknown task_ids fail before out_dir exists
    recorder = _Recorder(out_dir)
    done = recorder.done_keys(retry_infrastructure)
    pending: deque[Job] = deque(j for j in jobs if j.key not in done)
    if not pending:
        recorder.seal()
    pool = _Pool(workers, use_ray, ray_address, num_cpus, num_gpus, max_retries)
    return _drive(agent, env_options, pending, recorder, pool)


@dataclass(frozen=True)
class _Pool:
    """How episodes run: ``run_episodes``' worker and Ray arguments, passed on as one."""

    workers: int
    use_ray: bool
    ray_address: str | None
    num_cpus: float
    num_gpus: float
    max_retries: int


def _drive(
    agent: AgentSpec,
    env_options: dict[str, Any],
    pending: deque[Job],
    recorder: _Recorder,
    pool: _Pool,
) -> Iterator[EpisodeResult]:
    if not pending:
        return
    pool = replace(pool, workers=min(pool.workers, len(pending)))
    backend: Any = None
    try:
        backend = _backend(agent, env_options, pending, recorder, pool)
        while pending or backend.busy():
            while pending and backend.has_capacity():
                backend.submit(pending.popleft())
            for res in backend.wait(timeout=0.5):
                yield recorder.record(res) if pool.use_ray else res
    finally:
        recorder.seal()  # first: nothing abandoned below is stored
        if backend is not None:
            backend.stop()


def _backend(
    agent: AgentSpec,
    env_options: dict[str, Any],
    pending: deque[Job],
    recorder: _Recorder,
    pool: _Pool,
) -> Any:
    if pool.use_ray:
        from cudaenv.rollout.ray_pool import RayBackend

        return RayBackend(
            agent,
            env_options,
            pool.workers,
            num_cpus=pool.num_cpus,
            num_gpus=pool.num_gpus,
            address=pool.ray_address,
            max_retries=pool.max_retries,
            requeue=pending.appendleft,
        )
    return _ThreadBackend(agent, env_options, pool.workers, recorder)


async def arun_episodes(
    agent: AgentSpec, problems: Iterable[Problem | str | Job], **kwargs: Any
) -> AsyncIterator[EpisodeResult]:
    """``run_episodes`` as an async iterator (same arguments), for asyncio training loops.

    The sync runner runs in a helper thread; leaving the ``async for`` early stops it
    between results, with the same keep-what-is-stored semantics.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()
    it = run_episodes(agent, problems, **kwargs)  # validates arguments here, in the caller

    def produce() -> None:
        try:
            for res in it:
                loop.call_soon_threadsafe(queue.put_nowait, ("item", res))
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the consumer
            loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
        else:
            loop.call_soon_threadsafe(queue.put_nowait, ("end", None))
        finally:
            with contextlib.suppress(Exception):
                it.close()  # type: ignore[attr-defined]

    thread = threading.Thread(target=produce, name="cudaenv-arun", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
