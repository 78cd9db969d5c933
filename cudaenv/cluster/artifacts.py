"""Build outputs shipped between nodes: a build-cache entry out of one node's cache into another's.

Why: an episode worker builds the solution (nvcc, minutes of CPU) and a grader only runs it;
the grader gets the binaries, not the sources to compile again. An entry travels under its
build-cache key (:func:`cudaenv.grading.build_cache.build_key`: files, build command, problem
type, toolkit version, the sandbox's toolchain), so a grader whose toolkit or toolchain
differs looks up another key, misses, and builds for itself: never a binary of another
toolchain. What is shipped is what the grading build on the worker stored (never the agent's
workspace). This module knows the cache's layout (``<key>/build.json``, ``<key>/files/``);
see the report in ``docs/CLUSTER.md`` for the export/import the build cache should offer.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from cudaenv.grading.build_cache import BuildCache, CachedBuild
from cudaenv.grading.cache_files import remove_tree, temp_dir_beside, warn_failed


class ShippedBuild(BaseModel):
    """One build-cache entry as data: its key, the build's result and every output file."""

    model_config = ConfigDict(extra="forbid")

    key: str
    entry: CachedBuild
    files: dict[str, bytes]

    @property
    def size_bytes(self) -> int:
        return sum(len(b) for b in self.files.values())


def export_build(key: str, cache: BuildCache | None = None) -> ShippedBuild | None:
    """The entry ``key`` of this node's build cache; None when it is not there (not built
    here, a failed build, over the cache's size limit)."""
    cache = cache or BuildCache()
    entry = cache.get(key)
    if entry is None:
        return None
    base = cache.root / key / "files"
    try:
        files = {rel: (base / rel).read_bytes() for rel in entry.artifacts}
    except OSError:  # evicted or half-removed meanwhile: the grader builds for itself
        return None
    return ShippedBuild(key=key, entry=entry, files=files)


def has_build(key: str, cache: BuildCache | None = None) -> bool:
    return (cache or BuildCache()).get(key) is not None


def import_build(shipped: ShippedBuild, cache: BuildCache | None = None) -> bool:
    """Put ``shipped`` into this node's build cache (filled beside, renamed into place, as the
    cache writes its own entries); True when the entry is there afterwards. A failed write
    warns and costs only the cache: the grade then builds."""
    cache = cache or BuildCache()
    if cache.get(shipped.key) is not None:
        return True
    target = cache.root / shipped.key
    tmp: Path | None = None
    try:
        tmp = temp_dir_beside(target)
        for rel in shipped.entry.artifacts:
            dest = tmp / "files" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(shipped.files[rel])
        (tmp / "build.json").write_text(shipped.entry.model_dump_json())
        with cache.lock(shipped.key):
            if cache.get(shipped.key) is None:
                remove_tree(target)
                tmp.rename(target)
                tmp = None
    except (OSError, KeyError) as exc:
        if isinstance(exc, OSError):
            warn_failed("shipped build", target, exc)
        return False
    finally:
        remove_tree(tmp)
    return cache.get(shipped.key) is not None
