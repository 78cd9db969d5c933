"""Original ComputeEval-shaped problems (tests/data/computeeval_like) down the grader's paths.

Each known-good solution takes a path the grader once failed on ComputeEval's own corpus
(namespace-scope standard-library, Thrust and cuBLAS objects and a ``dim3``, iostream output,
``exit(err)`` error handling, frontend classes named as ``source_references`` and used through
a namespace alias in a ``.cpp`` file, a cuTile solution importing ``torch``): each must come
out "compiled; GPU stages not run" with nothing suspected. The exploits next to them must
still fail. The problems are loaded from a datapack written as ComputeEval writes one (no
grading policy in it), so they are graded by the ``computeeval`` policy.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from cudaenv.grading.grader import grade
from cudaenv.grading.static_checks import analyse
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.problems.policy import COMPUTEEVAL, STRICT
from cudaenv.problems.suite import Suite

DATA = Path(__file__).resolve().parent.parent / "data" / "computeeval_like"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def computeeval_pack(problems: list[Problem], path: Path) -> Path:
    """A datapack as ComputeEval's own tools write one: records and metadata.json, with no
    word of a grading policy anywhere."""
    lines = []
    for p in problems:
        record = p.to_record()
        assert "grading_policy" not in record  # strict problems: the default, left out
        lines.append((json.dumps(record) + "\n").encode())
    meta = {
        "release": "2026-1",
        "total_count": len(problems),
        "created_at": "2026-11-20T00:00:00",
        "description": None,
        "task_id_hashes": {
            p.task_id: hashlib.md5(line).hexdigest()
            for p, line in zip(problems, lines, strict=True)
        },
    }
    staging = path.parent / "staging"
    staging.mkdir()
    (staging / "metadata.json").write_text(json.dumps(meta))
    (staging / "problems.jsonl").write_bytes(b"".join(lines))
    with tarfile.open(path, "w:gz") as tar:
        for name in ("metadata.json", "problems.jsonl"):
            tar.add(staging / name, arcname=name)
    return path


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    authored = load_suite(DATA)
    references = {p.task_id: p.solution for p in authored}
    pack = computeeval_pack(list(authored), tmp_path_factory.mktemp("pack") / "ce.tar.gz")
    loaded = load_suite(pack)
    # the references do not travel in ComputeEval's packs: put them back for the tests
    return Suite(
        [p.model_copy(update={"solution": references[p.task_id]}) for p in loaded],
        source=str(pack),
    )


def _files(problem: Problem, **replace: str) -> list[SourceFile]:
    assert problem.solution is not None
    return [
        SourceFile(path=f.path, content=replace.get(f.path, f.content))
        for f in problem.solution.files
    ]


def _static(problem: Problem, files: list[SourceFile], policy=None):
    return analyse(
        files,
        problem.source_references,
        policy=policy or problem.grading_policy,
        context=[f.path for f in problem.context_files],
    )


def test_a_pack_that_names_no_policy_is_graded_as_computeeval_grades(suite: Suite) -> None:
    assert {p.grading_policy.name for p in suite} == {"computeeval"}
    assert all(p.grading_policy == COMPUTEEVAL for p in suite)


@pytest.mark.parametrize(
    "task_id",
    ["CELIKE/cccl-static", "CELIKE/cublas-handle", "CELIKE/frontend-refs", "CELIKE/tile-scale"],
)
def test_every_known_good_solution_passes_the_static_stage(suite: Suite, task_id: str) -> None:
    p = suite[task_id]
    report = _static(p, _files(p))
    assert report.violations == [] and report.refs_ok, report


def test_computeeval_reads_references_as_computeeval_does(suite: Suite) -> None:
    # `Graph` inside `mf::graph::Graph` in a .cpp file: a whole syntax node, so found; our
    # strict reading wants the name as written (qualified or under a using-directive)
    p = suite["CELIKE/frontend-refs"]
    assert _static(p, _files(p)).refs_ok
    assert _static(p, _files(p), STRICT).missing_all == ["Graph", "Tensor_attributes"]
    # a reference named only in a comment or a string is no use of it
    (f,) = _files(p)
    hidden = (
        "// Graph Tensor_attributes Scale_attributes\n"
        'const char* names = "Graph Tensor_attributes";\nint plan_size(int r, int c) { return 0; }\n'
    )
    report = _static(p, [SourceFile(path=f.path, content=hidden)])
    assert report.missing_all == ["Graph", "Tensor_attributes"]
    assert report.missing_any == ["Scale_attributes", "Bias_attributes"]


def test_cutile_imports_are_computeevals_and_the_problems_own(suite: Suite) -> None:
    p = suite["CELIKE/tile-scale"]
    assert _static(p, _files(p)).violations == []  # torch, cuda.tile, its own tile_helpers
    strict = _static(p, _files(p), STRICT).violations
    assert any("import of 'torch'" in v for v in strict)  # our own problems allow no torch
    (f,) = _files(p)
    escape = f.content.replace("import torch\n", "import torch\nimport subprocess\n")
    report = _static(p, [SourceFile(path=f.path, content=escape)])
    assert any("import of 'subprocess'" in v for v in report.violations)


@pytest.mark.parametrize(
    ("task_id", "path", "old", "new", "why"),
    [
        # an early exit with success: ComputeEval's tests pass on exit status 0
        ("CELIKE/cccl-static", "solution.cu", "    return n;\n", "    std::exit(0);\n",
         "exit(0) (early exit"),
        # a status the surrounding condition did not test
        ("CELIKE/cublas-handle", "solution.cu", "    cudaDeviceSynchronize();\n",
         "    int done = 0;\n    exit(done);\n", "exit(done) (early exit"),
        # a real call of libc's signal, not a parameter named signal
        ("CELIKE/frontend-refs", "solution.cpp", '#include "plan.h"\n',
         '#include "plan.h"\n#include <csignal>\nstatic int quiet() { std::signal(SIGTERM, '
         "SIG_IGN); return 0; }\n", "use of 'signal'"),
    ],
)  # fmt: skip
def test_the_exploits_still_fail_the_static_stage(
    suite: Suite, task_id: str, path: str, old: str, new: str, why: str
) -> None:
    p = suite[task_id]
    source = next(f.content for f in _files(p) if f.path == path)
    assert old in source
    for policy in (COMPUTEEVAL, STRICT):
        report = _static(p, _files(p, **{path: source.replace(old, new)}), policy)
        assert any(why in v for v in report.violations), (policy.name, report.violations)


def test_an_empty_solution_fails(suite: Suite) -> None:
    for p in suite:
        empty = Solution(
            task_id=p.task_id, files=[SourceFile(path=f.path, content="") for f in _files(p)]
        )
        v = grade(p, empty)
        assert v.passed is False and v.failure == "agent", (p.task_id, v.reason)


def test_the_cutile_solution_is_not_run_without_a_gpu(suite: Suite) -> None:
    p = suite["CELIKE/tile-scale"]
    v = grade(p, p.solution)
    assert v.passed is None and v.failure is None and not v.suspected_hack, v.reason
    assert v.stages["static"].status == "ok" and v.stages["test"].status == "skipped"


@needs_nvcc
@pytest.mark.parametrize(
    "task_id", ["CELIKE/cccl-static", "CELIKE/cublas-handle", "CELIKE/frontend-refs"]
)
def test_each_known_good_cpp_solution_compiles_and_is_not_run(suite: Suite, task_id: str) -> None:
    p = suite[task_id]
    v = grade(p, p.solution)
    assert v.compiled and v.passed is None and v.failure is None, v.reason
    assert not v.suspected_hack, v.suspected_hack
    assert v.stages["toolchain"].status == "ok"


@needs_nvcc
def test_the_solutions_own_code_before_main_still_fails(suite: Suite) -> None:
    # the library's handle at namespace scope passes above; the solution's own function
    # called from an initialiser (nvcc builds host code unoptimised: a real call) does not
    p = suite["CELIKE/cublas-handle"]
    (f,) = _files(p)
    early = f.content.replace(
        "static const dim3 kUnusedBlock(256, 1, 1);\n",
        'int announce() { std::puts("ready"); return 1; }\nstatic int g_ready = announce();\n',
    )
    for policy in (COMPUTEEVAL, STRICT):
        v = grade(
            p.model_copy(update={"grading_policy": policy}),
            [SourceFile(path=f.path, content=early)],
        )
        assert v.passed is False, (policy.name, v.reason)
        assert any("calls 'announce()'" in s for s in v.suspected_hack), v.suspected_hack
