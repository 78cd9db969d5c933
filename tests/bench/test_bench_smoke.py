"""Every script in ``bench/`` runs to its end (issue 32): each once, with tiny sizes, in a
subprocess as a person would run it; it must exit 0 and print its final report. No timing
value is asserted (the figures are the benches' business, not CI's); where a bench states a
behavioural verdict beside its figures (the speedup bench's leftover row), that is asserted.

Benches that need Docker are marked ``docker``; those that need a GPU skip without one. The
ComputeEval-corpus benches run on a corpus built from our own fixtures
(``tests/data/computeeval_groups``, written as a ComputeEval release by
``tests/grading/computeeval_fixtures.py``; ComputeEval's own evaluator only where
``COMPUTE_EVAL_PYTHON`` is set); the repository benches on our own CMake rows
(``tests/grading/repo_fixtures.py``). ``bench_harbor.py`` is smoked in
``tests/interop/test_bench_harbor_smoke.py`` (it needs that directory's harbor fixture)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.toolkit import has_gpu
from tests.grading.computeeval_fixtures import record, task_dirs, write_pack
from tests.grading.repo_fixtures import cmake_repo, write_rows

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
CLI = "import sys; from cudaenv.cli import main; sys.argv[0] = 'cudaenv'; sys.exit(main())"
NO_GPU = pytest.mark.skipif(not has_gpu(), reason="needs an NVIDIA GPU (nvidia-smi found none)")


def run_bench(tmp: Path, script: str, *args: str, timeout_s: float = 300) -> str:
    """Run ``bench/<script> args``; exit 0 required; stdout + stderr back."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "CUDAENV_CACHE_DIR": str(tmp / "cache"),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    res = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"{script} exited {res.returncode}:\n{out[-4000:]}"
    return out


# (script, tiny arguments, a regex of its final report); marks per case
CASES = [
    pytest.param(
        "bench_sandbox_local.py", ["-n", "5", "--idle", "3"],
        r"close all 3 \(s\)", id="sandbox_local",
    ),
    pytest.param(
        "bench_async.py", ["--episodes", "4", "--workers", "2"],
        r"ProcessEnv: throughput .*worst loop stall", id="async",
    ),
    pytest.param(
        "bench_gateway.py", ["-n", "5", "--sessions", "2", "--calls", "2"],
        r"2 concurrent sessions x 2 calls .* 4 ok, 0 errors", id="gateway",
    ),
    pytest.param(
        "questions_check.py",
        ["--source", "questions:seed=2026,count=8,unverified=1", "--cpp", "1"],
        r'"python_disagreements": 0.*"cpp_disagreements": 0', id="questions_check",
    ),
    pytest.param(
        "bench_generate.py", ["--sample", "1", "--skip-validate"],
        r"default set: \d+ problems \(\d+ numba-cuda\) generated in", id="generate",
    ),
    pytest.param(
        "bench_grading.py", ["--ids", "py-vector-add", "--no-computeeval"],
        r"cudaenv warm, all problems: built 1.*\n(.*\n)*stage \(cold", id="grading",
    ),
    pytest.param(
        "bench_env.py", ["-n", "5", "--resets", "3", "--episodes", "2"],
        r"docker pool: whole trivial episode", id="env", marks=pytest.mark.docker,
    ),
    pytest.param(
        "bench_sandbox_docker.py", ["-n", "3", "--pause-s", "0.2"],
        r"cold DockerSandbox\(\) \(run \+ server ready\) \+ close\s+3", id="sandbox_docker",
        marks=pytest.mark.docker,
    ),
    pytest.param(
        "bench_cluster.py",
        ["--trivial", "4", "--overhead", "5", "--busy", "2", "--scale", "1", "--nodes", "1"],
        r'"scale": \{', id="cluster", marks=pytest.mark.slow,
    ),
    pytest.param(
        "bench_rollout.py", ["--ids", "error-handling", "--limit", "1", "--trivial", "4"],
        r"worker RSS, 8 idle envs.*\n(.*\n)*2/2 oracle episodes compiled",
        id="rollout", marks=pytest.mark.slow,
    ),
    pytest.param(
        "bench_ccache.py", ["--ids", "error-handling", "--samples", "1"],
        r"fill \(harness miss\) vs off: .*ccache counters", id="ccache", marks=pytest.mark.slow,
    ),
    pytest.param(
        "bench_timing_noise.py",
        ["--problems", "fused-axpby", "--gradings", "1", "--rounds", "2", "--draws", "50"],
        r"fused-axpby", id="timing_noise", marks=[pytest.mark.gpu, NO_GPU],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("script", "args", "report"), CASES)
def test_bench_runs_to_its_end(tmp_path: Path, script: str, args: list[str], report: str) -> None:
    out = run_bench(tmp_path, script, *args)
    assert re.search(report, out), f"{script}: no final report /{report}/ in:\n{out[-3000:]}"


def test_speedup_bench_runs_and_a_leftover_fails_as_tampering(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "bench_speedup.py", "--gradings", "1", "--rounds", "1")
    assert "cpu: baseline vs baseline (control)" in out
    assert re.search(r"busy leftover from its tests\s+nan\s+failed as tampering PASS", out), out


@pytest.mark.skipif(has_gpu(), reason="checks the refusal a GPU-less machine gets")
@pytest.mark.parametrize("script", ["bench_timing_noise.py", "gpu_gate.py"])
def test_gpu_benches_refuse_clearly_without_a_gpu(tmp_path: Path, script: str) -> None:
    res = subprocess.run(
        [
            sys.executable,
            str(BENCH / script),
            *(["--out", str(tmp_path)] if "gate" in script else []),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "GPU" in res.stderr, res.stdout + res.stderr


@pytest.mark.gpu
@NO_GPU
@pytest.mark.slow
def test_gpu_gate_runs_a_stage_to_its_report(tmp_path: Path) -> None:
    run_bench(tmp_path, "gpu_gate.py", "--out", str(tmp_path / "out"), "--stages", "optimize",
              "--budget-s", "120")  # fmt: skip
    assert (tmp_path / "out" / "gate.json").is_file()


# ---- the ComputeEval-corpus benches, on a release made of our own fixtures -------------------

# every fixture group but cudnn, whose frontend headers take minutes to compile here
QUICK = [d for d in task_dirs() if "cudnn" not in d.name]


@pytest.fixture
def fixture_release(tmp_path: Path) -> Path:
    """A checkout laid out as NVIDIA/compute-eval's, its release our own fixtures."""
    checkout = tmp_path / "checkout"
    (checkout / "data" / "releases").mkdir(parents=True)
    write_pack(checkout / "data" / "releases" / "fixtures-problems.tar.gz", QUICK)
    return checkout


def test_computeeval_corpus_then_policy_checks(tmp_path: Path, fixture_release: Path) -> None:
    out_dir = tmp_path / "packs"
    out = run_bench(tmp_path, "computeeval_corpus.py", str(fixture_release),
                    "--release", "fixtures", "--out", str(out_dir), "--per-group", "1")  # fmt: skip
    groups = {record(d)["group"] for d in QUICK}
    assert re.search(rf"^{len(groups)} problems \(", out, re.M), out
    problems = out_dir / "fixtures-problems.tar.gz"
    baselines = out_dir / "fixtures-baselines-solutions.tar.gz"
    assert problems.is_file() and baselines.is_file()
    assert (out_dir / "fixtures-empty-solutions.tar.gz").is_file()
    out = run_bench(tmp_path, "bench_policy_checks.py", str(problems), str(baselines),
                    "--workers", "1",
                    "--out", str(tmp_path / "checks.jsonl"))  # fmt: skip
    # the final table: a row per group, then "all"; known-good solutions, so none rejected
    all_row = re.search(r"^all\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.M)
    assert all_row, out
    samples, _clean, rejected, _no_compile, _infra = map(int, all_row.groups())
    assert samples == len(groups) and rejected == 0, out


def test_computeeval_baselines_pack_grade_report(tmp_path: Path, fixture_release: Path) -> None:
    out_dir = tmp_path / "baselines"
    run_bench(tmp_path, "computeeval_baselines.py", "pack", str(fixture_release),
              "--release", "fixtures", "--groups", "cutile,cuda-runtime", "--per-group", "1",
              "--out", str(out_dir))  # fmt: skip
    for name in ("baselines", "empty"):
        res = subprocess.run(
            [sys.executable, "-c", CLI, "grade", str(out_dir / f"{name}.tar.gz"),
             "--source", str(out_dir / "problems.tar.gz"), "--workers", "1",
             "--out", str(out_dir / f"graded-{name}")],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT),
                               "CUDAENV_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert res.returncode in (0, 1), res.stdout + res.stderr  # 1: some solution failed
    out = run_bench(tmp_path, "computeeval_baselines.py", "report",
                    str(out_dir / "graded-baselines"), "--empty", str(out_dir / "graded-empty"))  # fmt: skip
    assert re.search(r"cuda-runtime", out) and re.search(r"cutile", out), out


def test_computeeval_agreement_on_fixtures(tmp_path: Path, fixture_release: Path) -> None:
    """cudaenv's side always; ComputeEval's own evaluator only where ``COMPUTE_EVAL_PYTHON``
    names a venv with nvidia-compute-eval (CI has none: its numpy pin conflicts with ours)."""
    out_dir = tmp_path / "packs"
    run_bench(tmp_path, "computeeval_corpus.py", str(fixture_release),
              "--release", "fixtures", "--out", str(out_dir), "--per-group", "1")  # fmt: skip
    ce = os.environ.get("COMPUTE_EVAL_PYTHON")
    out = run_bench(tmp_path, "bench_computeeval_agreement.py",
                    str(out_dir / "fixtures-problems.tar.gz"),
                    str(out_dir / "fixtures-baselines-solutions.tar.gz"),
                    "--release", "fixtures", "--workers", "1",
                    *(["--ce-python", ce] if ce else []), timeout_s=600)  # fmt: skip
    assert re.search(r"^cudaenv: \d+ samples", out, re.M), out
    assert ("per group" in out) if ce else ("ComputeEval not run" in out), out


# ---- the repository benches, on our own CMake rows ---------------------------------------


@pytest.fixture
def repo_rows(tmp_path: Path) -> Path:
    _repo, rows = cmake_repo(tmp_path)  # the rows find their clone beside tasks.jsonl
    return write_rows(tmp_path / "tasks.jsonl", *rows)


def test_repo_regrade(tmp_path: Path, repo_rows: Path) -> None:
    out = run_bench(tmp_path, "repo_regrade.py", str(repo_rows), "--ids", "demo__calc-1",
                    "--rounds", "1")  # fmt: skip
    assert re.search(r"\| demo__calc-1 \| full / regrade \| [\d.]+x", out), out
    assert re.search(r"\| demo__calc-1 \| regrade \| [\d.]+ \|.*\| True \|", out), out


@pytest.mark.slow
def test_repo_rows_check(tmp_path: Path, repo_rows: Path) -> None:
    out = run_bench(tmp_path, "repo_rows_check.py", str(repo_rows), "--ids", "demo__calc-1")
    assert "| step | ok | seconds | detail |" in out and "| FAIL |" not in out, out


@pytest.mark.skipif(
    not os.environ.get("CUDAENV_KOKKOS_MIRROR"),
    reason="builds rows from a kokkos/kokkos clone (set CUDAENV_KOKKOS_MIRROR): a public "
    "repository CI does not fetch; its rows' checks are smoked above on our own CMake rows",
)
def test_repo_kokkos_rows(tmp_path: Path) -> None:
    out_file = tmp_path / "kokkos.jsonl"
    run_bench(tmp_path, "repo_kokkos_rows.py", "--repo", os.environ["CUDAENV_KOKKOS_MIRROR"],
              "--out", str(out_file))  # fmt: skip
    assert len(out_file.read_text().splitlines()) == 2
