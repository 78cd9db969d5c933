"""The baseline cache shared by every grader of a cluster: each baseline timed once per device.

Why: a node's baseline cache (:mod:`cudaenv.grading.baseline_cache`) lives on its disk, so
eight nodes with the same GPU would time every baseline eight times. The store is one actor
beside the driver holding entries under the same key as the node caches (problem content,
device model, driver, toolkit, timing mode). A grader missing an entry asks the store: a hit
is written into its node's cache; a miss is claimed by one grader, which times the baseline
alone (:func:`~cudaenv.grading.baseline_pass.time_baseline`, the node cache's one writer, with
provenance), then publishes it; a grader asking meanwhile waits for it. A claim whose grader
died (or took longer than ``claim_ttl_s``) goes to the next grader that asks.

Trust: only entries a grader timed through ``time_baseline`` are published, with their
provenance; an entry that does not validate as a :class:`CachedBaseline` is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from cudaenv.grading.baseline_cache import BaselineCache, CachedBaseline, baseline_key
from cudaenv.problems.model import Problem
from cudaenv.toolkit import GpuInfo

Answer = Literal["hit", "claimed", "busy"]


class StoreStats(BaseModel):
    """What the store holds and how each entry came to be (for the status and the tests)."""

    entries: int
    published: dict[str, int]  # key -> times published (1 when each baseline is timed once)
    claims: dict[str, int]  # key -> claims granted (more than 1 only after a claimer died)
    hits: int
    devices: dict[str, str]  # key -> "<device>/<driver>" from the provenance


class BaselineStore:
    """The actor body (asyncio-free: every method is short and runs one at a time)."""

    def __init__(self, claim_ttl_s: float = 1800.0) -> None:
        self.ttl = claim_ttl_s
        self.entries: dict[str, str] = {}  # key -> CachedBaseline JSON
        self.problems: set[str] = set()  # content hashes with any device's entry
        self.claimed: dict[str, tuple[str, float]] = {}  # key -> (grader, since)
        self.published: dict[str, int] = {}
        self.claims: dict[str, int] = {}
        self.hits = 0

    def lookup(self, key: str, grader: str) -> tuple[Answer, str | None]:
        """The entry (``hit``), or the duty to time it (``claimed``), or ``busy``: another
        grader is timing it now; ask again."""
        if key in self.entries:
            self.hits += 1
            return "hit", self.entries[key]
        holder = self.claimed.get(key)
        now = time.monotonic()
        if holder is not None and holder[0] != grader and now - holder[1] < self.ttl:
            return "busy", None
        self.claimed[key] = (grader, now)
        self.claims[key] = self.claims.get(key, 0) + 1
        return "claimed", None

    def publish(self, key: str, content_hash: str, entry_json: str, grader: str) -> bool:
        CachedBaseline.model_validate_json(entry_json)  # a malformed entry raises to the caller
        self.claimed.pop(key, None)
        if key in self.entries:
            return False
        self.entries[key] = entry_json
        self.problems.add(content_hash)
        self.published[key] = self.published.get(key, 0) + 1
        return True

    def release(self, key: str, grader: str) -> None:
        """Give a claim back (the timing failed): the next grader that asks may try."""
        if self.claimed.get(key, ("",))[0] == grader:
            del self.claimed[key]

    def release_all(self, grader: str) -> None:
        """A grader died: its claims go at once."""
        for key in [k for k, (g, _) in self.claimed.items() if g == grader]:
            del self.claimed[key]

    def knows(self, content_hash: str) -> bool:
        """Whether any device's baseline of this problem is stored."""
        return content_hash in self.problems

    def stats(self) -> StoreStats:
        devices = {
            k: CachedBaseline.model_validate_json(v).provenance.device
            for k, v in self.entries.items()
        }
        return StoreStats(
            entries=len(self.entries),
            published=dict(self.published),
            claims=dict(self.claims),
            hits=self.hits,
            devices=devices,
        )


def ensure_baseline(
    store: Any,
    problem: Problem,
    device: GpuInfo,
    grader: str,
    time_it: Callable[[], object],
    *,
    wait_s: float,
    poll_s: float = 0.2,
) -> str:
    """Make this node's baseline cache hold ``problem``'s baseline on ``device``; how:
    "local" (it did), "shared" (copied from the store), "timed" (this grader timed and
    published it), "failed" (the timing failed: the grade times it beside the solution),
    "timeout" (another grader's timing did not come within ``wait_s``: the same)."""
    from cudaenv.cluster._ray import ray

    get = ray().get
    key = baseline_key(problem, device)
    local = BaselineCache()
    if local.entry(key) is not None:
        return "local"
    deadline = time.monotonic() + wait_s
    while True:
        answer, entry_json = get(store.lookup.remote(key, grader))
        if answer == "hit" and entry_json is not None:
            entry = CachedBaseline.model_validate_json(entry_json)
            local.put(key, entry.timing, entry.provenance)
            return "shared"
        if answer == "claimed":
            break
        if time.monotonic() >= deadline:
            return "timeout"
        time.sleep(poll_s)
    try:
        time_it()
    except Exception:  # a baseline that fails to build or run: graded beside, not stored
        get(store.release.remote(key, grader))
        return "failed"
    entry = local.entry(key)
    if entry is None:  # the node cache could not be written (a full disk)
        get(store.release.remote(key, grader))
        return "failed"
    get(store.publish.remote(key, problem.content_hash(), entry.model_dump_json(), grader))
    return "timed"
