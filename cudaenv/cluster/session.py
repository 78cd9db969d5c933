"""The driver side: a cluster session (Ray joined, the grading service and the episode
workers up) that runs episodes and stores each result once, in the driver's store.

Results come back to the driver as Ray returns them and are appended there, one record per
key (``results.jsonl``, ``trajectories.jsonl`` as in :mod:`cudaenv.rollout.runner`): workers
and graders never write the store, so a node that dies cannot leave half a result, and a
key stored in this run is never stored again. An episode whose worker died (its process
killed, its node removed) is re-run on another worker up to ``max_retries`` times, then
stored as an ``infrastructure`` result. At most ``submit_window`` episodes are out at once,
and results are yielded, not kept: the driver's memory does not grow with the run.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaenv.cluster import _ray
from cudaenv.cluster.config import PRIORITY_RANK, ClusterConfig, Priority, cluster_config
from cudaenv.cluster.service import GradingService
from cudaenv.cluster.status import ClusterStatus, grader_rows, mean_busy
from cudaenv.cluster.worker import EpisodeWorker
from cudaenv.problems.model import Problem
from cudaenv.rollout.episode import (
    AgentSpec,
    EpisodeResult,
    Job,
    infrastructure_result,
    resolve_agent,
)
from cudaenv.rollout.runner import latest_results
from cudaenv.rollout.store import ResultStore, claim_dir


class _Recorder:
    """Appends each result once (by key) to the driver's stores; nothing after :meth:`seal`."""

    def __init__(self, out_dir: str | Path | None) -> None:
        self._claim = claim_dir(out_dir) if out_dir is not None else None
        if self._claim is not None:
            weakref.finalize(self, self._claim.release)
        self.results = ResultStore(out_dir, "results") if out_dir is not None else None
        self.trajectories = ResultStore(out_dir, "trajectories") if out_dir is not None else None
        self.stored: set[str] = set()
        self.duplicates = 0
        self._sealed = False

    def done_keys(self, retry_infrastructure: bool) -> set[str]:
        if self.results is None:
            return set()
        return {
            k
            for k, r in latest_results(self.results).items()
            if not (retry_infrastructure and r.get("status") == "infrastructure")
        }

    def record(self, res: EpisodeResult) -> bool:
        """Store ``res``; False (and nothing stored) for a key already stored in this run."""
        if self._sealed or res.key in self.stored:
            self.duplicates += res.key in self.stored
            return False
        self.stored.add(res.key)
        if self.results is None or self.trajectories is None:
            return True
        if res.trajectory is not None:
            self.trajectories.append(
                {"key": res.key, "trajectory": res.trajectory.model_dump(mode="json")}
            )
            res.trajectory_path = str(self.trajectories.path)
        self.results.append(res.record())
        return True

    def seal(self) -> None:
        self._sealed = True
        if self._claim is not None:
            self._claim.release()


@dataclass(eq=False)
class _Worker:
    handle: Any
    name: str
    load: int = 0


def _jobs(problems: Iterable[Problem | str], attempts: int, source: str) -> list[Job]:
    resolved: list[Problem] = []
    suite = None
    for p in problems:
        if isinstance(p, str):
            if suite is None:
                from cudaenv.problems.loader import load_suite

                suite = load_suite(source)
            p = suite[p]
        resolved.append(p)
    return [Job(problem=p, attempt=a) for a in range(attempts) for p in resolved]


class ClusterSession:
    """Ray joined, the grading service and ``episode_workers`` episode actors started; reuse
    it across runs (a training loop's steps), then :meth:`close` it (or use ``with``)."""

    def __init__(
        self,
        agent: AgentSpec,
        *,
        config: ClusterConfig | None = None,
        env_options: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        self.config = cluster_config(config, **overrides)
        self.env_options = dict(env_options or {})
        resolve_agent(agent)  # a bad spec or a missing extra fails here, before any actor
        self.ray = _ray.ray()
        _ray.join(self.config.ray_address)
        self.agent = agent
        self.service = GradingService(self.config)
        self._closed = False
        self._count = 0
        self.workers = [self._spawn() for _ in range(self.config.episode_workers)]
        self._lock = threading.Lock()
        self.inflight = 0
        self.pending = 0
        self.done = 0
        self.retried = 0

    def _spawn(self) -> _Worker:
        c = self.config
        self._count += 1
        name = f"episodes-{self._count}"
        cls = self.ray.remote(EpisodeWorker).options(
            **_ray.actor_options(num_cpus=c.worker_cpus, max_concurrency=c.episodes_per_worker)
        )
        s = self.service
        handle = cls.remote(
            self.agent, self.env_options, name, s.scheduler, s.store, s.served, self._per_node
        )
        return _Worker(handle, name)

    @property
    def _per_node(self) -> int:
        """Episodes that may run at once on the biggest node (its sandboxes share it)."""
        c = self.config
        cpus = max(
            (n["Resources"].get("CPU", 0) for n in self.ray.nodes() if n.get("Alive")), default=1
        )
        workers = int(cpus // c.worker_cpus) if c.worker_cpus > 0 else c.episode_workers
        return max(1, min(workers, c.episode_workers) * c.episodes_per_worker)

    # ------------------------------------------------------------------ running
    def run(
        self,
        problems: Iterable[Problem | str],
        *,
        attempts: int = 1,
        out_dir: str | Path | None = None,
        priority: Priority | None = None,
        retry_infrastructure: bool = True,
    ) -> Iterator[EpisodeResult]:
        """Run ``attempts`` episodes per problem and yield each result as it is stored.

        ``priority``: "evaluation" grades ahead of "training" work queued at the same time
        (the config's by default). A rerun with the same ``out_dir`` skips the keys stored
        (infrastructure failures again unless ``retry_infrastructure=False``).
        """
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        jobs = _jobs(problems, attempts, str(self.env_options.get("source", "builtin")))
        recorder = _Recorder(out_dir)
        done = recorder.done_keys(retry_infrastructure)
        pending = deque(j for j in jobs if j.key not in done)
        rank = PRIORITY_RANK[priority or self.config.priority]
        return self._drive(pending, recorder, rank)

    def _free(self) -> _Worker | None:
        per = -(-self.config.submit_window // max(1, len(self.workers)))
        best = min(self.workers, key=lambda w: w.load, default=None)
        return best if best is not None and best.load < per else None

    def _drive(
        self, pending: deque[Job], recorder: _Recorder, rank: int
    ) -> Iterator[EpisodeResult]:
        ray = self.ray
        out: dict[Any, tuple[_Worker, Job]] = {}
        window = self.config.submit_window
        try:
            while pending or out:
                while pending and len(out) < window and (w := self._free()) is not None:
                    job = pending.popleft()
                    out[w.handle.run.remote(job, rank)] = (w, job)
                    w.load += 1
                self.inflight, self.pending = len(out), len(pending)
                ready, _ = ray.wait(list(out), num_returns=1, timeout=0.5)
                for ref in ready:
                    w, job = out.pop(ref)
                    w.load -= 1
                    res = self._result(ref, w, job, pending)
                    if res is not None and recorder.record(res):
                        self.done += 1
                        self.inflight, self.pending = len(out), len(pending)
                        yield res
        finally:
            recorder.seal()  # first: nothing abandoned below is stored
            self.inflight = self.pending = 0
            for ref in out:  # abandoned: the episode keeps its worker busy until it ends
                try:
                    ray.cancel(ref)
                except Exception:
                    continue

    def _result(self, ref: Any, w: _Worker, job: Job, pending: deque[Job]) -> EpisodeResult | None:
        ray = self.ray
        try:
            return ray.get(ref)
        except Exception as exc:
            if not _ray.died(exc):  # the worker is alive; this call failed (not the episode's)
                return infrastructure_result(job, f"{type(exc).__name__}: {exc}"[:4000])
            self._replace(w)
            if job.tries < self.config.max_retries:
                job.tries += 1
                self.retried += 1
                pending.appendleft(job)
                return None
            why = f"episode worker died {job.tries + 1} times: {type(exc).__name__}"
            return infrastructure_result(job, why)

    def _replace(self, w: _Worker) -> None:
        if w not in self.workers:
            return  # replaced already (several of its episodes failed with it)
        _ray.kill(w.handle)
        self.workers[self.workers.index(w)] = self._spawn()

    # ------------------------------------------------------------------ status
    def status(self) -> ClusterStatus:
        """A snapshot for a live line or table (call it between results)."""
        st = self.service.status()
        rows = grader_rows(st.graders)
        nodes = sum(1 for n in self.ray.nodes() if n.get("Alive"))
        return ClusterStatus(
            episodes_in_flight=self.inflight,
            episodes_pending=self.pending,
            episodes_done=self.done,
            episodes_retried=self.retried,
            workers=len(self.workers),
            nodes=nodes,
            queued=st.queued,
            graders=rows,
            gpu_busy_fraction=mean_busy(rows, "gpu"),
            cpu_busy_fraction=mean_busy(rows, "cpu"),
            grades_retried=st.retried,
            grades_failed=st.failed,
        )

    def worker_pids(self) -> dict[str, tuple[int, str]]:
        """Each episode worker's process id and node (for operators and the fault tests)."""
        handles = [(w.name, w.handle) for w in self.workers]
        pids = self.ray.get([h.pid.remote() for _, h in handles])
        nodes = self.ray.get([h.node_id.remote() for _, h in handles])
        return {n: (p, node) for (n, _), p, node in zip(handles, pids, nodes, strict=True)}

    def close(self) -> None:
        """Kill the episode workers and stop the service; safe twice."""
        if self._closed:
            return
        self._closed = True
        for w in self.workers:
            _ray.kill(w.handle)
        self.workers = []
        self.service.stop()

    def __enter__(self) -> ClusterSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_cluster_episodes(
    agent: AgentSpec,
    problems: Iterable[Problem | str],
    *,
    attempts: int = 1,
    out_dir: str | Path | None = None,
    env_options: Mapping[str, Any] | None = None,
    config: ClusterConfig | None = None,
    priority: Priority | None = None,
    retry_infrastructure: bool = True,
    **overrides: Any,
) -> ClusterRun:
    """``run_episodes`` on a cluster: one session for this run, closed when the results end
    (or the run is closed). ``overrides`` are :class:`ClusterConfig` fields
    (``ray_address="auto"``, ...). Bad arguments raise here, before the first result."""
    session = ClusterSession(agent, config=config, env_options=env_options, **overrides)
    try:
        it = session.run(
            problems,
            attempts=attempts,
            out_dir=out_dir,
            priority=priority,
            retry_infrastructure=retry_infrastructure,
        )
    except BaseException:
        session.close()
        raise
    return ClusterRun(session, it)


class ClusterRun(Iterator[EpisodeResult]):
    """The results of one :func:`run_cluster_episodes` run, as they are stored;
    :meth:`status` while it runs (a live display polls it from another thread)."""

    def __init__(self, session: ClusterSession, results: Iterator[EpisodeResult]) -> None:
        self.session = session
        self._results = _closing(session, results)
        self._closed = False

    def __next__(self) -> EpisodeResult:
        return next(self._results)

    def status(self) -> ClusterStatus:
        """The session's :meth:`ClusterSession.status` now."""
        return self.session.status()

    def close(self) -> None:
        """Stop the run (nothing more is stored) and close its session; safe twice."""
        if not self._closed:
            self._closed = True
            self._results.close()
            self.session.close()  # also when the results were never asked for


def _closing(session: ClusterSession, it: Iterator[EpisodeResult]) -> Iterator[EpisodeResult]:
    try:
        yield from it
    finally:
        session.close()
