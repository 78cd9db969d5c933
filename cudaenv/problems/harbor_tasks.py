"""Load Harbor task directories (harbor 0.25 layout) as cudaenv Problems.

A task directory holds ``task.toml``, ``instruction.md``, ``environment/`` (the Docker build
context), ``tests/test.sh`` and ``solution/solve.sh``. Mapped onto a Problem:

- prompt: ``instruction.md`` (leading canary comment lines dropped, as Harbor does);
- context files: the plain files of ``environment/`` that Docker would copy (everything but
  the Dockerfile / compose file / ``.dockerignore``), at their paths inside ``environment/``;
- test files: ``tests/*`` under a ``tests/`` prefix (hidden, protected);
- reference solution: ``solution/*`` under a ``solution/`` prefix; the build stage runs
  ``solution/solve.sh`` when a solution holds one (what Harbor's oracle agent does);
- verifier: ``tests/test.sh``, then the reward file it wrote (``reward_file``).

Harbor runs in a container where the tests sit in ``/tests``, the reference in
``/solution``, the rewards go to ``/logs/verifier`` and the agent works in the task's
``workdir``. A cudaenv grading workspace is a plain directory, so the ``.sh`` files of
``tests/`` and ``solution/`` are rewritten on loading: those absolute paths become
``${CUDAENV_WORKSPACE}/...``. The rewrite leaves single-quoted heredoc bodies alone (they
are file contents); paths inside single quotes, or in non-shell test files, are not mapped.
"""

from __future__ import annotations

import re
import tomllib
from datetime import date, datetime
from pathlib import Path
from typing import Any

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.directory import _read_tree
from cudaenv.problems.discovery import find_marked_dirs
from cudaenv.problems.harbor_repo_tasks import is_repo_task_dir, load_repo_task_dir
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.problems.validation import problem_from_dict

TASK_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
IGNORE_FILE = ".harborignore"
WORKSPACE_VAR = "CUDAENV_WORKSPACE"
LOGS_DIR = ".harbor/logs"
REWARD_FILE = f"{LOGS_DIR}/verifier/reward.json"
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
# files of environment/ that configure the build rather than being copied into the image
BUILD_FILES = frozenset(
    {"Dockerfile", ".dockerignore", "docker-compose.yaml", "docker-compose.yml"}
)
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
_HEREDOC = re.compile(r"<<-?\s*(['\"])(\w+)\1")


def container_paths(workdir: str | None) -> dict[str, str]:
    """Harbor's absolute container paths and what they become in a grading workspace."""
    ws = "${" + WORKSPACE_VAR + "}"
    mapping = {"/logs": f"{ws}/{LOGS_DIR}", "/tests": f"{ws}/tests", "/solution": f"{ws}/solution"}
    if workdir and workdir.rstrip("/") and workdir.rstrip("/") not in mapping:
        mapping[workdir.rstrip("/")] = ws
    return mapping


def rewrite_script(text: str, mapping: dict[str, str]) -> str:
    """Replace whole absolute path prefixes (``/app``, not ``/apple`` or ``/x/app``), skipping
    the bodies of quoted heredocs, whose text is written out verbatim."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.$/}])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w.-])")
    out: list[str] = []
    delim: str | None = None
    for line in text.splitlines(keepends=True):
        if delim is not None:
            out.append(line)
            if line.strip() == delim:
                delim = None
            continue
        out.append(pattern.sub(lambda m: mapping[m.group(1)], line))
        match = _HEREDOC.search(line)
        if match:
            delim = match.group(2)
    return "".join(out)


def _strip_canary(text: str) -> str:
    lines = text.split("\n")
    i = 0
    while i < len(lines) and _CANARY.match(lines[i].strip()):
        i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    return "\n".join(lines[i:])


def _env_prefix(env: Any) -> str:
    """``K=V`` assignments for plain values; ``${HOST_VAR}`` templates resolve on Harbor's host,
    which a cudaenv sandbox does not have, so they are left out."""
    if not isinstance(env, dict):
        return ""
    import shlex

    parts = [
        f"{k}={shlex.quote(str(v))}"
        for k, v in sorted(env.items())
        if re.fullmatch(r"[A-Za-z_]\w*", str(k)) and "${" not in str(v)
    ]
    return " ".join(parts) + " " if parts else ""


def _metadata(
    meta: dict[str, Any], task: dict[str, Any], env: dict[str, Any], gpus: int
) -> dict[str, Any]:
    tags = [t for t in task.get("keywords") or [] if isinstance(t, str)]
    tags += [t for t in meta.get("tags") or [] if isinstance(t, str) and t not in tags]
    out: dict[str, Any] = {"tags": tags, "requires_gpu": gpus > 0}
    if isinstance(meta.get("difficulty"), str):
        out["difficulty"] = meta["difficulty"]
    out["harbor"] = {
        k: v
        for k, v in {
            "name": task.get("name"),
            "gpu_types": env.get("gpu_types"),
            "docker_image": env.get("docker_image"),
            "workdir": env.get("workdir"),
        }.items()
        if v is not None
    }
    return out


def _date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def load_task_dir(directory: str | Path) -> Problem:
    """Read one Harbor task directory into a Problem whose verifier is its ``tests/test.sh``
    (a repository task in SWE-kokkos-bench's layout: :mod:`cudaenv.problems.harbor_repo_tasks`)."""
    d = Path(directory)
    if is_repo_task_dir(d):
        return load_repo_task_dir(d)
    toml_path = d / TASK_FILE
    if not toml_path.is_file():
        raise SourceNotFoundError(f"no {TASK_FILE} in {d}")
    try:
        cfg = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"malformed TOML: {exc}", source=str(toml_path)) from exc
    task = cfg.get("task") if isinstance(cfg.get("task"), dict) else {}
    meta = cfg.get("metadata") if isinstance(cfg.get("metadata"), dict) else {}
    env = cfg.get("environment") if isinstance(cfg.get("environment"), dict) else {}
    verifier = cfg.get("verifier") if isinstance(cfg.get("verifier"), dict) else {}
    solution_cfg = cfg.get("solution") if isinstance(cfg.get("solution"), dict) else {}
    task_id = task.get("name") if isinstance(task.get("name"), str) else d.name
    if cfg.get("steps"):
        raise SpecError(
            "multi-step Harbor tasks are not supported",
            source=str(toml_path),
            task_id=task_id,
            field="steps",
        )
    if str(env.get("os", "linux")).lower() != "linux":
        raise SpecError(
            "only linux Harbor tasks are supported",
            source=str(toml_path),
            task_id=task_id,
            field="environment.os",
        )
    instruction = d / INSTRUCTION_FILE
    if not instruction.is_file():
        raise SpecError(f"missing {INSTRUCTION_FILE}", source=str(d), task_id=task_id)
    if not (d / "tests" / "test.sh").is_file():
        raise SpecError("missing tests/test.sh", source=str(d), task_id=task_id)

    mapping = container_paths(env.get("workdir") if isinstance(env.get("workdir"), str) else None)

    def scripts(files: list[SourceFile]) -> list[SourceFile]:
        return [
            SourceFile(path=f.path, content=rewrite_script(f.content, mapping))
            if f.path.endswith(".sh")
            else f
            for f in files
            if not f.path.endswith(IGNORE_FILE)  # Harbor's own upload filter, not task content
        ]

    context = [f for f in _read_tree(d / "environment") if f.path not in BUILD_FILES]
    tests = scripts(_read_tree(d / "tests", prefix="tests/"))
    solution_files = scripts(_read_tree(d / "solution", prefix="solution/"))
    try:
        gpus = int(env.get("gpus") or 0)
    except (TypeError, ValueError):
        raise SpecError(
            "gpus must be a number",
            source=str(toml_path),
            task_id=task_id,
            field="environment.gpus",
        ) from None
    timeout = verifier.get("timeout_sec")
    ws = f'{WORKSPACE_VAR}="$PWD"'
    group = (
        meta.get("group") if isinstance(meta.get("group"), str) and meta.get("group") else "harbor"
    )
    ptype = (
        meta.get("problem_type")
        if meta.get("problem_type") in ("cuda_cpp", "cuda_python")
        else "cuda_cpp"
    )
    data: dict[str, Any] = {
        "task_id": task_id,
        "type": ptype,
        "group": group,
        "prompt": _strip_canary(instruction.read_text(encoding="utf-8")),
        "date": _date(meta.get("date")),
        "metadata": _metadata(meta, task, env, gpus),
        "context_files": context,
        "test_files": tests,
        # what Harbor's oracle does in the agent phase: run solve.sh in the workdir
        "build_command": (
            "if [ -f solution/solve.sh ]; then chmod +x solution/solve.sh && "
            f"{ws} {_env_prefix(solution_cfg.get('env'))}solution/solve.sh; fi"
        ),
        "test_command": (
            f"mkdir -p {LOGS_DIR}/verifier {LOGS_DIR}/agent && chmod +x tests/test.sh && "
            f"{ws} {_env_prefix(verifier.get('env'))}tests/test.sh"
        ),
        "timeout_seconds": float(timeout)
        if isinstance(timeout, int | float) and timeout > 0
        else DEFAULT_VERIFIER_TIMEOUT_S,
        "compute_capability": meta.get("compute_capability")
        if isinstance(meta.get("compute_capability"), str)
        else None,
        "min_cuda_toolkit": meta.get("min_cuda_toolkit")
        if isinstance(meta.get("min_cuda_toolkit"), str)
        else None,
        "base_image": env.get("docker_image") if isinstance(env.get("docker_image"), str) else None,
        "solution": Solution(task_id=task_id, files=solution_files) if solution_files else None,
        "reward_file": REWARD_FILE,
        # the agent edits what the image holds; the verifier is in tests/, which stays protected
        "allow_context_override": True,
    }
    return problem_from_dict(data, source=str(toml_path))


def find_task_dirs(root: str | Path) -> list[Path]:
    """Every Harbor task directory under ``root`` (inclusive), sorted; a ``task.toml`` nested
    inside another task (in its tests, say) is part of that task, not a task of its own."""
    return find_marked_dirs(root, TASK_FILE, nested=False)


def load_harbor_tree(root: str | Path) -> list[Problem]:
    """Load every Harbor task found under ``root``."""
    return [load_task_dir(d) for d in find_task_dirs(root)]


__all__ = [
    "REWARD_FILE",
    "container_paths",
    "find_task_dirs",
    "load_harbor_tree",
    "load_task_dir",
    "rewrite_script",
]
