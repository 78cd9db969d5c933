"""``cudaenv eval`` under faults, as real processes: Ctrl-C once and twice, two runs on one
--out, an unwritable --out, a disk that fills mid-run. Each ends in one line, stores nothing
half-graded, and a rerun completes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.rollout import ResultStore
from tests.rollout.conftest import cpu_suite

CUDAENV = Path(sys.executable).parent / "cudaenv"
ATTEMPTS = 6


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Six CPU problems graded for real, with a private cache (no outcome reused)."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    return cpu_suite(tmp_path / "suite", ATTEMPTS)


def _args(src: Path, out: Path, attempts: int = 1) -> list[str]:
    return [
        "eval", "--agent", "oracle", "--source", str(src), "--attempts", str(attempts),
        "--workers", "2", "--out", str(out),
    ]  # fmt: skip


def _start(src: Path, out: Path) -> subprocess.Popen[str]:
    """The real CLI in its own process group, as a shell runs it in the foreground."""
    return subprocess.Popen(
        [str(CUDAENV), *_args(src, out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stored(out: Path, name: str = "results") -> list[dict]:
    return list(ResultStore(out, name).records()) if (out / f"{name}.jsonl").exists() else []


def _wait_for_a_record(proc: subprocess.Popen[str], out: Path) -> None:
    """Block until the run has stored its first episode (an event, not a duration)."""
    while not _stored(out):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


def _assert_whole_and_resumable(src: Path, out: Path) -> None:
    """Every stored episode is whole (the oracle passes each one it finished) and a rerun
    runs exactly the rest."""
    stored = _stored(out)
    assert stored and all(r["status"] == "ok" and r["reward"] == 1.0 for r in stored), stored
    keys = sorted(r["key"] for r in stored)
    assert keys == sorted(r["key"] for r in _stored(out, "trajectories"))
    rerun = subprocess.run([str(CUDAENV), *_args(src, out)], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    final = _stored(out)
    assert len(final) == ATTEMPTS and len({r["key"] for r in final}) == ATTEMPTS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] == 1.0 and summary["interrupted"] is False


@pytest.mark.parametrize("signals", [1, 2])
def test_ctrl_c_stops_cleanly_and_stores_nothing_half_graded(
    suite: Path, tmp_path: Path, signals: int
) -> None:
    src, out = suite, tmp_path / "out"
    proc = _start(src, out)
    _wait_for_a_record(proc, out)
    for _ in range(signals):
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    said = [line for line in (stdout + stderr).splitlines() if "interrupted" in line]
    assert len(said) == 1 and "rerun with the same --out" in said[0], stdout + stderr
    assert "Traceback" not in stdout + stderr and "KeyboardInterrupt" not in stdout + stderr
    summary = json.loads((out / "summary.json").read_text())  # what finished, summarised
    stored = _stored(out)
    assert summary["interrupted"] is True and summary["samples"] == len(stored) < ATTEMPTS
    assert said[0].startswith(f"interrupted: {len(stored)} of {ATTEMPTS} episodes stored")
    _assert_whole_and_resumable(src, out)


def test_a_second_run_on_a_held_out_dir_is_refused(suite: Path, tmp_path: Path) -> None:
    src, out = suite, tmp_path / "out"
    first = _start(src, out)
    try:
        _wait_for_a_record(first, out)
        os.kill(first.pid, signal.SIGSTOP)  # mid-run, and it stays so while the second starts
        second = subprocess.run([str(CUDAENV), *_args(src, out)], capture_output=True, text=True)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"in use by another run (pid {first.pid})" in lines[0], lines
    finally:
        os.kill(first.pid, signal.SIGCONT)
        first.communicate(timeout=300)
    assert first.returncode == 0
    stored = _stored(out)  # each episode ran once
    assert sorted(r["key"] for r in stored) == [f"cpu-add-{i}#0" for i in range(ATTEMPTS)]


def test_an_unwritable_out_is_one_line_before_any_episode(
    cpu_problem_dir: Path, tmp_path: Path, mount_tmpfs
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, why in [
        (a_file, "File exists"),
        (Path("/dev/null/x"), "Not a directory"),
        (mount_tmpfs(16, read_only=True), "Read-only file system"),
    ]:
        res = CliRunner().invoke(app, _args(cpu_problem_dir.parent, out, 1))
        assert res.exit_code == 2, res.output
        assert (
            f"cannot write results to {out}: {why}" in res.output and "Traceback" not in res.output
        )
        assert "cpu-add#0" not in res.output  # no episode ran


def test_a_disk_full_mid_run_is_one_line_and_loses_nothing(
    cpu_problem_dir: Path, mount_tmpfs
) -> None:
    src = cpu_problem_dir.parent
    fs = mount_tmpfs(512)
    out = fs / "out"
    first = subprocess.run([str(CUDAENV), *_args(src, out, 1)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    per_episode = sum(f.stat().st_size for f in out.glob("*.jsonl"))
    st = os.statvfs(fs)
    free = st.f_bavail * st.f_frsize
    filler = fs / "filler"
    filler.write_bytes(b"\0" * max(0, free - per_episode // 2))  # room for less than an episode
    full = subprocess.run([str(CUDAENV), *_args(src, out, 3)], capture_output=True, text=True)
    assert full.returncode == 2, full.stdout + full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], full.stderr
    assert [r["key"] for r in _stored(out)] == ["cpu-add#0"]  # the stored episode is intact
    assert (out / "results.jsonl").read_bytes().endswith(b"\n")
    filler.unlink()
    again = subprocess.run([str(CUDAENV), *_args(src, out, 3)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert sorted(r["key"] for r in _stored(out)) == [f"cpu-add#{i}" for i in range(3)]
