"""Tasks with a build step the agent controls, for the red team (issue 27, family 3):

- a repository task: a small pytest project whose build (``make``) runs a script of the
  repository, with a SWE-bench-style row whose held-out test (``tests/test_add.py``) the test
  patch adds;
- a Harbor task (``redteam/count``): its build runs the submission's ``solution/solve.sh``,
  as Harbor's oracle agent does, with the hidden ``tests/test.sh`` already in place.

Why fixtures of their own: the exploits of family 3 attack what runs between laying the hidden
tests and running them; only these task kinds have such a step. Each is made once per process
in a temp directory.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from cudaenv.problems.model import Problem

REPO_TASK = "redteam__tally-1"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "redteam",
    "GIT_AUTHOR_EMAIL": "redteam@example.invalid",
    "GIT_COMMITTER_NAME": "redteam",
    "GIT_COMMITTER_EMAIL": "redteam@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}
_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"
TALLY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
#: the build: a stamp file made by a script of the repository (not a build-system file)
MAKEFILE = "all: build/stamp.txt\n\nbuild/stamp.txt: tools/stamp.py\n\tmkdir -p build\n\tpython3 tools/stamp.py > build/stamp.txt\n"
STAMP = 'print("tally 1.0")\n'
TEST_MUL = "from tally import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"
TEST_ADD = "from tally import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n    assert add(-1, 1) == 0\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=_GIT_ENV
    ).stdout


def _diff(repo: Path, files: dict[str, str]) -> str:
    """The diff that writes ``files`` on the committed tree (the tree is left clean)."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    out = _git(repo, "diff", "--cached", "--binary")
    _git(repo, "reset", "-q", "--hard", "HEAD")
    _git(repo, "clean", "-qfdx")
    return out


@functools.cache
def repo_rows() -> Path:
    """The rows file of the red team's repository task (its repository beside it)."""
    root = Path(tempfile.mkdtemp(prefix="cudaenv-redteam-repo-"))
    atexit.register(shutil.rmtree, root, True)
    repo = root / "tally"
    repo.mkdir()
    _git(repo, "init", "-q")
    files = {
        "tally.py": TALLY,
        "Makefile": MAKEFILE,
        "tools/stamp.py": STAMP,
        "unit_tests/test_mul.py": TEST_MUL,
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    row = {
        "repo": "redteam/tally",
        "repo_path": "tally",
        "instance_id": REPO_TASK,
        "base_commit": _git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "add() subtracts instead of adding.",
        "patch": _diff(repo, {"tally.py": TALLY.replace("a - b", "a + b")}),
        "test_patch": _diff(repo, {"tests/test_add.py": TEST_ADD}),
        "build_command": "make",
        "f2p_commands": [f"{_PYTEST} tests/test_add.py"],
        "p2p_commands": [f"{_PYTEST} unit_tests/test_mul.py"],
        "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
        "PASS_TO_PASS": ["unit_tests/test_mul.py::test_mul"],
        "metadata": {"failure_stage": "runtime"},
    }
    rows = root / "tasks.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    return rows


def repo_problem(task_id: str = REPO_TASK, **changes: object) -> Problem:
    """The red team's repository task; ``changes`` replace fields of its row (a policy)."""
    from cudaenv.problems.loader import load_suite

    rows = repo_rows()
    if changes:
        row = {**json.loads(rows.read_text()), **changes}
        rows = rows.with_name(f"tasks-{abs(hash(json.dumps(changes, sort_keys=True)))}.jsonl")
        rows.write_text(json.dumps(row) + "\n")
    return load_suite(rows)[task_id]


def agent_diff(files: dict[str, str]) -> str:
    """The checkout diff an agent writing ``files`` on the task's base would submit."""
    return _diff(repo_rows().parent / "tally", files)


HARBOR_TASK = "redteam/count"
_HARBOR_FILES = {
    "task.toml": """schema_version = "1.4"

[task]
name = "redteam/count"
description = "Count the words"
keywords = ["redteam", "shell"]

[metadata]
difficulty = "easy"

[verifier]
timeout_sec = 60.0

[environment]
gpus = 0
workdir = "/app"
network_mode = "no-network"
""",
    "instruction.md": "Write the number of lines of data/words.txt to /app/count.txt.\n",
    "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY data /app/data\n",
    "environment/data/words.txt": "alpha\nbeta\ngamma\ndelta\nepsilon\n",
    "tests/test.sh": """#!/bin/bash
want=$(wc -l < /app/data/words.txt)
if [ "$(cat /app/count.txt 2>/dev/null)" = "$want" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
""",
    "solution/solve.sh": "#!/bin/bash\nwc -l < /app/data/words.txt > /app/count.txt\n",
}


@functools.cache
def harbor_dir() -> Path:
    """The red team's Harbor task directory."""
    root = Path(tempfile.mkdtemp(prefix="cudaenv-redteam-harbor-"))
    atexit.register(shutil.rmtree, root, True)
    for rel, text in _HARBOR_FILES.items():
        (root / "count" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "count" / rel).write_text(text)
    return root / "count"


def harbor_problem(task_id: str = HARBOR_TASK) -> Problem:
    from cudaenv.problems.loader import load_suite

    return load_suite(harbor_dir())[task_id]
