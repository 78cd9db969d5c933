"""One problem, oracle agent, two harnesses: a real Harbor trial vs cudaenv's own docker episode.

Why: the same exported task should cost about the same to play under Harbor as under
cudaenv; this shows what Harbor's layers (CLI start, ``docker compose build``/``up``/``down``,
``compose exec`` per command, uploads, the verifier as a script) add on this machine.
Both sides grade in the ``cudaenv-eval-cpu`` image (numba-cuda's simulator, no GPU):

- Harbor: ``harbor run`` of the exported task with the oracle agent, timed end to end as a
  subprocess; the trial's own span and its phases come from its ``result.json``. It runs
  offline through ``cudaenv.interop.harbor_docker.OfflineDockerEnvironment`` (no-network as
  ``network_mode: none``; Harbor's own egress sidecar would be pulled from Docker Hub).
- cudaenv: ``cudaenv.make(problem, sandbox="docker")`` and the oracle agent: container start,
  writing the reference, grading in a fresh container, teardown. Grading caches are off
  (Harbor's verifier starts cold in a fresh container each trial).

Every run must score reward 1 on both sides. Needs dockerd, Docker Compose v2
(``bash .ci/compose-setup.sh`` on Debian bookworm), the image (``docker/build-images.sh``)
and a Python >= 3.12 venv with harbor 0.25 (the interop tests create one; or ``--harbor``)::

    python bench/bench_harbor.py [--runs 3] [--problem py-vector-add]
                                 [--image cudaenv-eval-cpu:latest] [--harbor PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cudaenv
from cudaenv.agents.registry import make_agent
from cudaenv.interop.harbor_docker import harbor_env, harbor_run_command, trial_results
from cudaenv.interop.harbor_export import export_problem
from cudaenv.problems import load_suite

HARBOR_VERSION = "0.25.0"
Row = tuple[str, list[float]]  # name, samples in seconds


def default_harbor() -> Path:
    """The harbor CLI of the venv the interop tests create (``$CUDAENV_HARBOR_VENV``)."""
    venv = os.environ.get("CUDAENV_HARBOR_VENV") or os.path.join(
        tempfile.gettempdir(), f"cudaenv-harbor-venv-{HARBOR_VERSION}"
    )
    return Path(venv) / "bin" / "harbor"


def span_s(phase: dict[str, Any] | None) -> float:
    if not phase or not phase.get("started_at") or not phase.get("finished_at"):
        return float("nan")
    start, end = (datetime.fromisoformat(phase[k]) for k in ("started_at", "finished_at"))
    return (end - start).total_seconds()


def harbor_trial(
    harbor: Path, task: Path, jobs: Path, name: str, cpus: int, memory_mb: int
) -> dict[str, float]:
    """One ``harbor run`` with the oracle agent: wall time and the trial's phases, in s."""
    cmd = harbor_run_command(harbor, task, jobs, name, cpus=cpus, memory_mb=memory_mb)
    start = time.perf_counter()
    res = subprocess.run(cmd, env=harbor_env(), cwd=jobs, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(
            f"harbor run failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}"
        )
    [trial] = trial_results(jobs / name)
    reward = ((trial.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    if trial.get("exception_info") or reward != 1.0:
        raise SystemExit(f"harbor oracle trial scored {reward}: {trial.get('exception_info')}")
    return {
        "harbor run (CLI, end to end)": wall,
        "harbor trial (its result.json span)": span_s(trial),
        "  environment setup (compose build + up)": span_s(trial.get("environment_setup")),
        "  agent execution (solve.sh)": span_s(trial.get("agent_execution")),
        "  verifier (tests/test.sh)": span_s(trial.get("verifier")),
    }


def cudaenv_episode(problem: str, image: str) -> dict[str, float]:
    """One cudaenv episode on the docker sandbox with the oracle agent, graded cold."""
    start = time.perf_counter()
    env = cudaenv.make(
        problem,
        sandbox="docker",
        sandbox_options={"image": image},
        grade_options={"test_cache": False, "build_cache": False},
    )
    try:
        traj = make_agent("oracle").run(env)
    finally:
        env.close()
    wall = time.perf_counter() - start
    if traj.reward != 1.0:
        raise SystemExit(f"cudaenv oracle episode scored {traj.reward}: {traj.verdict}")
    grading = traj.verdict.seconds if traj.verdict and traj.verdict.seconds else float("nan")
    return {"cudaenv docker episode (make .. close)": wall, "  grading": grading}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per side (medians reported)")
    parser.add_argument("--problem", default="py-vector-add")
    parser.add_argument("--image", default="cudaenv-eval-cpu:latest")
    parser.add_argument("--harbor", type=Path, default=default_harbor(), help="harbor CLI")
    parser.add_argument("--memory-mb", type=int, default=4096, help="task memory override")
    args = parser.parse_args()
    if not args.harbor.exists():
        raise SystemExit(
            f"{args.harbor} missing: pass --harbor (harbor {HARBOR_VERSION}, Python >= 3.12)"
        )
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0:
        raise SystemExit(
            "`docker compose version` fails: on Debian bookworm run .ci/compose-setup.sh"
        )
    os.environ["CUDAENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="cudaenv-bench-harbor-")
    work = Path(tempfile.mkdtemp(prefix="cudaenv-bench-harbor-jobs-"))
    task = export_problem(load_suite("builtin")[args.problem], work / "tasks", image=args.image)
    cpus = min(2, os.cpu_count() or 1)

    samples: dict[str, list[float]] = {}
    try:
        # one untimed run each: Harbor's first image build, cudaenv's first container
        harbor_trial(args.harbor, task, work, "warmup", cpus, args.memory_mb)
        cudaenv_episode(args.problem, args.image)
        for i in range(args.runs):  # interleaved, so drift hits both sides alike
            for name, s in harbor_trial(
                args.harbor, task, work, f"run-{i}", cpus, args.memory_mb
            ).items():
                samples.setdefault(name, []).append(s)
            for name, s in cudaenv_episode(args.problem, args.image).items():
                samples.setdefault(name, []).append(s)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {name: statistics.median(s) for name, s in samples.items()}
    episode = med["cudaenv docker episode (make .. close)"]
    width = max(len(n) for n in samples)
    print(f"{args.problem}, oracle agent, image {args.image}, {args.runs} runs (reward 1 in all)")
    print(f"{'measurement':<{width}}  {'median s':>8}  {'min':>6}  {'max':>6}")
    for name, s in samples.items():
        print(f"{name:<{width}}  {med[name]:>8.2f}  {min(s):>6.2f}  {max(s):>6.2f}")
    print(
        f"{'ratio: harbor run / cudaenv episode':<{width}}  {med['harbor run (CLI, end to end)'] / episode:>8.2f}"
    )
    print(
        f"{'ratio: harbor trial / cudaenv episode':<{width}}  "
        f"{med['harbor trial (its result.json span)'] / episode:>8.2f}"
    )


if __name__ == "__main__":
    main()
