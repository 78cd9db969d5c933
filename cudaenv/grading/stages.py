"""Running one grading stage in a sandbox and turning its outcome into a StageResult."""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from cudaenv.grading.verdict import StageResult, StageStatus
from cudaenv.problems.model import Problem
from cudaenv.sandbox.base import ExecResult, Sandbox

TAIL_CHARS = 4000
TOKEN_ENV = "CUDAENV_COMPLETION_TOKEN"
TOKEN_PREFIX = "CUDAENV_COMPLETE"
DEFAULT_TIMEOUT_S = 60.0
MIN_BUILD_TIMEOUT_S = 180.0


def tail(result: ExecResult, limit: int = TAIL_CHARS) -> str:
    text = result.stdout
    if result.stderr:
        text = f"{text}\n[stderr]\n{result.stderr}" if text else result.stderr
    return text[-limit:]


def uses_completion_token(problem: Problem) -> bool:
    """Harnesses that print the completion token opt into the completion check."""
    return any(TOKEN_ENV in f.content for f in problem.test_files)


def new_token() -> str:
    return secrets.token_hex(16)


def completed(result: ExecResult, token: str) -> bool:
    """True when the harness printed the token line (proof it ran to its end)."""
    return f"{TOKEN_PREFIX} {token}" in result.stdout


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
    out = tail(res)
    if token:
        out = out.replace(token, "<token>")
    return (
        StageResult(status=status, exit_code=res.exit_code, seconds=round(res.duration_s, 4), output_tail=out, reason=reason),
        res,
    )
