"""Whose fault a failed stage is: the solution's, or the machinery's (never cached, masked).

The grader kills only on its own timeout (a "timeout", the agent's) and the sandbox's limits are the grader's too (a memory cgroup OOM kill, ``Sandbox.limit_kills``,
is the agent's: the solution used too much memory). A build or test command that dies by a
signal from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT: an operator's ``kill -9``, the
host's OOM killer, a second Ctrl-C) while the grader sent none and no sandbox limit fired is
run once more, from a workspace re-laid and with every process confirmed dead first (a
solution that rewrites the harness and then has itself killed must not get a retry that runs
its rewrite: ``before_retry``); if that run is killed the same way too, the verdict is
``failure="infrastructure"`` and nothing is cached. The price of this choice: a solution that
SIGKILLs itself twice is masked rather than scored (never rewarded either); crash signals the
solution deals itself (SIGSEGV, SIGABRT, SIGFPE, SIGBUS) stay the agent's. No death by any
signal enters the outcome cache. A stage whose own program (``python`` in ``python test.py``)
is not on the sandbox's PATH (exit 127, checked with ``command -v``) is infrastructure too.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping

from cudaenv.grading.pristine import kill_and_confirm
from cudaenv.grading.stages import (
    EXTERNAL_SIGNALS,
    StageInfrastructureFault,
    command_words,
    death_signal,
    signal_name,
)
from cudaenv.grading.verdict import StageResult
from cudaenv.sandbox.base import Sandbox


def _missing_programs(box: Sandbox, command: str, env: Mapping[str, str]) -> list[str]:
    """The programs ``command`` runs that ``command -v`` cannot find in ``box`` with ``env``."""
    missing = []
    for word in command_words(command):
        res = box.exec(f"command -v {shlex.quote(word)}", timeout=30, env=dict(env))
        if res.exit_code != 0:
            missing.append(word)
    return missing


def guarded(
    box: Sandbox,
    name: str,
    command: str,
    env: Mapping[str, str],
    run: Callable[[], StageResult],
    before_retry: Callable[[], str | None] | None = None,
) -> StageResult:
    """Run a stage, telling the solution's failures from the machinery's (module docstring):
    an outside kill is retried once, then raised; so is a stage program missing from PATH.

    Before the retry every process of the sandbox is killed and confirmed dead, then
    ``before_retry`` re-lays the workspace; a reason it returns (the killed run rewrote a
    file) fails the stage instead of retrying it."""
    for attempt in (1, 2):
        before = box.limit_kills()
        stage = run()
        sig = death_signal(stage)
        if stage.exit_code == 127 and (missing := _missing_programs(box, command, env)):
            raise StageInfrastructureFault(
                f"{name}: {', '.join(missing)} not found on the sandbox's PATH (exit 127)"
            )
        if sig is None or sig not in EXTERNAL_SIGNALS:
            return stage
        after = box.limit_kills()
        if after is not None and after > (before or 0):
            why = f"killed by the sandbox's memory limit ({signal_name(sig)})"
            return stage.model_copy(update={"status": "failed", "reason": why})
        if attempt == 1:
            kill_and_confirm(box)
            if before_retry is not None and (why := before_retry()):
                return stage.model_copy(update={"status": "failed", "reason": why})
    raise StageInfrastructureFault(
        f"{name}: killed twice by {signal_name(sig)}, which the grader did not send and no "
        "sandbox limit dealt (an operator's kill, the host's OOM killer, an interrupt)"
    )
