"""The results store under faults: torn tails, a full disk, unwritable and busy directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.errors import OutDirBusyError, OutDirError
from cudaenv.rollout.store import ResultStore, claim_dir


def _keys(store: ResultStore) -> list[str]:
    return [r["key"] for r in store.records()]


def test_a_torn_tail_is_cut_off_before_the_next_append(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append({"key": "t#0", "reward": 1.0})
    store.append({"key": "t#1", "reward": 1.0})
    with store.path.open("ab") as fh:  # a writer killed mid-line
        fh.write(b'{"key": "t#2", "rew')
    assert _keys(store) == ["t#0", "t#1"]  # the torn line is never read as a record
    ResultStore(tmp_path).append({"key": "t#3", "reward": 0.0})
    assert _keys(ResultStore(tmp_path)) == ["t#0", "t#1", "t#3"]  # t#3 not glued on, not lost
    assert store.path.read_bytes().endswith(b"\n")
    assert (tmp_path / "results.jsonl.torn").read_bytes() == b'{"key": "t#2", "rew\n'


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.path.write_text('{"key": "t#0"}')  # complete JSON, newline lost
    store.append({"key": "t#1"})
    assert _keys(store) == ["t#0", "t#1"] and not (tmp_path / "results.jsonl.torn").exists()


def test_a_full_disk_is_one_error_and_keeps_every_stored_record(mount_tmpfs) -> None:
    fs = mount_tmpfs(64)
    store = ResultStore(fs / "out")
    stored = 0
    with pytest.raises(OutDirError) as err:
        for i in range(10_000):
            store.append({"key": f"t#{i}", "pad": "x" * 700})
            stored += 1
    msg = str(err.value)
    assert "No space left" in msg and "\n" not in msg and str(fs / "out") in msg
    assert isinstance(err.value, OSError) and stored > 0
    data = store.path.read_bytes()
    assert data.endswith(b"\n")  # the failed write was cut back: no half record
    assert [json.loads(line)["key"] for line in data.splitlines()] == [
        f"t#{i}" for i in range(stored)
    ]


def test_unwritable_out_dirs_are_one_line_errors(tmp_path: Path, mount_tmpfs) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    read_only = mount_tmpfs(16, read_only=True)
    for out, why in [
        (a_file, "File exists"),
        (Path("/dev/null/x"), "Not a directory"),
        (read_only, "Read-only file system"),
        (read_only / "sub", "Read-only file system"),
    ]:
        with pytest.raises(OutDirError) as err:
            claim_dir(out)
        assert why in str(err.value) and str(out) in str(err.value), out
        assert "\n" not in str(err.value)
    with pytest.raises(OutDirError, match="Not a directory"):
        ResultStore(Path("/dev/null/x"))


def test_a_claimed_dir_is_refused_to_another_process(tmp_path: Path) -> None:
    out = tmp_path / "out"
    probe = [
        sys.executable,
        "-c",
        "import sys; from cudaenv.rollout.store import claim_dir; claim_dir(sys.argv[1])",
        str(out),
    ]
    with claim_dir(out):
        with claim_dir(out):  # claims nest within one process
            pass
        busy = subprocess.run(probe, capture_output=True, text=True)
        assert busy.returncode != 0
        assert "OutDirBusyError" in busy.stderr and f"(pid {os.getpid()})" in busy.stderr
    free = subprocess.run(probe, capture_output=True, text=True)
    assert free.returncode == 0, free.stderr  # released when the last claim ends


def test_a_dead_owner_does_not_hold_the_dir(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = "import os, sys; from cudaenv.rollout.store import claim_dir; claim_dir(sys.argv[1]); "
    code += "os.kill(os.getpid(), 9)"
    dead = subprocess.run([sys.executable, "-c", code, str(out)])
    assert dead.returncode == -9
    with claim_dir(out) as claim:  # the kernel dropped the lock with the process
        assert claim.dir == out
    with pytest.raises(OutDirBusyError):
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                code.replace("os.kill(os.getpid(), 9)", "print(1, flush=True); sys.stdin.read()"),
                str(out),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout.readline().strip() == "1"  # it holds the claim now
            claim_dir(out)
        finally:
            holder.communicate("")
