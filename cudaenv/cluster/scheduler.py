"""The grading queue: one asyncio actor beside the driver that hands exclusive work to graders.

Why an actor of its own: episode workers anywhere in the cluster submit work and block on the
verdict; graders come and go (a killed process, a removed node). The scheduler keeps one
:class:`~cudaenv.cluster.fair_queue.FairQueue` per grader kind, hands each grader at most
``max_inflight`` items (backpressure: one runs, the next waits at the grader so the device
never idles, the rest wait here), and owns the graders: one that dies is replaced (up to
``max_respawns``), and its items go back to the front of their queue, up to ``max_retries``
times each, then resolve as infrastructure failures (masked, never a 0 reward). Work that
finds no live grader of its kind for ``grader_wait_s`` resolves the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from cudaenv.cluster import _ray
from cudaenv.cluster.fair_queue import FairQueue
from cudaenv.cluster.grader import (
    KEEP_INTERVALS,
    GradeOutcome,
    Grader,
    GraderInfo,
    GraderStats,
    Interval,
)
from cudaenv.cluster.seam import ExclusiveWork, infrastructure_verdict


class GraderSpec(BaseModel):
    """One grader to keep alive: its name, kind and Ray actor options (resources)."""

    name: str
    kind: str
    options: dict[str, Any]


class SchedulerSettings(BaseModel):
    max_inflight: int = 2
    max_retries: int = 2
    grader_wait_s: float = 600.0
    baseline_wait_s: float = 300.0
    max_respawns: int = 8
    stats_timeout_s: float = 5.0


class GraderState(BaseModel):
    """One grader as the status table shows it."""

    name: str
    kind: str
    node_id: str | None = None
    pid: int | None = None
    alive: bool
    ready: bool
    inflight: int
    running: bool = False
    waiting: int = 0
    graded: int = 0
    restarts: int = 0
    busy_s: float = 0.0
    up_s: float = 0.0

    @property
    def busy_fraction(self) -> float | None:
        return self.busy_s / self.up_s if self.up_s > 0 else None


class SchedulerStatus(BaseModel):
    queued: dict[str, int]
    graders: list[GraderState]
    resolved: int
    retried: int
    failed: int


@dataclass(eq=False)
class _Item:
    work: ExclusiveWork
    future: asyncio.Future[GradeOutcome]
    queued_at: float = field(default_factory=time.monotonic)
    tries: int = 0


@dataclass(eq=False)
class _Slot:
    spec: GraderSpec
    handle: Any = None
    generation: int = 0
    ready: bool = False
    alive: bool = True
    inflight: int = 0
    restarts: int = 0
    info: GraderInfo | None = None


class Scheduler:
    """The actor body; every method runs on the actor's event loop."""

    def __init__(self, specs: list[GraderSpec], store: Any, settings: SchedulerSettings) -> None:
        self.settings = settings
        self.store = store
        self.slots = [_Slot(spec) for spec in specs]
        self.queues: dict[str, FairQueue[_Item]] = {s.kind: FairQueue() for s in specs}
        self.resolved = self.retried = self.failed = 0
        self.done: dict[str, deque[Interval]] = {}  # "<grader>#<generation>" -> intervals
        self._watch: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # ----------------------------------------------------------------- graders
    def _spawn(self, slot: _Slot) -> None:
        ray = _ray.ray()
        s = self.settings
        cls = ray.remote(Grader).options(
            **_ray.actor_options(max_concurrency=s.max_inflight + 2, **slot.spec.options)
        )
        slot.handle = cls.remote(slot.spec.name, slot.spec.kind, self.store, s.baseline_wait_s)
        slot.generation += 1
        slot.ready, slot.alive, slot.inflight, slot.info = False, True, 0, None
        self._task(self._await_ready(slot, slot.generation))

    async def _await_ready(self, slot: _Slot, generation: int) -> None:
        try:
            info = await slot.handle.info.remote()
        except Exception as exc:
            if slot.generation == generation and _ray.died(exc):
                self._lost(slot, generation)
            return
        if slot.generation == generation:
            slot.info, slot.ready = info, True
            self._dispatch()

    def _lost(self, slot: _Slot, generation: int) -> None:
        """The grader of ``generation`` died: its claims go, a replacement starts."""
        if slot.generation != generation or not slot.alive:
            return
        slot.alive = slot.ready = False
        self._task(self._release(slot.spec.name))
        if slot.restarts < self.settings.max_respawns:
            slot.restarts += 1
            self._spawn(slot)

    async def _release(self, name: str) -> None:
        try:
            await self.store.release_all.remote(name)
        except Exception:  # the store gone: nothing to release
            return

    async def start(self, timeout_s: float = 300.0) -> list[GraderInfo]:
        """Start every grader; the ones ready within ``timeout_s`` (others keep starting)."""
        for slot in self.slots:
            self._spawn(slot)
        self._watch = self._watch or asyncio.get_running_loop().create_task(self._watchdog())
        deadline = time.monotonic() + timeout_s
        while not all(s.ready for s in self.slots) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return [s.info for s in self.slots if s.info is not None]

    def served(self) -> list[str]:
        """The grader kinds this service has (any grader of it, started or starting)."""
        return sorted({s.spec.kind for s in self.slots})

    # ----------------------------------------------------------------- work
    async def submit(self, work: ExclusiveWork) -> GradeOutcome:
        """Queue ``work`` and return its outcome once a grader ran it (or it failed for good)."""
        if work.kind not in self.queues:
            return GradeOutcome(
                verdict=infrastructure_verdict(work.call, f"no {work.kind} grader in this cluster")
            )
        item = _Item(work, asyncio.get_running_loop().create_future())
        self._queue(item)
        self._dispatch()
        return await item.future

    def _queue(self, item: _Item, front: bool = False) -> None:
        w = item.work
        self.queues[w.kind].push(item, priority=w.priority, problem=w.problem_key, front=front)

    def _dispatch(self) -> None:
        """Hand work to graders, one item per grader per pass (spread before stacking)."""
        cap = self.settings.max_inflight
        progress = True
        while progress:
            progress = False
            for slot in sorted(self.slots, key=lambda s: s.inflight):
                if not (slot.ready and slot.alive) or slot.inflight >= cap:
                    continue
                item = self.queues[slot.spec.kind].pop()
                if item is None:
                    continue
                slot.inflight += 1
                progress = True
                self._task(self._run(slot, slot.generation, item))

    async def _run(self, slot: _Slot, generation: int, item: _Item) -> None:
        try:
            outcome = await slot.handle.run.remote(item.work)
        except Exception as exc:
            if _ray.died(exc):
                self._lost(slot, generation)
                self._retry(item, f"grader {slot.spec.name} died: {type(exc).__name__}")
            else:
                self._resolve(item, None, f"grader {slot.spec.name} failed: {exc}"[:2000])
        else:
            outcome.tries = item.tries
            if outcome.interval is not None:
                where = f"{slot.spec.name}#{generation}"
                self.done.setdefault(where, deque(maxlen=KEEP_INTERVALS)).append(outcome.interval)
            self._resolve(item, outcome)
        finally:
            if slot.generation == generation:
                slot.inflight -= 1
            self._dispatch()

    def _retry(self, item: _Item, why: str) -> None:
        if item.tries >= self.settings.max_retries:
            self._resolve(item, None, f"{why}; gave up after {item.tries + 1} tries")
            return
        item.tries += 1
        self.retried += 1
        self._queue(item, front=True)

    def _resolve(self, item: _Item, outcome: GradeOutcome | None, why: str = "") -> None:
        if item.future.done():
            return
        if outcome is None:
            self.failed += 1
            verdict = infrastructure_verdict(item.work.call, f"infrastructure: {why}")
            outcome = GradeOutcome(verdict=verdict, tries=item.tries)
        self.resolved += 1
        item.future.set_result(outcome)

    async def _watchdog(self) -> None:
        """Fail work that has had no live grader of its kind for ``grader_wait_s``."""
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for kind, queue in self.queues.items():
                if not len(queue) or any(s.ready for s in self.slots if s.spec.kind == kind):
                    continue
                limit = self.settings.grader_wait_s
                for item in queue.remove(lambda i, now=now, limit=limit: now - i.queued_at > limit):
                    self._resolve(item, None, f"no live {kind} grader for {limit:.0f}s")

    def _task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- status
    async def _stats(self, slot: _Slot) -> GraderStats | None:
        if not (slot.ready and slot.alive):
            return None
        try:
            ref = slot.handle.stats.remote()
            return await asyncio.wait_for(ref, self.settings.stats_timeout_s)
        except Exception:  # dead or slow: the table shows what the scheduler knows
            return None

    async def status(self) -> SchedulerStatus:
        stats = await asyncio.gather(*(self._stats(s) for s in self.slots))
        graders = []
        for slot, st in zip(self.slots, stats, strict=True):
            info = slot.info
            graders.append(
                GraderState(
                    name=slot.spec.name,
                    kind=slot.spec.kind,
                    node_id=info.node_id if info else None,
                    pid=info.pid if info else None,
                    alive=slot.alive,
                    ready=slot.ready,
                    inflight=slot.inflight,
                    running=st.running if st else False,
                    waiting=st.waiting if st else 0,
                    graded=st.graded if st else 0,
                    restarts=slot.restarts,
                    busy_s=st.busy_s if st else 0.0,
                    up_s=st.up_s if st else 0.0,
                )
            )
        return SchedulerStatus(
            queued={k: len(q) for k, q in self.queues.items()},
            graders=graders,
            resolved=self.resolved,
            retried=self.retried,
            failed=self.failed,
        )

    def intervals(self) -> dict[str, list[Interval]]:
        """The exclusive intervals of every finished item, by ``<grader>#<generation>``
        (a replaced grader's are kept: the device is the same)."""
        return {where: list(ivs) for where, ivs in self.done.items()}

    def stop(self) -> None:
        for slot in self.slots:
            slot.alive = False
            if slot.handle is not None:
                _ray.kill(slot.handle)
