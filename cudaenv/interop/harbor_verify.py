"""The verifier an exported Harbor task runs: grade the agent's workspace with cudaenv.

``python -m cudaenv.interop.harbor_verify --problem DIR --workdir DIR [--logs-dir DIR]``

It collects the workspace's text files, grades them against the problem directory (which
Harbor uploaded with the hidden tests, after the agent phase) in cudaenv's own fresh grading
workspace, and writes ``reward.json`` (``reward``, ``compiled``, ``passed``, and ``speedup``
when one was measured; all numbers, as Harbor requires) and ``verdict.json`` to the logs
directory (``--logs-dir``, else ``$CUDAENV_VERIFIER_DIR``, else ``/logs/verifier``).

When the verdict could not be decided here (no GPU for a GPU problem, an infrastructure
fault) no reward file is written, so Harbor reports a verifier error instead of scoring
the agent 0 for a fault that is not its own. Exit status: 0 passed, 1 failed, 2 undecided.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cudaenv.errors import CudaEnvError
from cudaenv.grading.grader import grade
from cudaenv.grading.verdict import Verdict
from cudaenv.grading.workspace import MAX_SOLUTION_FILE_BYTES, MAX_SOLUTION_FILES
from cudaenv.problems.directory import load_problem_dir
from cudaenv.problems.model import Problem, SourceFile
from cudaenv.problems.paths import check_relative_path

LOGS_ENV = "CUDAENV_VERIFIER_DIR"
DEFAULT_LOGS_DIR = "/logs/verifier"
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".cache", ".venv", ".harbor"})
SOURCE_FIRST = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".py")


def workspace_files(
    workdir: Path, problem: Problem, *, skip: Path | None = None
) -> list[SourceFile]:
    """The workspace's text files minus unchanged context files, sources first (the grader
    keeps at most its file limit, so sources must not lose their place to stray logs).
    ``skip``: a directory left out (the problem itself, should it sit inside the workspace)."""
    pristine = {f.path: f.content for f in problem.context_files}
    out: list[SourceFile] = []
    if not workdir.is_dir():
        return out
    skip = skip.resolve() if skip else None
    for root, dirs, files in os.walk(workdir):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not Path(root, d).is_symlink()
            and Path(root, d).resolve() != skip
        )
        for name in sorted(files):
            path = Path(root, name)
            if (
                path.is_symlink()
                or not path.is_file()
                or path.stat().st_size > MAX_SOLUTION_FILE_BYTES
            ):
                continue
            try:
                rel = check_relative_path(path.relative_to(workdir).as_posix())
                data = path.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError, CudaEnvError):
                continue
            if b"\0" in data or pristine.get(rel) == text:
                continue
            out.append(SourceFile(path=rel, content=text))
    out.sort(key=lambda f: (not f.path.endswith(SOURCE_FIRST), f.path))
    return out[:MAX_SOLUTION_FILES]


def rewards(verdict: Verdict) -> dict[str, float] | None:
    """Harbor's flat {name: number} rewards; None when the verdict is undecided."""
    if verdict.passed is None:
        return None
    out = {
        "reward": 1.0 if verdict.passed else 0.0,
        "compiled": 1.0 if verdict.compiled else 0.0,
        "passed": 1.0 if verdict.passed else 0.0,
    }
    if verdict.speedup is not None:
        out["speedup"] = round(float(verdict.speedup), 6)
    return out


def sandbox_env() -> dict[str, str]:
    """Variables for the grading sandbox. LocalSandbox puts the directory of the *resolved*
    interpreter first on ``PATH``; in a virtualenv (the eval images keep cudaenv and numba
    in ``/opt/cudaenv-venv``) that is the base Python's ``/usr/bin``, which has neither
    ``python`` nor the venv's packages, so a build command like ``python -m py_compile``
    fails. Put the venv's own ``bin`` first instead."""
    if sys.prefix == sys.base_prefix:
        return {}
    from cudaenv.toolkit import cuda_home

    path = [str(Path(sys.prefix) / "bin")]
    cuda = cuda_home()
    if cuda is not None:
        path.append(str(cuda / "bin"))
    path += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    return {"PATH": ":".join(path), "VIRTUAL_ENV": sys.prefix}


def container_isolation() -> str:
    """The local sandbox's isolation for grading inside the verifier's container.

    The container is the boundary there (Harbor's separate verifier environment: a fresh one
    that only the agent's workspace was copied into, see ``harbor_export``), and containers
    rarely allow user namespaces: bubblewrap where it works, else rlimits, chosen here and
    said on stderr (the local sandbox itself never falls back).
    """
    from cudaenv.errors import IsolationUnavailableError
    from cudaenv.sandbox import check_isolation

    try:
        check_isolation("bubblewrap")
    except IsolationUnavailableError:
        sys.stderr.write(
            "harbor_verify: no bubblewrap works in this container; grading with "
            "isolation='rlimits' (the task container is the isolation boundary)\n"
        )
        return "rlimits"
    return "bubblewrap"


def verify(
    problem_dir: Path,
    workdir: Path,
    logs_dir: Path,
    *,
    benchmark: bool | None = None,
    sandbox: str = "local",
) -> Verdict:
    """Grade ``workdir`` against ``problem_dir``; write reward.json and verdict.json."""
    problem = load_problem_dir(problem_dir)
    if benchmark is None:
        benchmark = problem.has_benchmark and problem.baseline_solution is not None
    if problem.repository is not None:  # the checkout's diff against the image's pristine base
        from cudaenv.problems.repo_diff import patch_solution, tree_patch

        files: object = patch_solution(problem.task_id, tree_patch(problem.repository, workdir))
    else:
        files = workspace_files(workdir, problem, skip=problem_dir)
    options: dict[str, object] | None = None
    if sandbox == "local":
        options = {"isolation": container_isolation()}
        if env := sandbox_env():
            options["env"] = env
    verdict = grade(
        problem, files, benchmark=benchmark, sandbox=sandbox, sandbox_options=options, rounds=3
    )
    logs_dir.mkdir(parents=True, exist_ok=True)
    (logs_dir / "verdict.json").write_text(verdict.model_dump_json(indent=2))
    values = rewards(verdict)
    if values is not None:
        tmp = logs_dir / ".reward.json.tmp"
        tmp.write_text(json.dumps(values))
        tmp.replace(logs_dir / "reward.json")
    return verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cudaenv.interop.harbor_verify", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--problem", required=True, type=Path, help="the cudaenv problem directory (tests/problem)"
    )
    parser.add_argument("--workdir", default="/workspace", type=Path, help="the agent's workspace")
    parser.add_argument(
        "--logs-dir", type=Path, default=None, help=f"default ${LOGS_ENV} or {DEFAULT_LOGS_DIR}"
    )
    parser.add_argument(
        "--benchmark",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time the solution against the baseline (default: when the problem has both)",
    )
    parser.add_argument("--sandbox", default="local", help="grading sandbox backend")
    args = parser.parse_args(argv)
    logs = args.logs_dir or Path(os.environ.get(LOGS_ENV) or DEFAULT_LOGS_DIR)
    try:
        verdict = verify(
            args.problem, args.workdir, logs, benchmark=args.benchmark, sandbox=args.sandbox
        )
    except (CudaEnvError, OSError) as exc:
        sys.stderr.write(f"harbor_verify: {exc}\n")
        return 2
    sys.stdout.write(
        f"{verdict.task_id}: passed={verdict.passed} compiled={verdict.compiled} "
        f"speedup={verdict.speedup} reason={verdict.reason}\n"
    )
    return {True: 0, False: 1, None: 2}[verdict.passed]


if __name__ == "__main__":
    sys.exit(main())
