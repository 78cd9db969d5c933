"""Starting Ray on a loaded host: a node slow to register is started again, a refused join is
not. Ray's own wait is fixed (30 s), so the slow start is injected: ``ray.init`` raising the
error Ray raises then (the real Ray start is covered by test_runner's Ray tests)."""

from __future__ import annotations

import types

import pytest

from cudaenv.rollout import ray_pool

SLOW = Exception(
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)


def _fake_ray(failures: list[BaseException]) -> types.SimpleNamespace:
    calls: list[str] = []

    def init(address=None, **_opts):
        calls.append(f"init:{address}")
        if failures:
            raise failures.pop(0)

    return types.SimpleNamespace(
        is_initialized=lambda: False,
        init=init,
        shutdown=lambda: calls.append("shutdown"),
        calls=calls,
    )


@pytest.fixture(autouse=True)
def _no_janitor(monkeypatch):
    from cudaenv.rollout import _janitor

    monkeypatch.setattr(_janitor, "start", lambda: None)


def test_a_slow_local_start_is_retried_after_shutdown(monkeypatch) -> None:
    ray = _fake_ray([SLOW, SLOW])
    monkeypatch.setattr(ray_pool, "_ray", lambda: ray)
    ray_pool.init_ray()
    assert ray.calls == ["init:local", "shutdown", "init:local", "shutdown", "init:local"]


def test_gives_up_after_the_last_attempt(monkeypatch) -> None:
    ray = _fake_ray([SLOW] * ray_pool.START_ATTEMPTS)
    monkeypatch.setattr(ray_pool, "_ray", lambda: ray)
    with pytest.raises(Exception, match="timed out during startup"):
        ray_pool.init_ray("local")
    assert ray.calls.count("init:local") == ray_pool.START_ATTEMPTS


@pytest.mark.parametrize(
    ("error", "address"),
    [(SLOW, "auto"), (SLOW, "ray://head:10001"), (ConnectionError("refused"), None)],
)
def test_other_failures_are_not_retried(monkeypatch, error, address) -> None:
    ray = _fake_ray([error])
    monkeypatch.setattr(ray_pool, "_ray", lambda: ray)
    with pytest.raises(type(error)):
        ray_pool.init_ray(address)
    assert ray.calls == [f"init:{address or 'local'}"]  # None never joins a stale cluster
