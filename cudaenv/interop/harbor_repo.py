"""Export a repository task as a Harbor task directory in SWE-kokkos-bench's release layout.

One task becomes::

    <out>/<task>/task.toml             [task] [metadata] [verifier] [agent] [environment]
                 instruction.md        the issue and the workspace (no listing of its files)
                 metadata.json         the row: ids, commands, checks, where the test patch fails
                 environment/Dockerfile  FROM an image with cudaenv, cmake and a C++ compiler
                 environment/checkout.tar  the base checkout (history squashed): the repository,
                                       written once
                 tests/test.sh         runs cudaenv.interop.harbor_verify -> reward.json
                 tests/test.patch      the held-out test patch
                 tests/problem/        the cudaenv problem (its spec names the image's base copy)
                 solution/gold.patch   the production patch; solution/solve.sh applies it

The image unpacks the checkout twice inside (``/workspace``, the agent's, and
``/opt/cudaenv/repo``, the pristine base the verifier diffs against) and builds the task's
targets in ``/workspace/<build_dir>`` as the agent's user: the pre-warmed build tree. The
verifier runs in Harbor's separate verifier environment (a fresh container from the same
image, with the agent's ``/workspace`` copied in) and grades the workspace's diff against the
pristine base in cudaenv's own fresh grading sandbox; the image must hold cudaenv, cmake, a
C++ compiler, ninja or make, git and tar (``docker/Dockerfile.repo-cpu``).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from cudaenv.env.repo_workspace import task_text
from cudaenv.errors import CudaEnvError
from cudaenv.interop.harbor_files import (
    WORKDIR,
    task_dir_name,
    test_script,
    to_toml,
    write_problem_dir,
    write_text,
)
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import base_tree

REPO_IMAGE = "cudaenv-repo-cpu:latest"
BASE_COPY = "/opt/cudaenv/repo"
SOLVE = """#!/usr/bin/env bash
# Oracle of cudaenv repository task {task_id}: applies the production patch to the workspace.
set -euo pipefail
cd "${{CUDAENV_WORKDIR:-{workdir}}}"
git apply --whitespace=nowarn "$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)/gold.patch"
"""


def _dockerfile(problem: Problem, image: str) -> str:
    spec = problem.repository
    assert spec is not None
    steps = [c for c in (spec.configure_command, spec.build_command) if c]
    build = " && ".join(f"({c})" for c in steps) or "true"
    return "\n".join(
        [
            f"# cudaenv repository task {problem.task_id}: {spec.repo} at its base commit (history",
            "# squashed), a pristine copy for the verifier, and the pre-warmed build tree.",
            f"ARG CUDAENV_IMAGE={image}",
            "FROM ${CUDAENV_IMAGE}",
            "USER 0:0",
            "COPY checkout.tar /opt/cudaenv/checkout.tar",
            f"RUN mkdir -p {BASE_COPY} {WORKDIR} \\",
            f" && tar --no-same-owner -xf /opt/cudaenv/checkout.tar -C {BASE_COPY} \\",
            f" && tar --no-same-owner -xf /opt/cudaenv/checkout.tar -C {WORKDIR} \\",
            " && rm /opt/cudaenv/checkout.tar \\",
            f" && printf '/%s/\\n' {shlex.quote(spec.build_dir)} >> {WORKDIR}/.git/info/exclude \\",
            f" && chown -R 1000:1000 {WORKDIR} {BASE_COPY}",
            "USER 1000:1000",
            f"WORKDIR {WORKDIR}",
            f"RUN {build}",
            "# Harbor keeps the container up with `sleep infinity` as PID 1, which ignores SIGTERM",
            "STOPSIGNAL SIGKILL",
            "",
        ]
    )


def _config(problem: Problem, image: str, agent_timeout_s: float, cpus: int, memory_mb: int) -> str:
    spec = problem.repository
    assert spec is not None
    return to_toml(
        {"schema_version": "1.4", "artifacts": [WORKDIR]},
        {
            "task": {
                "name": f"cudaenv/{task_dir_name(problem.task_id)}",
                "description": " ".join(problem.prompt.split())[:200],
                "keywords": ["repository", spec.repo, *problem.metadata.tags],
            },
            "metadata": {
                "task_id": problem.task_id,
                "repo": spec.repo,
                "problem_type": "repository",
                "failure_stage": spec.failure_stage,
                "source": "cudaenv",
            },
            # a clean configure and build of the task's targets, then every check
            "verifier": {"timeout_sec": 2 * spec.timeout_s, "environment_mode": "separate"},
            "agent": {"timeout_sec": agent_timeout_s},
            "environment": {
                "cpus": cpus,
                "memory_mb": memory_mb,
                "storage_mb": 20480,
                "gpus": 0,
                "workdir": WORKDIR,
                "network_mode": "no-network",
            },
        },
    )


def metadata(problem: Problem, squashed: str) -> dict:
    """The row as SWE-kokkos-bench's ``metadata.json`` carries it: the repository's own base
    commit (the image holds it squashed: ``squashed_commit``)."""
    spec = problem.repository
    assert spec is not None
    return {
        "instance_id": problem.task_id,
        "repo": spec.repo,
        "base_commit": spec.base_commit,
        "squashed_commit": squashed,
        "problem_statement": problem.prompt,
        "configure_command": spec.configure_command,
        "build_command": spec.build_command,
        "build_dir": spec.build_dir,
        "build_targets": spec.build_targets,
        "f2p_checks": [c.model_dump() for c in spec.f2p],
        "p2p_checks": [c.model_dump() for c in spec.p2p],
        "FAIL_TO_PASS": spec.fail_to_pass,
        "PASS_TO_PASS": spec.pass_to_pass,
        "failure_stage": spec.failure_stage,
        "repo_policy": spec.policy.model_dump(),
        "timeout_seconds": spec.timeout_s,
    }


def export_repo_task(
    problem: Problem,
    out_dir: str | Path,
    *,
    image: str = REPO_IMAGE,
    agent_timeout_s: float = 3600.0,
    cpus: int = 2,
    memory_mb: int = 8192,
    overwrite: bool = False,
) -> Path:
    """Write one repository task as a Harbor task directory; returns its path."""
    spec = problem.repository
    if spec is None:
        raise CudaEnvError(f"{problem.task_id} is not a repository task")
    task = Path(out_dir) / task_dir_name(problem.task_id)
    if task.exists():
        if not overwrite:
            raise CudaEnvError(f"{task} exists; pass overwrite=True (--force) to replace it")
        shutil.rmtree(task)
    base = base_tree(spec)
    write_text(task / "task.toml", _config(problem, image, agent_timeout_s, cpus, memory_mb))
    text = task_text(problem, "solve").replace(
        "The workspace is", f"The workspace (`{WORKDIR}`) is"
    )
    write_text(task / "instruction.md", text + "\n")
    write_text(task / "metadata.json", json.dumps(metadata(problem, base.commit), indent=1) + "\n")
    write_text(task / "environment" / "Dockerfile", _dockerfile(problem, image))
    write_text(task / "environment" / ".dockerignore", "Dockerfile\n.dockerignore\n")
    shutil.copyfile(base.checkout_tar, task / "environment" / "checkout.tar")
    write_text(task / "tests" / "test.sh", test_script(problem, False), executable=True)
    write_text(task / "tests" / "test.patch", spec.test_patch)
    # the verifier's problem: the pristine base copy in the image, at its squashed commit
    inside = spec.model_copy(update={"source": BASE_COPY, "base_commit": base.commit})
    write_problem_dir(problem.model_copy(update={"repository": inside}), task / "tests" / "problem")
    if problem.solution is not None and problem.solution.patch:
        write_text(task / "solution" / "gold.patch", problem.solution.patch)
        body = SOLVE.format(task_id=problem.task_id, workdir=WORKDIR)
        write_text(task / "solution" / "solve.sh", body, executable=True)
    return task


__all__ = ["BASE_COPY", "REPO_IMAGE", "export_repo_task", "metadata"]
