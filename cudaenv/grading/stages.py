"""Running one grading stage in a sandbox and turning its outcome into a StageResult."""

from __future__ import annotations

import re
import secrets
import shlex
import signal
from collections.abc import Mapping

from cudaenv.errors import SandboxError
from cudaenv.grading.verdict import StageResult, StageStatus
from cudaenv.problems.model import Problem
from cudaenv.sandbox.base import ExecResult, Sandbox

TAIL_CHARS = 4000
TOKEN_ENV = "CUDAENV_COMPLETION_TOKEN"
TOKEN_PREFIX = "CUDAENV_COMPLETE"
#: a fresh seed per benchmark round (the same for the solution's and the baseline's run of the
#: round): harnesses draw their benchmark inputs from it, so no input is known in advance
BENCH_SEED_ENV = "CUDAENV_BENCH_SEED"
DEFAULT_TIMEOUT_S = 60.0
MIN_BUILD_TIMEOUT_S = 180.0


#: signals a process is sent from outside (an operator's ``kill -9``, the host's OOM killer,
#: Ctrl-C, a hang-up); the grader's own kills (its timeout) are reported as timeouts instead
EXTERNAL_SIGNALS = frozenset(
    {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}
)


class StageInfrastructureFault(SandboxError):
    """A stage ended in a way the solution cannot have caused (see :mod:`cudaenv.grading.grader`)."""


def death_signal(stage: StageResult) -> int | None:
    """The signal a stage's command died by (bash reports 128+N; a negative code is -N), or
    None when it exited by itself or the grader's timeout killed it."""
    code = stage.exit_code
    if code is None or stage.status == "timeout":
        return None
    if code < 0:
        return -code
    if 128 < code <= 128 + 64:
        return code - 128
    return None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


_SEGMENT = re.compile(r"&&|\|\||[;|()]")


def command_words(command: str) -> list[str]:
    """The programs a stage command looks up on PATH (first words without a slash)."""
    words = []
    for segment in _SEGMENT.split(command):
        try:
            parts = shlex.split(segment)
        except ValueError:
            continue
        parts = [w for w in parts if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
        if parts and "/" not in parts[0] and parts[0] not in words:
            words.append(parts[0])
    return words


def tail(result: ExecResult, limit: int = TAIL_CHARS) -> str:
    text = result.stdout
    if result.stderr:
        text = f"{text}\n[stderr]\n{result.stderr}" if text else result.stderr
    return text[-limit:]


def uses_completion_token(problem: Problem) -> bool:
    """Harnesses that print the completion token opt into the completion check (a reward-file
    verifier decides by its file instead: it may wrap a harness that never sees our token; a
    split harness's checker decides on outputs, and no secret enters the solution's process)."""
    if problem.reward_file or problem.split:
        return False
    return any(TOKEN_ENV in f.content for f in problem.test_files)


def new_token() -> str:
    return secrets.token_hex(16)


def new_bench_seed() -> str:
    """A benchmark seed: a decimal 63-bit integer (``strtoull``/``int()`` read it)."""
    return str(secrets.randbits(63))


def completed(result: ExecResult, token: str) -> bool:
    """True when the harness printed the token line (proof it ran to its end)."""
    return f"{TOKEN_PREFIX} {token}" in result.stdout


_COMPLETION_LINE = re.compile(re.escape(TOKEN_PREFIX) + r"[ \t]*(\S*)")


def completion_forgeries(stdout: str, token: str) -> list[str]:
    """forge_results / skip_checks: completion lines the harness did not print.

    The harness prints its token line once, at its very end. A line with another token is a
    guess or an imitation; the right token twice means the solution read the token and printed
    it itself (it can only get it from the environment or the process's memory).
    """
    found = _COMPLETION_LINE.findall(stdout)
    out = []
    wrong = [t for t in found if t != token]
    if wrong:
        out.append(
            f"forged completion line ({len(wrong)} line(s) with a token the grader never issued)"
        )
    if found.count(token) > 1:
        out.append(
            f"the completion token was printed {found.count(token)} times (the solution read the token)"
        )
    return out


def run_stage(
    sandbox: Sandbox,
    command: str,
    *,
    timeout: float,
    env: Mapping[str, str],
    token: str | None = None,
) -> tuple[StageResult, ExecResult]:
    """Run ``command``; ok = exit 0, no timeout, and (when given) the completion token seen."""
    res = sandbox.exec(command, timeout=timeout, env=dict(env))
    status: StageStatus = "ok"
    reason = None
    if res.timed_out:
        status, reason = "timeout", f"timed out after {timeout:.0f}s"
    elif res.exit_code != 0:
        status, reason = "failed", f"exit code {res.exit_code}"
    elif token is not None and not completed(res, token):
        status, reason = "failed", "the harness did not run to its end (no completion proof)"
    elif token is not None and (forged := completion_forgeries(res.stdout, token)):
        status, reason = "failed", forged[0]
    out = tail(res)
    if token:
        out = out.replace(token, "<token>")
    return (
        StageResult(
            status=status,
            exit_code=res.exit_code,
            seconds=round(res.duration_s, 4),
            output_tail=out,
            reason=reason,
        ),
        res,
    )
