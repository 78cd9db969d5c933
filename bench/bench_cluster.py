"""The cluster's speed on a simulated cluster (several raylets on this host).

Why: the grading service must not become the bottleneck it removes. Reports: trivial-episode
throughput; the scheduler's overhead per exclusive stage (driver round trip of an empty stage
minus the time the grader held its device; target <= 5 ms), beside Ray's own cost of the same
two hops (an async relay and a threaded echo actor placed as the scheduler and a grader are),
whose difference is what the scheduler itself adds; grader busy fraction when
benchmark work is saturated (target >= 90%); and 1 -> 2 -> 3 nodes for compile-bound episodes
(each episode compiles with g++; on a 2-core host no gain is expected past 2 raylets, since
every simulated node shares the same cores).

    PYTHONPATH=. python bench/bench_cluster.py [--stages trivial,overhead,busy,scale] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

# the system temp dir, not $TMPDIR: Ray's socket paths must stay short; a private dir keeps
# other Ray users of this host off this cluster (and this bench off theirs)
RAY_TMP = tempfile.mkdtemp(prefix="cudaenv-ray-bench-", dir="/tmp")
os.environ["RAY_TMPDIR"] = RAY_TMP

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from cudaenv.cluster import ClusterSession, GradingService, _ray  # noqa: E402
from cudaenv.cluster.config import ClusterConfig  # noqa: E402
from cudaenv.cluster.seam import ExclusiveWork, GradeCall  # noqa: E402
from cudaenv.problems import load_suite  # noqa: E402
from cudaenv.problems.directory import write_problem_dir  # noqa: E402
from cudaenv.problems.model import Problem, SourceFile  # noqa: E402

HEADER = "int add(int a, int b);\n"
SOLUTION = '#include "add.h"\nint add(int a, int b) { return a + b; }\n'
TEST = textwrap.dedent(
    """\
    #include <cstdio>
    #include <cstdlib>
    #include "add.h"
    static char g_token[160];
    int main() {
        const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
        snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
        unsetenv("CUDAENV_COMPLETION_TOKEN");
        if (add(2, 3) != 5) { printf("FAIL\\n"); return 1; }
        printf("CUDAENV_COMPLETE %s\\n", g_token);
        return 0;
    }
    """
)
BUILD = "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp"


def problems(root: Path, n: int, *, bench: str | None = None, tag: str = "p") -> list[Problem]:
    """``n`` CPU problems whose tests differ (so every build is a real compile)."""
    for i in range(n):
        spec: dict[str, Any] = {
            "task_id": f"{tag}-{i}",
            "date": "2026-11-01",
            "problem_type": "cuda_cpp",
            "group": "bench",
            "prompt": "add",
            "build_command": BUILD,
            "test_command": "./test.out",
            "metadata": {"requires_gpu": False},
        }
        if bench:
            spec["benchmark_command"] = bench
        files = {
            "context/include/add.h": HEADER,
            "test/test_main.cpp": f"// {tag} {i}\n{TEST}",
            "solution/solution.cpp": SOLUTION,
            "baseline/solution.cpp": SOLUTION.replace("a + b", "b + a"),
        }
        write_problem_dir(root, spec, files)
    suite = load_suite(root)
    return [suite[f"{tag}-{i}"] for i in range(n)]


class Sim:
    """A simulated cluster: a head with no CPUs, nodes added on demand, a cache dir each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "include_dashboard": False, "env_vars": self._env()},
        )
        _ray.join(self.cluster.address)

    def _env(self) -> dict[str, str]:
        self.count += 1
        return {"CUDAENV_CACHE_DIR": str(self.root / f"cache-{self.count}")}

    def add(self, **resources: Any) -> None:
        self.cluster.add_node(env_vars=self._env(), **resources)
        self.cluster.wait_for_nodes()

    def close(self) -> None:
        ray.shutdown()
        self.cluster.shutdown()


def session(sim: Sim, agent: str, **kw: Any) -> ClusterSession:
    env_options = kw.pop("env_options", None)
    cfg = ClusterConfig(ray_address=sim.cluster.address, grader_cpus=0, **kw)
    return ClusterSession(agent, config=cfg, env_options=env_options)


def trivial(sim: Sim, root: Path, n: int) -> dict[str, Any]:
    """nop episodes (reset, submit, no build): what the cluster path costs per episode."""
    [p] = problems(root / "trivial", 1, tag="trivial")
    with session(sim, "nop", episode_workers=2, episodes_per_worker=4, window=n) as s:
        list(s.run([p], attempts=8))  # warm the workers
        start = time.perf_counter()
        done = sum(1 for _ in s.run([p], attempts=n))
        wall = time.perf_counter() - start
    return {"episodes": done, "wall_s": round(wall, 2), "episodes_per_s": round(done / wall, 1)}


class _Echo:
    """The grader's place in the raw-Ray baseline: returns what it gets (a threaded actor)."""

    def run(self, work: Any) -> Any:
        return work


class _Relay:
    """The scheduler's place in the raw-Ray baseline: an async actor awaiting the echo."""

    def __init__(self, echo: Any) -> None:
        self.echo = echo

    async def submit(self, work: Any) -> Any:
        return await self.echo.run.remote(work)


def _round_trips(call: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        held = call()
        out.append((time.perf_counter() - start - held) * 1000)
    return out


def overhead(sim: Sim, n: int) -> dict[str, Any]:
    """Empty exclusive stages, one at a time: round trip minus the device-held time; beside
    it, Ray's own cost of the same two hops (driver -> async actor on the driver's node ->
    threaded actor on a grader node and back, same work object, no scheduling), so the
    scheduler's own share is the difference. Samples of the two alternate."""
    service = GradingService(ClusterConfig(gpu_graders=0, cpu_graders=1, grader_cpus=0))
    echo = (
        ray.remote(_Echo)
        .options(num_cpus=0, resources={"cudaenv_grader": 1}, max_concurrency=4)
        .remote()
    )
    relay = (
        ray.remote(_Relay)
        .options(num_cpus=0, scheduling_strategy=_ray.on_this_node(), max_concurrency=10_000)
        .remote(echo)
    )
    work = ExclusiveWork(kind="cpu", call=None)

    def staged() -> float:
        out = service.grade(work)
        return out.interval.end - out.interval.start

    def raw() -> float:
        ray.get(relay.submit.remote(work))
        return 0.0

    try:
        for _ in range(10):  # warm both paths
            staged()
            raw()
        extra: list[float] = []
        floor: list[float] = []
        batch = max(1, min(20, n))  # alternating batches; fewer than 20 stages: one batch
        for _ in range(max(1, n // batch)):
            extra += _round_trips(staged, batch)
            floor += _round_trips(raw, batch)
        start = time.perf_counter()
        ray.get([service.submit(work) for _ in range(n)])
        piped = (time.perf_counter() - start) * 1000 / n
    finally:
        service.stop()
        ray.kill(relay)
        ray.kill(echo)
    median, ray_median = statistics.median(extra), statistics.median(floor)
    return {
        "stages": n,
        "overhead_ms_median": round(median, 2),
        "overhead_ms_p90": round(sorted(extra)[int(0.9 * len(extra))], 2),
        "ray_two_hops_ms_median": round(ray_median, 2),
        "scheduler_ms_beyond_ray": round(median - ray_median, 2),
        "pipelined_ms_per_stage": round(piped, 2),
        "target_ms": 5,
    }


def busy(sim: Sim, root: Path, n: int) -> dict[str, Any]:
    """Benchmark-bound work, more than the graders take at once: device-held seconds over
    each grader's window from its first start to its last end."""
    bench = "for i in 1 2 3 4 5 6 7 8; do ./test.out --perf >/dev/null; done; ./test.out --perf"
    ps = problems(root / "busy", 2, bench=bench, tag="busy")
    service = GradingService(ClusterConfig(gpu_graders=0, grader_cpus=0))
    files = [SourceFile(path="solution.cpp", content=SOLUTION)]
    try:
        opts = {"benchmark": True, "rounds": 3}
        warm = [
            ExclusiveWork(kind="cpu", call=GradeCall(p, files, "solve", options=opts)) for p in ps
        ]
        ray.get([service.submit(w) for w in warm * len(service.graders)])  # builds, baselines
        work = [
            ExclusiveWork(kind="cpu", call=GradeCall(ps[i % 2], files, "solve", options=opts))
            for i in range(n)
        ]
        outs = ray.get([service.submit(w) for w in work])
    finally:
        service.stop()
    per: dict[str, list[Any]] = {}
    for o in outs:
        per.setdefault(o.grader or "?", []).append(o.interval)
    fractions, gaps = {}, {}
    for g, ivs in per.items():
        held = sum(i.end - i.start for i in ivs)
        window = max(i.end for i in ivs) - min(i.start for i in ivs)
        fractions[g] = round(held / window, 3) if window > 0 else None
        # the device's idle time between two stages: the scheduler's overhead as it costs
        gaps[g] = round((window - held) * 1000 / (len(ivs) - 1), 2) if len(ivs) > 1 else None
    passed = sum(bool(o.verdict and o.verdict.passed) for o in outs)
    return {
        "stages": n,
        "passed": passed,
        "busy_fraction": fractions,
        "target": 0.9,
        "device_gap_ms_per_stage": gaps,
    }


def scale(sim: Sim, root: Path, n: int, max_nodes: int) -> dict[str, Any]:
    """Compile-bound episodes (oracle, every build a real g++ compile) on 1, 2, 3 one-CPU
    nodes, one worker each."""
    rows = []
    for nodes in range(1, max_nodes + 1):
        sim.add(num_cpus=1)
        ps = problems(root / f"scale-{nodes}", n, tag=f"scale{nodes}")
        with session(sim, "oracle", episode_workers=nodes, worker_cpus=1) as s:
            start = time.perf_counter()
            res = list(s.run(ps))
            wall = time.perf_counter() - start
        ok = sum(r.status == "ok" and bool(r.verdict and r.verdict.passed) for r in res)
        rows.append({"nodes": nodes, "episodes": len(res), "passed": ok, "wall_s": round(wall, 2)})
    base = rows[0]["wall_s"]
    for r in rows:
        r["speedup_vs_1"] = round(base / r["wall_s"], 2) if r["wall_s"] else None
    return {"rows": rows, "cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="trivial,overhead,busy,scale")
    parser.add_argument("--trivial", type=int, default=128, help="nop episodes")
    parser.add_argument("--overhead", type=int, default=200, help="empty exclusive stages")
    parser.add_argument("--busy", type=int, default=16, help="benchmark stages")
    parser.add_argument("--scale", type=int, default=6, help="compile-bound episodes per size")
    parser.add_argument("--nodes", type=int, default=3, help="largest simulated node count")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args()
    stages = set(args.stages.split(","))
    root = Path(tempfile.mkdtemp(prefix="cudaenv-bench-cluster-"))
    report: dict[str, Any] = {"cores": os.cpu_count(), "load_1m_start": os.getloadavg()[0]}
    sim = Sim(root)
    try:
        if stages & {"trivial", "overhead", "busy"}:
            sim.add(num_cpus=2, resources={"cudaenv_grader": 1})
            sim.add(num_cpus=2, resources={"cudaenv_grader": 1})
        if "trivial" in stages:
            report["trivial"] = trivial(sim, root, args.trivial)
            print("trivial", report["trivial"], flush=True)
        if "overhead" in stages:
            report["overhead"] = overhead(sim, args.overhead)
            print("overhead", report["overhead"], flush=True)
        if "busy" in stages:
            report["busy"] = busy(sim, root, args.busy)
            print("busy", report["busy"], flush=True)
        if "scale" in stages:
            sim.close()
            sim = Sim(root / "scale")
            report["scale"] = scale(sim, root, args.scale, args.nodes)
            print("scale", report["scale"], flush=True)
    finally:
        sim.close()
        shutil.rmtree(RAY_TMP, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
