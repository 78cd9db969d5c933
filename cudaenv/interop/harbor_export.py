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

import json
import re
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.grading.static_checks import describe_forbidden
from cudaenv.problems.directory import SPEC_NAME
from cudaenv.problems.model import Problem, Solution, SourceFile

DEFAULT_IMAGE = "cudaenv-eval:latest"
WORKDIR = "/workspace"
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


def task_dir_name(task_id: str) -> str:
    """A Harbor-safe name (``[A-Za-z0-9._-]``, no leading dot): ``CUDA/18`` -> ``CUDA-18``."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", task_id).strip("-.")
    if not name:
        raise SpecError("task_id has no usable characters for a Harbor name", task_id=task_id)
    return name


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


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value).replace("\x7f", "\\u007f")  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def to_toml(top: dict[str, Any], sections: dict[str, dict[str, Any]]) -> str:
    """A small TOML writer for flat tables of scalars and lists (all task.toml needs)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items() if v is not None]
    for name, table in sections.items():
        lines += ["", f"[{name}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def files_script(files: Iterable[SourceFile], *, header: str, workdir: str = WORKDIR) -> str:
    """A bash script that writes ``files`` byte for byte into ``workdir``."""
    out = [
        "#!/usr/bin/env bash",
        *(f"# {line}" for line in header.splitlines()),
        "set -euo pipefail",
        f'cd "${{CUDAENV_WORKDIR:-{workdir}}}"',
    ]
    for f in files:
        path = shlex.quote(f.path)
        if "/" in f.path:
            out.append(f"mkdir -p -- {shlex.quote(f.path.rsplit('/', 1)[0])}")
        if f.content.endswith("\n"):
            n = 0
            while f"CUDAENV_EOF_{n}" in f.content:
                n += 1
            out += [f"cat > {path} <<'CUDAENV_EOF_{n}'", f.content + f"CUDAENV_EOF_{n}"]
        else:
            out.append(f"printf '%s' {shlex.quote(f.content)} > {path}")
    return "\n".join(out) + "\n"


def _write(path: Path, text: str, *, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)


def write_problem_dir(problem: Problem, dest: Path, *, with_solution: bool = False) -> Path:
    """Write ``problem`` as an authoring directory that ``load_problem_dir`` reads back equal."""
    spec = problem.to_record()
    for field in ("context_files", "test_files", "check_files", "baseline_solution"):
        spec.pop(field, None)
    spec = {"task_id": spec.pop("task_id"), "problem_type": spec.pop("type"), **spec}
    _write(dest / SPEC_NAME, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    for f in problem.context_files:
        _write(dest / "context" / f.path, f.content)
    for f in (*problem.test_files, *problem.check_files):
        _write(dest / f.path, f.content)  # test and check files carry their test/, check/ prefix
    sols: list[tuple[str, Solution | None]] = [("baseline", problem.baseline_solution)]
    if with_solution:
        sols.append(("solution", problem.solution))
    for folder, sol in sols:
        if sol is None:
            continue
        if sol.type == "patch":
            _write(dest / folder / "solution.patch", sol.patch or "")
        for f in sol.files:
            _write(dest / folder / f.path, f.content)
    return dest


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


def _test_script(problem: Problem, benchmark: bool) -> str:
    bench = " --benchmark" if benchmark else " --no-benchmark"
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            f"# Harbor verifier of cudaenv task {problem.task_id}. Harbor uploads tests/ only after the",
            "# agent phase; tests/problem is the cudaenv problem with its hidden tests. cudaenv grades the",
            "# workspace's files in a fresh grading workspace and writes reward.json there.",
            "set -u",
            'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
            'LOGS="${CUDAENV_VERIFIER_DIR:-/logs/verifier}"',
            'mkdir -p "$LOGS"',
            '"${CUDAENV_PYTHON:-python3}" -m cudaenv.interop.harbor_verify --problem "$HERE/problem" \\',
            f'  --workdir "${{CUDAENV_WORKDIR:-{WORKDIR}}}" --logs-dir "$LOGS"{bench}',
            "",
        ]
    )


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
    """Write one Harbor task directory under ``out_dir``; returns its path."""
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
    _write(
        task / "task.toml",
        task_config(
            problem, image=image, agent_timeout_s=agent_timeout_s, cpus=cpus, memory_mb=memory_mb
        ),
    )
    _write(task / "instruction.md", _instruction(problem))
    env = task / "environment"
    _write(env / "Dockerfile", _dockerfile(problem, image))
    if problem.context_files:
        _write(env / ".dockerignore", "Dockerfile\n.dockerignore\n")
    for f in problem.context_files:
        _write(env / f.path, f.content)
    benchmark = problem.has_benchmark and problem.baseline_solution is not None
    _write(task / "tests" / "test.sh", _test_script(problem, benchmark), executable=True)
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
        _write(task / "solution" / "solve.sh", body, executable=True)
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
