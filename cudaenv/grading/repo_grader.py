"""Grading a repository task as the benchmark defines it.

1. Compose on the host (:mod:`cudaenv.grading.repo_compose`): the base commit, the agent's
   diff with its protected paths reset, the held-out test patch.
2. In a fresh sandbox (no network): the clean base checkout, the task's pre-built build tree
   where its paths hold (:mod:`cudaenv.grading.repo_prebuild`), the composed changes.
3. Configure and build. With no build-system file of the agent's kept, the build runs only
   the base's build files and the compiler, so it runs in a compile-only sibling that may
   write the shared compiler cache; the tree then moves to the sandbox that runs the tests.
   A kept build-file change builds in the test sandbox itself, without the cache.
4. The fail-to-pass and pass-to-pass checks (:mod:`cudaenv.grading.repo_checks`), each from
   its framework's report; the listed test ids must each pass.
5. After configure, build and every check the protected paths are compared with what the
   problem says they hold; a difference is tampering and fails the grade.

No exploit static rules run on repository code (a repository's own sources call ``dlopen``,
``getenv`` and ``exit``): the trust boundary is the sandbox, the protected paths and the
per-test reports. Build outputs in the build directory are the build's, never tampering.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from cudaenv.errors import CudaEnvError
from cudaenv.grading.build import SandboxFactory, sandbox_factory
from cudaenv.grading.repo_checks import CheckOutcome, install_shims, missing_ids, run_check
from cudaenv.grading.repo_compose import Composed, PatchRejected, compose
from cudaenv.grading.repo_prebuild import (
    Prebuilt,
    ccache_dir,
    prebuilt,
    run_build,
    stable_workspace,
)
from cudaenv.grading.repo_sandbox import changed_protected, pack, probe, unpack
from cudaenv.grading.verdict import StageResult, Verdict
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import BaseTree, base_tree
from cudaenv.problems.repo_model import RepoSpec
from cudaenv.sandbox.base import Sandbox, SandboxLimits

#: a whole repository and its build tree: more room and CPU time than a kernel problem's
REPO_LIMITS = {"workspace_mb": 8192, "cpu_time_s": 7200}


def repo_factory(sandbox: Any, options: Mapping[str, Any] | None) -> SandboxFactory:
    """Grading sandboxes for repository tasks: the caller's, with room for a repository and
    its build unless the caller set limits itself."""
    if callable(sandbox):
        return sandbox
    opts = dict(options or {})
    opts.setdefault("limits", SandboxLimits(**REPO_LIMITS))
    opts["network"] = False
    return sandbox_factory(sandbox, opts)


class _Run:
    def __init__(
        self,
        problem: Problem,
        factory: SandboxFactory,
        compiler_cache: bool,
        use_prebuilt: bool,
        test_patch: bool = True,
        phases: tuple[str, ...] = ("f2p", "p2p"),
    ) -> None:
        self.test_patch = test_patch
        self.phases = phases
        assert problem.repository is not None
        self.problem = problem
        self.spec: RepoSpec = problem.repository
        self.factory = factory
        self.compiler_cache = compiler_cache
        self.use_prebuilt = use_prebuilt
        self.boxes: list[Sandbox] = []
        self.verdict = Verdict(task_id=problem.task_id)

    def box(self) -> Sandbox:
        b = self.factory()
        self.boxes.append(b)
        return b

    def fail(self, reason: str) -> Verdict:
        self.verdict.passed = False
        self.verdict.reason = reason
        return self.verdict

    def tampered(self, box: Sandbox, composed: Composed, after: str) -> bool:
        found = changed_protected(box, self.spec, composed.expected)
        if found:
            self.verdict.suspected_hack.append(
                f"protected paths changed during {after}: {found[:8]}"
            )
            self.fail(f"tampering: {after} changed protected paths ({', '.join(found[:5])})")
        return bool(found)

    def lay_out(
        self, box: Sandbox, base: BaseTree, pre: Prebuilt | None, composed: Composed
    ) -> bool:
        """Base checkout, pre-built tree (True when used), the composed changes."""
        where = probe(box)
        unpack(box, base.checkout_tar.read_bytes())
        used = pre is not None and pre.usable_in(where)
        if used:
            assert pre is not None
            unpack(box, pre.archive.read_bytes())
        unpack(box, composed.changes, deleted=composed.deleted, touch=True)
        box.exec(f"printf '/%s/\\n' {self.spec.build_dir} >> .git/info/exclude", timeout=60)
        return used

    def run(self, files: Any) -> Verdict:
        v, spec = self.verdict, self.spec
        started = time.perf_counter()
        base = base_tree(spec)
        try:
            composed = compose(spec, base, files, test_patch=self.test_patch)
        except PatchRejected as exc:
            v.stages["apply"] = StageResult(status="failed", reason=str(exc))
            return self.fail(str(exc))
        v.dropped_files = [d.split(": ", 1)[0] for d in composed.dropped]
        v.stages["apply"] = StageResult(
            status="ok",
            seconds=round(time.perf_counter() - started, 3),
            output_tail="\n".join(
                [f"kept: {p}" for p in composed.kept] + [f"reset: {d}" for d in composed.dropped]
            )[-4000:],
            reason=None if composed.kept else "the diff changes nothing that is graded",
        )
        pre = None
        if self.use_prebuilt and stable_workspace(self.factory):
            pre = prebuilt(spec, base, self.factory, compiler_cache=self.compiler_cache)

        test_box = self.box()
        where = probe(test_box)
        trusted = not composed.build_files
        cache = (
            ccache_dir(test_box.toolchain_id)
            if self.compiler_cache and trusted and where.ccache
            else None
        )
        build_box = None
        if cache is not None:
            build_box = test_box.compile_sibling(rw_binds=[str(cache)], ro_binds=[])
            if build_box is None:
                cache = None
            else:
                self.boxes.append(build_box)
        work = build_box or test_box
        t0 = time.perf_counter()
        reused = self.lay_out(work, base, pre, composed)
        v.stages["checkout"] = StageResult(
            status="ok",
            seconds=round(time.perf_counter() - t0, 3),
            reason="pre-built tree reused" if reused else "no pre-built tree: a full build",
        )
        if self.tampered(work, composed, "the checkout"):
            return v
        ok = run_build(work, spec, where, cache, v.stages)
        v.compiled = ok
        if self.tampered(work, composed, "the configure and build"):
            return v
        if not ok:
            failed = next(
                n for n in ("configure", "build") if v.stages[n].status not in ("ok", "skipped")
            )
            return self.fail(f"{failed} {v.stages[failed].status}: {v.stages[failed].reason}")
        if build_box is not None:  # the tree moves to the sandbox that never saw the cache
            t0 = time.perf_counter()
            tree = pack(build_box, ["."])
            build_box.close()
            unpack(test_box, tree)
            v.stages["checkout"] = v.stages["checkout"].model_copy(
                update={
                    "seconds": round(v.stages["checkout"].seconds + time.perf_counter() - t0, 3)
                }
            )
        install_shims(test_box)
        outcomes: list[CheckOutcome] = []
        for phase, checks in (("f2p", spec.f2p), ("p2p", spec.p2p)):
            if phase not in self.phases:
                continue
            for i, check in enumerate(checks, 1):
                name = f"{phase}-{i}"
                out = run_check(test_box, spec, where, name, check, {})
                outcomes.append(out)
                v.stages[name] = out.stage
                if self.tampered(test_box, composed, f"check {name}"):
                    return v
        build_failed = [o for o in outcomes if o.check.kind == "build" and not o.passed]
        if build_failed:
            v.compiled = False
        failed = [o.name for o in outcomes if not o.passed]
        missing = []
        if "f2p" in self.phases:
            missing += missing_ids(
                spec.fail_to_pass, [o for o in outcomes if o.name.startswith("f2p")]
            )
        if "p2p" in self.phases:
            missing += missing_ids(spec.pass_to_pass, outcomes)
        if failed:
            first = v.stages[failed[0]]
            return self.fail(f"{', '.join(failed)} failed; {failed[0]}: {first.reason}")
        if missing:
            return self.fail(f"listed tests did not pass: {', '.join(missing[:10])}")
        v.passed = True
        v.reason = "passed"
        return v

    def close(self) -> None:
        for b in self.boxes:
            with contextlib.suppress(Exception):  # closing is best effort
                b.close()


def grade_repository(
    problem: Problem,
    files: Any,
    *,
    mode: str = "solve",
    sandbox: Any = "local",
    sandbox_options: Mapping[str, Any] | None = None,
    compiler_cache: bool = True,
    prebuilt_tree: bool = True,
    test_patch: bool = True,
    phases: tuple[str, ...] = ("f2p", "p2p"),
    **_ignored: Any,
) -> Verdict:
    """Grade ``files`` (a patch: a ``patch`` Solution, its text; or whole files) as a fix of
    the repository task ``problem`` (see the module docstring). Never raises: a fault of the
    machinery is an infrastructure verdict. ``prebuilt_tree=False`` configures and builds from
    scratch (what :mod:`bench` compares a re-grade against). ``test_patch=False`` and
    ``phases`` select a partial run (the release gate's pass-to-pass run on the parent)."""
    started = time.perf_counter()
    factory = repo_factory(sandbox, sandbox_options)
    run = _Run(problem, factory, compiler_cache, prebuilt_tree, test_patch, tuple(phases))
    run.verdict.mode = mode
    try:
        verdict = run.run(files)
        if verdict.passed is False and verdict.failure is None:
            verdict.failure = "agent"
    except (CudaEnvError, Exception) as exc:  # the machinery's failure: masked, never scored
        verdict = run.verdict
        verdict.passed = None
        verdict.failure = "infrastructure"
        verdict.reason = f"infrastructure error: {type(exc).__name__}: {exc}"
    finally:
        run.close()
    verdict.seconds = round(time.perf_counter() - started, 4)
    return verdict


__all__ = ["grade_repository", "repo_factory"]
