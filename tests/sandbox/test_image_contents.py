"""No problem data in any image an agent runs in (issue 27: an agent copied a reference out of
the installed package's bundled suite and scored 1).

Each built image is scanned from inside, as root: every regular file whose size and SHA-256
match a hidden file (a reference or baseline solution, a hidden test or checker file) of the
bundled suite, of a sample of the generated families, or of the red-team fixtures; and any
file under cudaenv's bundled-suite folder, problem generators or red-team package, or named
``problem-spec.yaml``. A reference bind-mounted into the scanned container is the control:
the scan must find it and nothing else. Images that are not built here are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from cudaenv.problems import load_suite
from cudaenv.problems.model import Problem
from cudaenv.redteam.fixtures import fixture_suite
from tests.conftest import need_image

pytestmark = pytest.mark.docker

CPU, CUDA = "docker/build-images.sh", "docker/build-cuda-images.sh"
#: (image, the script that builds it)
IMAGES = [
    (os.environ.get("CUDAENV_TEST_IMAGE", "cudaenv-sandbox-test:latest"), CPU),
    (os.environ.get("CUDAENV_EVAL_CPU_IMAGE", "cudaenv-eval-cpu:latest"), CPU),
    (os.environ.get("CUDAENV_AGENT_CPU_IMAGE", "cudaenv-agent-cpu:latest"), CPU),
    (os.environ.get("CUDAENV_REPO_CPU_IMAGE", "cudaenv-repo-cpu:latest"), CPU),
    (os.environ.get("CUDAENV_CUDA_EVAL_IMAGE", "cudaenv-eval:local"), CUDA),
    (os.environ.get("CUDAENV_CUDA_AGENT_IMAGE", "cudaenv-agent:local"), CUDA),
    ("cudaenv-eval:latest", "docker build -f docker/Dockerfile.eval"),
    ("cudaenv-agent:latest", "docker build -f docker/Dockerfile.agent"),
]
#: where a hidden file is mounted as the scan's control
CONTROL = "/opt/cudaenv-scan-control/planted.py"
#: path parts that mean problem data (or the code that renders it) is installed
DATA_PATHS = ["/cudaenv/_data/envs/", "/cudaenv/families/", "/cudaenv/redteam/"]

SCAN = r"""
import hashlib, json, os, stat, sys

targets = json.load(open(sys.argv[1]))
sizes, hashes = set(targets["sizes"]), targets["hashes"]
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "cudaenv-scan")]
    for name in files:
        path = os.path.join(root, name)
        if name == "problem-spec.yaml" or any(p in path for p in targets["paths"]):
            found.append([path, "problem data path"])
            continue
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size not in sizes:
                continue
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            continue
        if digest in hashes:
            found.append([path, hashes[digest]])
print(json.dumps(found))
"""


def _hidden(problem: Problem) -> list[tuple[str, str]]:
    """(label, content) of every file of ``problem`` an agent must never see."""
    files = [*problem.test_files, *getattr(problem, "check_files", [])]
    for sol in (problem.solution, problem.baseline_solution):
        files += list(sol.files) if sol is not None else []
    return [(f"{problem.task_id}/{f.path}", f.content) for f in files]


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scan's script, its targets and the control file, in one directory."""
    problems = [
        *load_suite("builtin"),
        *load_suite("generated:count=12"),
        *(fixture_suite().problem(t) for t in ("cpu-add", "cpu-canary")),
    ]
    visible = {f.content for p in problems for f in p.context_files}
    hashes: dict[str, str] = {}
    for p in problems:
        for label, content in _hidden(p):
            if content.strip() and content not in visible:
                hashes.setdefault(hashlib.sha256(content.encode()).hexdigest(), label)
    sizes = {len(c.encode()) for p in problems for _, c in _hidden(p)}
    root = tmp_path_factory.mktemp("scan")
    (root / "scan.py").write_text(SCAN)
    (root / "targets.json").write_text(
        json.dumps({"sizes": sorted(sizes), "hashes": hashes, "paths": DATA_PATHS})
    )
    reference = load_suite("builtin")["py-vector-add"].solution
    assert reference is not None
    (root / "control.py").write_text(reference.files[0].content)
    return root


@pytest.mark.parametrize(("image", "build"), IMAGES, ids=[i for i, _ in IMAGES])
def test_image_holds_no_problem_data(image: str, build: str, targets: Path) -> None:
    client = need_image(image, build)
    out = client.containers.run(  # type: ignore[attr-defined]
        image,
        ["python3", "-I", "-S", "/cudaenv-scan/scan.py", "/cudaenv-scan/targets.json"],
        user="0",
        network_mode="none",
        remove=True,
        volumes={
            str(targets): {"bind": "/cudaenv-scan", "mode": "ro"},
            str(targets / "control.py"): {"bind": CONTROL, "mode": "ro"},
        },
    )
    found = {path: what for path, what in json.loads(out)}
    assert found.pop(CONTROL, None) is not None, "the scan missed its control: it is broken"
    first = sorted(found.items(), key=lambda kv: kv[1] == "problem data path")[:20]
    assert not found, f"{image} holds problem data ({len(found)} files): {dict(first)}"
