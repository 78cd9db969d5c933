"""Running a repository task's fail-to-pass and pass-to-pass checks, each decided by its test
framework's own report (:mod:`cudaenv.grading.repo_reports`).

Every check runs with nothing of an earlier step alive (the sandbox's processes are killed
before and after it), writes its reports into a fresh directory whose name it could not know
in advance, and is followed by the protected-path comparison: a test run that rewrites a test
another check reads is tampering, not a pass.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from cudaenv.errors import SandboxError
from cudaenv.grading.repo_reports import ReportError, TestCase, find, parse_report, summarise
from cudaenv.grading.repo_sandbox import GRADER_PREFIX, Probe, step
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.repo_model import RepoCheck, RepoSpec
from cudaenv.sandbox.base import Sandbox

REPORTS = f"{GRADER_PREFIX}-reports"
SHIM_DIR = f"{GRADER_PREFIX}-bin"
# CTest writes its JUnit report only when asked on its command line: this ctest, first on
# PATH, asks for one in the check's report directory and runs the real one
CTEST_SHIM = """#!/bin/sh
# written by the cudaenv grader: CTest's own JUnit report for every ctest run of a check
real=$(PATH="$CUDAENV_REAL_PATH" command -v ctest) || { echo "ctest: not found" >&2; exit 127; }
exec "$real" "$@" --output-junit "$CUDAENV_REPORT_DIR/ctest-$$.xml"
"""


@dataclass
class CheckOutcome:
    """One check: its stage (status, output, the tests its reports name) and the test cases."""

    name: str
    check: RepoCheck
    stage: StageResult
    cases: list[TestCase] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.stage.status == "ok"


def install_shims(box: Sandbox) -> None:
    box.write_file(f"{SHIM_DIR}/ctest", CTEST_SHIM)
    res = box.exec(f"chmod 755 {SHIM_DIR}/ctest", timeout=60)
    if not res.ok:
        raise SandboxError(f"cannot install the ctest shim: {res.stderr[-300:]}")


def _env(where: Probe, report_dir: str) -> dict[str, str]:
    inner = f"{where.inner}/{report_dir}"
    return {
        "PATH": f"{where.inner}/{SHIM_DIR}:{where.path}",
        "CUDAENV_REAL_PATH": where.path,
        "CUDAENV_REPORT_DIR": inner,
        "GTEST_OUTPUT": f"xml:{inner}/",
        "PYTEST_ADDOPTS": f"--junitxml={inner}/pytest.xml",
        "CTEST_OUTPUT_ON_FAILURE": "1",
    }


def run_check(
    box: Sandbox, spec: RepoSpec, where: Probe, name: str, check: RepoCheck, env: Mapping[str, str]
) -> CheckOutcome:
    """Run ``check`` and decide it: a build check by its exit status; a test check by its
    exit status and its reports (at least one test ran, none failed)."""
    box.kill_processes()
    report_dir = f"{REPORTS}/{secrets.token_hex(8)}"
    box.exec(f"rm -rf {REPORTS} && mkdir -p {report_dir}", timeout=60)
    stage, _ = step(
        box, check.command, timeout=spec.timeout_s, env={**env, **_env(where, report_dir)}
    )
    box.kill_processes()  # nothing of the check may write its reports after it ended
    cases: list[TestCase] = []
    problems: list[str] = []
    for path in box.list_files():
        if path.startswith(report_dir + "/") and path.endswith(".xml"):
            try:
                cases += parse_report(box.read_file(path))
            except (ReportError, OSError) as exc:
                problems.append(f"{path.rsplit('/', 1)[-1]}: {exc}")
    lines = [f"$ {check.command}", f"exit code {stage.exit_code}"]
    reason = stage.reason
    if check.kind == "test":
        lines.append("tests: " + summarise(cases))
        ran = [c for c in cases if c.status != "skipped"]
        failed = [c.label for c in cases if c.status == "failed"]
        if stage.status == "ok" and not ran:
            reason = "no test ran (the framework's report names none)" + (
                f"; unreadable reports: {problems}" if problems else ""
            )
        elif stage.status == "ok" and failed:
            reason = f"tests failed: {', '.join(failed[:10])}"
        if reason and stage.status == "ok":
            stage = stage.model_copy(update={"status": "failed"})
    text = "\n".join([*lines, stage.output_tail])
    stage = stage.model_copy(update={"reason": reason, "output_tail": text[-4000:]})
    return CheckOutcome(name=name, check=check, stage=stage, cases=cases)


def missing_ids(ids: list[str], outcomes: list[CheckOutcome]) -> list[str]:
    """Listed test ids that no report of ``outcomes`` shows passing ("id (failed)", "id (not
    run)", "id (skipped)")."""
    cases = [c for o in outcomes for c in o.cases]
    out = []
    for test_id in ids:
        case = find(cases, test_id)
        if case is None:
            out.append(f"{test_id} (not run)")
        elif case.status != "passed":
            out.append(f"{test_id} ({case.status})")
    return out


__all__ = ["CheckOutcome", "install_shims", "missing_ids", "run_check"]
