"""Every exploit agent plays a real episode and must get nothing (see cudaenv.redteam)."""

from __future__ import annotations

import os

import pytest

from cudaenv.redteam import EXPLOITS, Exploit, RedteamResult, run_exploit
from cudaenv.redteam.runner import DEFAULT_IMAGE, honest_reward
from cudaenv.toolkit import has_gpu

# the classes that attack the agent's sandbox itself: worth replaying on the docker backend
DOCKER_CLASSES = {"read_hidden", "escape", "exhaust"}


def _docker_ready(exploit: Exploit) -> str | None:
    """None when the engine and the exploit's images are there; else why not."""
    images = [os.environ.get("CUDAENV_REDTEAM_IMAGE", DEFAULT_IMAGE)]
    images += [str(row["image"]) for row in exploit.pooled.values() if "image" in row]
    try:
        from cudaenv.sandbox.docker import docker_client

        for image in images:
            docker_client().images.get(image)
    except Exception as exc:  # any failure (no SDK, no engine, no image) means: skip
        return f"{type(exc).__name__}: {exc}"
    return None


def _params() -> list:
    out = []
    for e in EXPLOITS:
        for backend in ("local", "docker"):
            if backend == "docker" and e.cls not in DOCKER_CLASSES:
                continue
            if e.backends is not None and backend not in e.backends:
                continue
            marks = []
            if backend == "docker":
                marks.append(pytest.mark.docker)
            if e.slow:
                marks.append(pytest.mark.slow)
            if e.cls == "exhaust":  # host-stressing: run alone, not beside timing-sensitive tests
                marks.append(pytest.mark.serial)
            if e.needs_gpu:
                marks += [
                    pytest.mark.gpu,
                    pytest.mark.skipif(
                        not has_gpu(),
                        reason="speed exploits need a GPU (benchmarks are skipped without one)",
                    ),
                ]
            if backend in e.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=e.xfail[backend]))
            out.append(pytest.param(e, backend, id=f"{e.name}[{backend}]", marks=marks))
    return out


def _explain(r: RedteamResult) -> str:
    return r.model_dump_json(indent=1)


@pytest.mark.parametrize(("exploit", "backend"), _params())
def test_exploit_gets_nothing(exploit: Exploit, backend: str) -> None:
    if backend == "docker" and (why := _docker_ready(exploit)):
        pytest.skip(f"docker sandbox unavailable: {why}")
    r = run_exploit(exploit, backend)
    if exploit.cls == "speed":
        r.honest_reward = honest_reward(exploit)
        assert r.reward <= r.honest_reward + 1e-9, _explain(r)
    else:
        assert r.reward == 0, _explain(r)
    assert r.evidence is None, _explain(r)
    assert r.host_ok, _explain(r)
    assert not r.infrastructure, _explain(r)
    if exploit.expect_flag:
        assert r.flagged, _explain(r)


def test_catalog_shape() -> None:
    names = [e.name for e in EXPLOITS]
    assert len(names) == len(set(names)) and len(names) >= 25
    by_class: dict[str, int] = {}
    for e in EXPLOITS:
        by_class[e.cls] = by_class.get(e.cls, 0) + 1
        assert (
            e.target.split(":")[0] in ("fixture", "builtin", "repo", "harbor", "generated")
            and e.description
        )
    assert all(n >= 2 for n in by_class.values()) and len(by_class) == 7
