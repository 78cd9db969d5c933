"""Export cudaenv problems as Harbor task directories (harbor 0.25 task format).

One problem becomes::

    <out>/<task>/task.toml            [task] [metadata] [verifier] [agent] [environment]
                 instruction.md       the prompt, the workspace's files, the build command
                 environment/         Dockerfile FROM the cudaenv eval image + the context files
                 tests/test.sh        runs cudaenv.interop.harbor_verify -> /logs/verifier/reward.json
                 tests/problem/       the cudaenv problem directory (hidden tests, baseline)
                 solution/solve.sh    the oracle: writes the reference files into the workdir

Only the context files enter the image; the hidden tests, the checker's files and the baseline
travel in ``tests/`` (Harbor uploads it after the agent phase) and the reference in ``solution/``.
The verifier runs in Harbor's separate verifier environment (``environment_mode =
"separate"``, harbor >= 0.25): a fresh container built from ``environment/``, into which Harbor
copies only the declared artifact, the agent's workspace. Nothing the agent left running sees
the verifier arrive, and the toolchain, Python and cudaenv it runs are the image's, not ones
the agent could have replaced; the grade then runs in cudaenv's own fresh grading workspace, so
what the agent did to its files beyond the solution (edited headers, planted binaries or reward
files) does not count either.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.grading.static_checks import describe_forbidden
from cudaenv.interop.harbor_files import (
    WORKDIR,
    files_script,
    task_dir_name,
    test_script,
    to_toml,
    write_problem_dir,
    write_text,
)
from cudaenv.problems.model import Problem

DEFAULT_IMAGE = "cudaenv-eval:latest"
DEFAULT_AGENT_TIMEOUT_S = 1800.0
DEFAULT_CPUS = 4
DEFAULT_MEMORY_MB = 16384
# GPU types Harbor schedulers know, with their compute capability; the datacenter class is
# the one ``requires_datacenter_gpu`` asks for (HBM, full FP64, NVLink)
GPU_CAPABILITY: dict[str, tuple[int, int]] = {
    "T4": (7, 5),
    "A10G": (8, 6),
    "L4": (8, 9),
    "L40S": (8, 9),
    "A100": (8, 0),
    "H100": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
}
DATACENTER_GPUS = frozenset({"A100", "H100", "H200", "B200"})
_BUILD_FILES = frozenset(
    {"Dockerfile", ".dockerignore", "docker-compose.yaml", "docker-compose.yml"}
)


def gpu_types(problem: Problem) -> list[str] | None:
    """GPU types that meet the problem's compute capability (None: any GPU will do)."""
    cc = problem.compute_capability
    if not cc and not problem.requires_datacenter_gpu:
        return None
    try:
        need = tuple(int(x) for x in (cc or "0.0").split(".")[:2])
    except ValueError:
        return None
    types = [
        name
        for name, have in GPU_CAPABILITY.items()
        if have >= need and (not problem.requires_datacenter_gpu or name in DATACENTER_GPUS)
    ]
    if not types or set(types) == set(GPU_CAPABILITY):
        return None
    return sorted(types)


def _instruction(problem: Problem) -> str:
    ref = problem.solution or problem.baseline_solution
    lines = [
        problem.prompt.rstrip(),
        "",
        "## Your workspace",
        "",
        f"You work in `{WORKDIR}`. It holds:",
    ]
    lines += [f"- `{f.path}`" for f in problem.context_files] or ["- (no files yet)"]
    lines.append("")
    if ref is not None and ref.files:
        lines.append("Write your solution in: " + ", ".join(f"`{f.path}`" for f in ref.files) + ".")
    if (rule := describe_forbidden(problem.forbidden_references)) is not None:
        lines.append(rule)
    if problem.build_command:
        lines.append(
            f"The build command (run in `{WORKDIR}`, with the hidden tests present) is: `{problem.build_command}`"
        )
    restored = (
        ""
        if problem.allow_context_override
        else " The files listed above are restored to their original contents."
    )
    lines.append(
        "When you finish, hidden tests build and run your files in a fresh copy of this workspace."
        + restored
    )
    return "\n".join(lines) + "\n"


def _dockerfile(problem: Problem, image: str) -> str:
    lines = [
        f"# cudaenv task {problem.task_id}: the cudaenv evaluation image (it holds cudaenv, which the",
        "# verifier runs) plus the task's visible files. Build the base with docker/Dockerfile.eval.",
        f"ARG CUDAENV_IMAGE={image}",
        "FROM ${CUDAENV_IMAGE}",
        f"WORKDIR {WORKDIR}",
    ]
    if problem.context_files:
        lines.append(f"COPY --chown=1000:1000 . {WORKDIR}/")
    lines += [
        "# Harbor keeps the container up with `sh -c 'sleep infinity'` as PID 1, which ignores",
        "# SIGTERM: every stop would wait out Docker's 10 s grace period. Nothing in it needs one.",
        "STOPSIGNAL SIGKILL",
    ]
    return "\n".join(lines) + "\n"


def task_config(
    problem: Problem, *, image: str, agent_timeout_s: float, cpus: int, memory_mb: int
) -> str:
    """The task.toml text; GPU resources come from the problem."""
    m = problem.metadata
    needs_gpu = bool(getattr(m, "requires_gpu", True))
    paragraph = " ".join(problem.prompt.strip().split("\n\n")[0].split())
    first = paragraph.split(". ")[0].rstrip(".") + "." if paragraph else problem.task_id
    timeout = problem.timeout_seconds or 60.0
    meta: dict[str, Any] = {
        "task_id": problem.task_id,
        "group": problem.group,
        "problem_type": problem.problem_type,
        "difficulty": m.difficulty,
        "tags": list(m.tags),
        "date": str(problem.date) if problem.date else None,
        "compute_capability": problem.compute_capability,
        "min_cuda_toolkit": problem.min_cuda_toolkit,
        "requires_datacenter_gpu": problem.requires_datacenter_gpu,
        "has_benchmark": problem.has_benchmark,
        "source": "cudaenv",
    }
    return to_toml(
        # the agent's workspace is the one artifact: the separate verifier sees it, nothing else
        {"schema_version": "1.4", "artifacts": [WORKDIR]},
        {
            "task": {
                "name": f"cudaenv/{task_dir_name(problem.task_id)}",
                "description": first[:200],
                "keywords": ["cuda", problem.group, *m.tags],
            },
            "metadata": meta,
            # building (<= 180 s), testing and benchmarking the baseline too. "separate": a fresh
            # container from environment/ (pristine toolchain, no process the agent left)
            # grades, with only the workspace copied over
            "verifier": {"timeout_sec": max(600.0, 20 * timeout), "environment_mode": "separate"},
            "agent": {"timeout_sec": agent_timeout_s},
            "environment": {
                "cpus": cpus,
                "memory_mb": memory_mb,
                "gpus": 1 if needs_gpu else 0,
                "gpu_types": gpu_types(problem) if needs_gpu else None,
                "workdir": WORKDIR,
                "network_mode": "no-network",
            },
        },
    )


def export_problem(
    problem: Problem,
    out_dir: str | Path,
    *,
    image: str = DEFAULT_IMAGE,
    agent_timeout_s: float = DEFAULT_AGENT_TIMEOUT_S,
    cpus: int = DEFAULT_CPUS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    overwrite: bool = False,
) -> Path:
    """Write one Harbor task directory under ``out_dir``; returns its path (a repository
    task in SWE-kokkos-bench's layout: :mod:`cudaenv.interop.harbor_repo`)."""
    if problem.repository is not None:
        from cudaenv.interop.harbor_repo import REPO_IMAGE, export_repo_task

        return export_repo_task(
            problem,
            out_dir,
            image=REPO_IMAGE if image == DEFAULT_IMAGE else image,
            agent_timeout_s=agent_timeout_s,
            cpus=cpus,
            memory_mb=memory_mb,
            overwrite=overwrite,
        )
    clash = [f.path for f in problem.context_files if f.path in _BUILD_FILES]
    if clash:
        raise SpecError(
            f"context file(s) {clash} would clash with the Docker build files",
            task_id=problem.task_id,
        )
    task = Path(out_dir) / task_dir_name(problem.task_id)
    if task.exists():
        if not overwrite:
            raise CudaEnvError(f"{task} exists; pass overwrite=True (--force) to replace it")
        shutil.rmtree(task)
    write_text(
        task / "task.toml",
        task_config(
            problem, image=image, agent_timeout_s=agent_timeout_s, cpus=cpus, memory_mb=memory_mb
        ),
    )
    write_text(task / "instruction.md", _instruction(problem))
    env = task / "environment"
    write_text(env / "Dockerfile", _dockerfile(problem, image))
    if problem.context_files:
        write_text(env / ".dockerignore", "Dockerfile\n.dockerignore\n")
    for f in problem.context_files:
        write_text(env / f.path, f.content)
    benchmark = problem.has_benchmark and problem.baseline_solution is not None
    write_text(task / "tests" / "test.sh", test_script(problem, benchmark), executable=True)
    write_problem_dir(problem, task / "tests" / "problem")
    ref = problem.solution
    if ref is not None:
        header = f"Oracle of cudaenv task {problem.task_id}: writes the reference solution into the workdir."
        if ref.type == "patch":
            patch = (ref.patch or "").rstrip("\n")
            body = (
                files_script([], header=header)
                + f"patch -p1 <<'CUDAENV_PATCH'\n{patch}\nCUDAENV_PATCH\n"
            )
        else:
            body = files_script(ref.files, header=header)
        write_text(task / "solution" / "solve.sh", body, executable=True)
    return task


def export_suite(problems: Iterable[Problem], out_dir: str | Path, **options: Any) -> list[Path]:
    """Export every problem; returns the task directories in order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [export_problem(p, out, **options) for p in problems]


__all__ = [
    "DEFAULT_IMAGE",
    "export_problem",
    "export_suite",
    "files_script",
    "gpu_types",
    "task_config",
    "write_problem_dir",
]
