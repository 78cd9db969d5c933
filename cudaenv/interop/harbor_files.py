"""The files every Harbor task directory cudaenv writes is made of: its name, ``task.toml``,
scripts that lay files down, the cudaenv problem directory the verifier reads, and
``tests/test.sh``. Shared by the export of ordinary problems (:mod:`harbor_export`) and of
repository tasks (:mod:`harbor_repo`)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from cudaenv.errors import SpecError
from cudaenv.problems.directory import SPEC_NAME
from cudaenv.problems.model import Problem, Solution, SourceFile

WORKDIR = "/workspace"


def task_dir_name(task_id: str) -> str:
    """A Harbor-safe name (``[A-Za-z0-9._-]``, no leading dot): ``CUDA/18`` -> ``CUDA-18``."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", task_id).strip("-.")
    if not name:
        raise SpecError("task_id has no usable characters for a Harbor name", task_id=task_id)
    return name


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


def write_text(path: Path, text: str, *, executable: bool = False) -> None:
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
    write_text(dest / SPEC_NAME, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    for f in problem.context_files:
        write_text(dest / "context" / f.path, f.content)
    for f in (*problem.test_files, *problem.check_files):
        write_text(
            dest / f.path, f.content
        )  # test and check files carry their test/, check/ prefix
    sols: list[tuple[str, Solution | None]] = [("baseline", problem.baseline_solution)]
    if with_solution:
        sols.append(("solution", problem.solution))
    for folder, sol in sols:
        if sol is None:
            continue
        if sol.type == "patch":
            write_text(dest / folder / "solution.patch", sol.patch or "")
        for f in sol.files:
            write_text(dest / folder / f.path, f.content)
    return dest


def test_script(problem: Problem, benchmark: bool) -> str:
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


__all__ = [
    "WORKDIR",
    "files_script",
    "task_dir_name",
    "test_script",
    "to_toml",
    "write_problem_dir",
    "write_text",
]
