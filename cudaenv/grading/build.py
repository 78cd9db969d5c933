"""The build stage in one place, walked forward: the grading sandbox, its environment, then
:func:`prepare`: write the workspace, check the toolchain has every library the problem needs
(:mod:`cudaenv.grading.toolchain_gaps`: a missing one is infrastructure), key the build,
restore an identical build from the build cache (under the key's lock), else build (through
the compiler cache where it applies) and store the result.

Why one module: a grade and the baseline-only pass (:mod:`cudaenv.grading.baseline_pass`)
build the same way, and whether the compiler cache is safe to use is decided here once (the
rules are :mod:`cudaenv.grading.ccache`'s).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from cudaenv.errors import SandboxError
from cudaenv.grading import ccache
from cudaenv.grading.build_cache import BuildCache, build_key, copy_outputs
from cudaenv.grading.stages import MIN_BUILD_TIMEOUT_S, StageInfrastructureFault, run_stage
from cudaenv.grading.toolchain_gaps import gap, problem_texts
from cudaenv.grading.verdict import StageResult
from cudaenv.libraries import build_allowance_s
from cudaenv.problems.model import Problem, SourceFile
from cudaenv.sandbox import Sandbox, make_sandbox
from cudaenv.toolkit import check_build_headers, missing_libraries

SandboxFactory = Callable[[], Sandbox]


def sandbox_factory(
    sandbox: str | SandboxFactory, options: Mapping[str, Any] | None
) -> SandboxFactory:
    """Grading sandboxes from a backend name and its options, or the caller's own factory."""
    if callable(sandbox):
        return sandbox
    opts = dict(options or {})
    return lambda: make_sandbox(sandbox, **opts)


def grading_env(problem: Problem, have_gpu: bool, sandbox: Sandbox) -> dict[str, str]:
    """Every grading command's variables: the sandbox's toolchain (host toolkit paths, or
    nothing for an image that brings its own), then the grader's own."""
    env = sandbox.toolchain_env()
    if problem.problem_type == "cuda_python" and not have_gpu:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def prepare(
    sandbox: Sandbox,
    problem: Problem,
    files: list[SourceFile],
    env: Mapping[str, str],
    timeout: float,
    cache: BuildCache | None,
    *,
    compiler_cache: bool = True,
) -> StageResult:
    """Write the workspace and build it (or restore the identical build from the cache)."""
    for f in files:
        sandbox.write_file(f.path, f.content)
    if not problem.build_command:
        return StageResult(status="skipped", reason="no build command")
    if sandbox.toolchain_id == "host":  # the host's toolkit and wheels: headers must match
        check_build_headers(problem.build_command)
        if why := missing_libraries(problem.build_command, problem_texts(problem)):
            raise StageInfrastructureFault(why)  # no solution could build here
    key = build_key(files, problem.build_command, problem.problem_type, sandbox.toolchain_id)
    if cache is not None and (hit := _restored(cache, key, sandbox)) is not None:
        return hit
    with cache.lock(key) if cache is not None else contextlib.nullcontext():
        if cache is not None and (hit := _restored(cache, key, sandbox)) is not None:
            return hit  # built by another grader while this one waited for the lock
        stage = _build(sandbox, problem, files, env, timeout, compiler_cache)
        if rewritten := restore_protected(sandbox, problem, files):
            # a solution-controlled build step (a Harbor task's solve.sh) rewrote hidden tests:
            # they are written back from the problem, and the build is not kept
            why = f"{BUILD_TAMPERED} {rewritten[:5]}"
            return stage.model_copy(update={"status": "failed", "reason": why})
        if stage.status == "failed" and (why := gap(sandbox, env, stage.output_tail, problem)):
            raise StageInfrastructureFault(why)  # a library the problem needs is not here
        if cache is not None:
            cache.put(key, stage, sandbox, {f.path for f in files})
    return stage


#: the start of a build's failure reason when it rewrote protected files (a suspected hack)
BUILD_TAMPERED = "tampering: the build rewrote protected files"


def restore_protected(sandbox: Sandbox, problem: Problem, files: list[SourceFile]) -> list[str]:
    """The protected files (hidden tests, harness, visible files a solution may not replace)
    whose workspace copy is no longer the problem's, each written back from the problem: what
    a later snapshot of the workspace takes as pristine is the problem's text, never a build's."""
    protected = problem.protected_paths
    changed = []
    for f in files:
        if f.path not in protected:
            continue
        try:
            same = sandbox.read_file(f.path) == f.content.encode("utf-8")
        except (OSError, SandboxError):
            same = False
        if not same:
            changed.append(f.path)
            sandbox.write_file(f.path, f.content)
    return changed


def _restored(cache: BuildCache, key: str, sandbox: Sandbox) -> StageResult | None:
    """The cached build of ``key`` written into ``sandbox``; None on a miss."""
    hit = cache.get(key)
    if hit is None:
        return None
    cache.restore(key, hit, sandbox)
    return hit.result.model_copy(update={"cached": True})


def _build(
    sandbox: Sandbox,
    problem: Problem,
    files: list[SourceFile],
    env: Mapping[str, str],
    timeout: float,
    compiler_cache: bool,
) -> StageResult:
    """Run the build command in ``sandbox``, or through the compiler cache where it applies;
    heavy libraries (the cudnn-frontend's templates) get their build allowance on top."""
    extra = build_allowance_s(problem.build_command, [f.content for f in files])
    timeout = max(timeout, MIN_BUILD_TIMEOUT_S) + extra
    if compiler_cache and (stage := _cached_build(sandbox, problem, files, env, timeout)):
        return stage
    return run_stage(sandbox, problem.build_command or "", timeout=timeout, env=env)[0]


def _cached_build(
    sandbox: Sandbox,
    problem: Problem,
    files: list[SourceFile],
    env: Mapping[str, str],
    timeout: float,
) -> StageResult | None:
    """The build run in a compile-only sibling of ``sandbox`` (the one place the cache is
    writable), its outputs moved over; None where the cache does not apply (not a plain
    compiler command, the cache off or missing, the problem's first build here, no sibling
    to be had): then the caller builds plainly."""
    plain = problem.build_command or ""
    if not ccache.compiler_only(plain):
        return None
    shared = [f.path for f in [*problem.test_files, *problem.context_files]]
    host = sandbox.toolchain_id == "host"
    cached = ccache.for_build(plain, dict(env), shared, host=host)
    if cached is None or not ccache.seen_before(problem.content_hash()):
        return None
    box = sandbox.compile_sibling(rw_binds=cached.rw_binds, ro_binds=cached.ro_binds)
    if box is None:  # e.g. no mount isolation: the cache could not be kept from the code
        return None
    try:
        for f in files:
            box.write_file(f.path, f.content)
        stage, _ = run_stage(box, cached.command, timeout=timeout, env=cached.env)
        if stage.status == "ok":
            copy_outputs(box, sandbox, {f.path for f in files})
        return stage
    finally:
        box.close()
