"""Static checks of solution sources: required API references and forbidden constructs.

The entry point is :func:`analyse`. C/C++/CUDA sources are spliced (translation phase 2),
tokenised and checked by :mod:`cudaenv.grading.static_text_cpp` against the rule tables of
:mod:`cudaenv.grading.static_rules_cpp`; required and forbidden references are matched by
:mod:`cudaenv.grading.static_refs`; Python sources are checked in
:mod:`cudaenv.grading.static_python`. Forbidden constructs are one layer of the
reward-integrity defenses: each rule names the exploit class it stops.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cudaenv.grading.static_cpp_plan import splice
from cudaenv.grading.static_python import analyse_python, local_modules
from cudaenv.grading.static_refs import cpp_forbidden, cpp_has_ref, describe_forbidden, expand
from cudaenv.grading.static_refs_subtree import subtree_refs
from cudaenv.grading.static_rules_cpp import CPP_SUFFIXES, FORBIDDEN_TEXT
from cudaenv.grading.static_text_cpp import cpp_tokens, cpp_violations
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.problems.model import SourceFile, SourceReferences
from cudaenv.problems.policy import STRICT, GradingPolicy

__all__ = ["StaticReport", "analyse", "describe_forbidden", "static_stage"]

PY_SUFFIXES = {".py"}


@dataclass
class StaticReport:
    """What the static pass found: missing references and forbidden constructs."""

    missing_all: list[str] = field(default_factory=list)
    missing_any: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def refs_ok(self) -> bool:
        return not self.missing_all and not self.missing_any


def analyse(
    files: Iterable[SourceFile],
    refs: SourceReferences | None,
    *,
    forbid: bool = True,
    forbidden: Iterable[str] = (),
    policy: GradingPolicy = STRICT,
    context: Iterable[str] = (),
) -> StaticReport:
    """Check ``files`` for the required references and (if ``forbid``) the forbidden
    constructs of ``policy``'s checks; ``forbidden``: what the problem rules out
    (``metadata.forbidden_references``; the entry ``libraries`` stands for
    :data:`~cudaenv.grading.static_refs.LIBRARY_REFERENCES`), enforced whatever the policy;
    ``context``: the paths of the problem's context files (where includes resolve, which
    Python modules are the problem's)."""
    files = list(files)
    context = list(context)
    report = StaticReport()
    banned = expand(forbidden)
    checks = policy.checks if forbid else frozenset()
    found: set[str] = set()
    wanted = set((refs.all or []) + (refs.any or [])) if refs else set()
    if policy.source_references == "subtree":
        found = subtree_refs(files, wanted)
    dirs = {posixpath.dirname(p) for p in [*context, *(f.path for f in files)]}
    modules = policy.python_modules | local_modules(context)
    for f in files:
        suffix = PurePosixPath(f.path).suffix.lower()
        if suffix in CPP_SUFFIXES:
            text = splice(f.content)  # translation phase 2 first: `get\⏎env` is getenv
            tokens = cpp_tokens(text)
            if policy.source_references == "tokens":
                found |= {r for r in wanted if cpp_has_ref(tokens, r)}
            report.violations += cpp_violations(f.path, tokens, text, checks, dirs)
            report.violations += cpp_forbidden(f.path, tokens, text, banned)
        elif suffix in PY_SUFFIXES:
            refs_found, violations = analyse_python(
                f.path,
                f.content,
                wanted if policy.source_references == "tokens" else (),
                checks=checks,
                banned=banned,
                text_rules=FORBIDDEN_TEXT,
                modules=modules,
            )
            found |= refs_found
            report.violations += violations
    if refs:
        report.missing_all = [r for r in (refs.all or []) if r not in found]
        if refs.any and not any(r in found for r in refs.any):
            report.missing_any = list(refs.any)
    return report


def static_stage(
    verdict: Verdict,
    solution: list[SourceFile],
    refs: SourceReferences | None,
    forbidden: Iterable[str],
    *,
    policy: GradingPolicy = STRICT,
    context: Iterable[str] = (),
) -> str | None:
    """Run :func:`analyse` for the grader: record the ``static`` (and, with ``refs``, the
    ``source_refs``) stage and any suspected hack; the failure reason, or None to go on."""
    report = analyse(solution, refs, forbidden=forbidden, policy=policy, context=context)
    warnings = _warnings(solution, policy, context, set(report.violations))
    verdict.stages["static"] = StageResult(
        status="failed" if report.violations else "ok",
        output_tail="\n".join([*report.violations, *warnings])[-4000:],
        reason="forbidden constructs in the solution" if report.violations else None,
    )
    if refs is not None:
        missing = report.missing_all + (
            [f"any of {report.missing_any}"] if report.missing_any else []
        )
        verdict.stages["source_refs"] = StageResult(
            status="ok" if report.refs_ok else "failed",
            reason=f"missing required API use: {', '.join(missing)}" if missing else None,
        )
    if report.violations:
        verdict.suspected_hack.extend(report.violations)
        return f"forbidden construct: {report.violations[0]}"
    if not report.refs_ok:
        return verdict.stages["source_refs"].reason or "missing source references"
    return None


def _warnings(
    solution: list[SourceFile], policy: GradingPolicy, context: Iterable[str], seen: set[str]
) -> list[str]:
    """What ``policy``'s warn-only checks find (``warning: ...`` lines), beyond ``seen``."""
    if not policy.warn:
        return []
    only = policy.model_copy(update={"checks": policy.warn, "warn": frozenset()})
    found = analyse(solution, None, policy=only, context=context).violations
    return [f"warning: {v}" for v in found if v not in seen]
