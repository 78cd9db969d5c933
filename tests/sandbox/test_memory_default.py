"""The default sandbox memory cap shares the host's memory among the workers running at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cudaenv.sandbox import base
from cudaenv.sandbox.base import SandboxLimits, declare_workers, default_memory_mb, host_memory_mb


@pytest.fixture(autouse=True)
def one_worker() -> Iterator[None]:
    yield
    declare_workers(1)


def test_the_formula_and_its_clamps() -> None:
    assert default_memory_mb(3, total_mb=24 * 1024) == 6144  # 0.75 * 24 GB / 3
    assert default_memory_mb(1, total_mb=24 * 1024) == base.MAX_MEMORY_MB
    assert default_memory_mb(64, total_mb=24 * 1024) == base.MIN_MEMORY_MB
    assert 3 * default_memory_mb(3, total_mb=24 * 1024) < 24 * 1024


def test_declared_workers_set_the_default_from_this_hosts_memory() -> None:
    total = host_memory_mb()
    if total is None:
        pytest.skip("no /proc/meminfo here")
    declare_workers(4)
    limits = SandboxLimits()
    assert limits.memory_mb == default_memory_mb(4, total_mb=total)
    assert limits.memory_mb * 4 <= max(total * base.MEMORY_SHARE, 4 * base.MIN_MEMORY_MB)
    assert SandboxLimits(memory_mb=123).memory_mb == 123  # an explicit cap wins


def test_a_worker_pool_declares_its_size() -> None:
    from cudaenv.rollout.pool import DaemonPool

    pool = DaemonPool(6, "test-pool")
    try:
        assert base._workers == 6
    finally:
        pool.shutdown()
