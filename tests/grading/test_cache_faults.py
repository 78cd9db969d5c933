"""Cache writes under faults: concurrent writers of one key, and a full disk.

A cache is an optimisation: neither a writer racing another nor ENOSPC may lose a write
the others made or turn a finished grading into an infrastructure verdict.
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import cudaenv
from cudaenv.grading.baseline_cache import BaselineCache, Provenance
from cudaenv.grading.build_cache import BuildCache
from cudaenv.grading.cache_files import CacheWriteWarning
from cudaenv.grading.outcome_cache import OutcomeCache
from cudaenv.grading.verdict import StageResult, Timing
from cudaenv.problems import load_suite
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import write_problem

WRITERS = 4
WRITES = 300
KEY = "k" * 64
PROV = Provenance(writer="a test", rounds=1, device="cpu", sandbox="local")


def _hammer(args: tuple[str, str, int]) -> int:
    """Write one key WRITES times (each write then read back); return how many failed."""
    root, kind, seed = args
    os.environ["CUDAENV_CACHE_DIR"] = root
    lost = 0
    for i in range(WRITES):
        try:
            if kind == "outcome":
                cache = OutcomeCache()
                cache.put(KEY, StageResult(status="ok", exit_code=0, output_tail=f"{seed}-{i}"))
                ok = cache.get(KEY) is not None
            else:
                base = BaselineCache()
                base.put(KEY, Timing(samples_ms=[float(i)], median_ms=float(i)), PROV)
                ok = base.get(KEY) is not None
        except OSError:
            ok = False
        lost += not ok
    return lost


@pytest.mark.parametrize("kind", ["outcome", "baseline"])
def test_concurrent_writers_of_one_key_lose_no_write(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "cache"
    with multiprocessing.get_context("spawn").Pool(WRITERS) as pool:
        lost = pool.map(_hammer, [(str(root), kind, n) for n in range(WRITERS)])
    assert sum(lost) == 0, f"{sum(lost)} of {WRITERS * WRITES} writes lost"
    sub = "tests" if kind == "outcome" else "baselines"
    assert not [p.name for p in (root / sub).iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled up: every write there fails with ENOSPC."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        for sub in ("tests", "baselines", "builds"):
            (mnt / sub).mkdir()
        with contextlib.suppress(OSError), open(mnt / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        with pytest.raises(OSError) as err:
            (mnt / "probe").write_bytes(b"\0" * 8192)
        assert err.value.errno == errno.ENOSPC
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_cache_writes_on_a_full_disk_warn_and_return(
    full_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(full_disk))
    with pytest.warns(CacheWriteWarning, match="test outcome"):
        OutcomeCache().put(KEY, StageResult(status="ok", output_tail="x" * 100_000))
    with pytest.warns(CacheWriteWarning, match="baseline timing"):
        BaselineCache().put(KEY, Timing(samples_ms=[1.0] * 20_000, median_ms=1.0), PROV)
    with LocalSandbox(isolation="rlimits") as box:
        box.write_file("big.bin", b"\1" * 200_000)
        with pytest.warns(CacheWriteWarning, match="build"):
            BuildCache().put(KEY, StageResult(status="ok"), box, set())
    assert OutcomeCache().get(KEY) is None and BuildCache().get(KEY) is None
    assert not [p for p in full_disk.rglob("*.tmp")]


def test_a_full_cache_disk_never_costs_the_verdict(
    tmp_path: Path, full_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished grading whose build and test outcome cannot be cached still passes."""
    d = write_problem(
        tmp_path / "suite",
        "full-disk",
        spec={
            "build_command": "head -c 200000 /dev/zero > blob.bin && cp solution.sh run.sh",
            "test_command": "bash run.sh",
            "metadata": {"requires_gpu": False},
        },
        files={"test/readme.txt": "x"},
    )
    problem = load_suite(d)["full-disk"]
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(full_disk))
    with pytest.warns(CacheWriteWarning):
        verdict = cudaenv.grade(
            problem,
            {"solution.sh": "echo passed; exit 0\n"},
            sandbox=lambda: LocalSandbox(isolation="rlimits"),
            compiler_cache=False,
        )
    assert verdict.passed is True and verdict.failure is None, verdict
