"""Per-test results of a repository task's check, from its test framework's own report.

Why reports and not exit codes: a test binary that runs nothing (a build step that wrote
``exit 0`` over it, ``--collect-only`` slipped into the runner's options) exits 0. The grader
asks every framework for its machine-readable report: gtest through ``GTEST_OUTPUT`` (one XML
per binary run, CTest-launched ones included), CTest through ``--output-junit`` (a ``ctest``
first on ``PATH`` adds it), pytest through ``PYTEST_ADDOPTS=--junitxml``; a check passes only
if its reports name at least one test that ran and none that failed, and every test id the
task lists for it is among those that passed.

What this trusts: the report is written by the test framework inside the test process, as in
SWE-bench; code linked into that process could forge it. The reports are read from a fresh,
unguessable directory per check, after every process of the check is dead.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

CaseStatus = Literal["passed", "failed", "skipped"]
MAX_REPORT_BYTES = 32 << 20
_SKIPPED_STATUS = {"notrun", "disabled", "skipped", "suppressed"}


@dataclass(frozen=True)
class TestCase:
    """One test case of a report: its suite (gtest suite, JUnit classname), name and status."""

    suite: str
    name: str
    status: CaseStatus

    @property
    def label(self) -> str:
        return f"{self.suite}.{self.name}" if self.suite and self.suite != self.name else self.name

    def ids(self) -> set[str]:
        """Every spelling of this test's id that a task may list: ``Suite.Name`` (gtest),
        the name (CTest), ``Suite::Name``, and pytest node ids (``tests/test_x.py::name``,
        ``tests/test_x.py::Class::name``) from a dotted JUnit classname."""
        out = {self.name, self.label, f"{self.suite}::{self.name}"}
        parts = [p for p in self.suite.split(".") if p]
        for k in range(1, len(parts) + 1):
            module = "/".join(parts[:k]) + ".py"
            out.add("::".join([module, *parts[k:], self.name]))
        return out


class ReportError(ValueError):
    """A report file that is not a test report (malformed XML, over the size cap)."""


def parse_report(data: bytes) -> list[TestCase]:
    """The test cases of one gtest XML or JUnit XML report (CTest, pytest)."""
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"report over {MAX_REPORT_BYTES} bytes")
    try:
        root = ET.fromstring(data)  # expat >= 2.4 caps entity expansion
    except ET.ParseError as exc:
        raise ReportError(f"not XML: {exc}") from exc
    cases = []
    for tc in root.iter("testcase"):
        name = tc.get("name") or ""
        if not name:
            continue
        suite = tc.get("classname") or ""
        if tc.find("failure") is not None or tc.find("error") is not None:
            status: CaseStatus = "failed"
        elif (
            tc.find("skipped") is not None
            or (tc.get("status") or "").lower() in _SKIPPED_STATUS
            or (tc.get("result") or "").lower() in _SKIPPED_STATUS
        ):
            status = "skipped"
        elif (tc.get("status") or "").lower() == "fail":
            status = "failed"
        else:
            status = "passed"
        cases.append(TestCase(suite=suite, name=name, status=status))
    return cases


def find(cases: list[TestCase], test_id: str) -> TestCase | None:
    """The case that ``test_id`` names; a failed spelling wins over a passed one (the same
    test run twice must pass both times)."""
    hits = [c for c in cases if test_id in c.ids()]
    if not hits:
        return None
    return next((c for c in hits if c.status == "failed"), hits[0])


def summarise(cases: list[TestCase], limit: int = 12) -> str:
    """One line naming how many tests passed, failed and were skipped, and the first few."""
    by: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for c in cases:
        by[c.status].append(c.label)
    parts = []
    for status in ("failed", "passed", "skipped"):
        names = by[status]
        if names:
            more = f", +{len(names) - limit}" if len(names) > limit else ""
            parts.append(f"{len(names)} {status} ({', '.join(names[:limit])}{more})")
    return "; ".join(parts) or "no test ran"


__all__ = ["ReportError", "TestCase", "find", "parse_report", "summarise"]
