"""The cluster for real on a simulated cluster (several raylets on this host): episodes spread
over the nodes and complete, exclusive stages never overlap on a grader, each baseline is
timed once per (problem, device model), evaluation work is graded before training work,
512 concurrent trivial episodes with a bounded driver, and a grader killed and a node removed
mid-run with nothing lost or duplicated. No duration is asserted: intervals are compared
with each other only."""

from __future__ import annotations

import gc
import itertools
import json
import os
import signal
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from cudaenv.cluster import ClusterSession
from cudaenv.cluster.grader import Interval
from tests.cluster.conftest import SimCluster, cpu_problem

pytestmark = pytest.mark.slow
BENCH = "./test.out --perf"
GRADE = {"rounds": 2, "benchmark": True}  # solve mode, benchmarked where a problem can be


def no_overlap(intervals: dict[str, list[Interval]]) -> None:
    for where, ivs in intervals.items():
        ivs = sorted(ivs, key=lambda i: i.start)
        for a, b in itertools.pairwise(ivs):
            assert a.end <= b.start, f"{where}: {a.episode} and {b.episode} overlap"


def session(sim: SimCluster, agent: str = "oracle", **kw: object) -> ClusterSession:
    base: dict[str, object] = {"ray_address": sim.address, "grader_cpus": 0, "worker_cpus": 1}
    env = kw.pop("env_options", {"mode": "solve", "grade_options": GRADE})
    return ClusterSession(agent, env_options=env, **{**base, **kw})  # type: ignore[arg-type]


def test_episodes_spread_over_nodes_graders_exclusive_baselines_once(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    suite = tmp_path / "suite"
    benched = [cpu_problem(suite, f"bench-{i}", bench=BENCH) for i in range(2)]
    gpu = cpu_problem(suite, "needs-gpu", gpu=True, bench=BENCH)
    plain = cpu_problem(suite, "plain")
    with session(sim_cluster, episode_workers=3) as s:
        assert sorted(g.name for g in s.service.graders) == ["cpu-0", "cpu-1", "gpu-0"]
        results = list(s.run([*benched, gpu, plain], attempts=3, out_dir=tmp_path / "out"))
        status = s.status()
        intervals = s.service.intervals()
        baselines = s.service.baselines()
        nodes = {name: node for name, (_, node) in s.worker_pids().items()}

    assert sorted(r.key for r in results) == sorted(
        f"{t}#{a}" for t in ("bench-0", "bench-1", "needs-gpu", "plain") for a in range(3)
    )
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    by_task = {t: [r for r in results if r.task_id == t] for t in {r.task_id for r in results}}
    for r in by_task["bench-0"] + by_task["bench-1"]:
        v = r.verdict
        assert v.passed is True and v.stages["benchmark"].status == "ok", v.reason
        assert v.stages["build"].cached  # the worker's build, shipped: the grader compiled nothing
        assert v.stages["static"].cached  # the worker's static checks, carried, not rerun
        assert v.speedup is not None
    for r in by_task["needs-gpu"]:  # a GPU grader ran it; no real GPU behind it here
        assert r.verdict.passed is None and r.verdict.stages["test"].status == "skipped"
    for r in by_task["plain"]:
        assert r.verdict.passed is True and r.verdict.stages["benchmark"].status == "skipped"

    graded = {iv.episode: where.split("#")[0] for where, ivs in intervals.items() for iv in ivs}
    assert {graded[r.key] for r in by_task["needs-gpu"]} == {"gpu-0"}
    assert {graded[r.key][:4] for r in by_task["bench-0"] + by_task["bench-1"]} == {"cpu-"}
    assert not any(r.key in graded for r in by_task["plain"])  # it never waited for a grader
    no_overlap(intervals)

    # episodes ran on workers of more than one node; the stored results are the yielded ones
    ran_on = {nodes.get(r.worker.split(":")[0]) for r in results}
    assert len(ran_on - {None}) >= 2
    stored = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(x["key"] for x in stored) == sorted(r.key for r in results)

    # one baseline per benchmarked problem on this CPU model, timed once, whichever grader
    assert baselines.entries == 2 and set(baselines.published.values()) == {1}
    assert set(baselines.claims.values()) == {1}

    assert status.episodes_done == 12 and status.episodes_in_flight == 0
    assert {g.name for g in status.graders if g.alive and g.ready} == {"cpu-0", "cpu-1", "gpu-0"}
    assert status.cpu_busy_fraction is not None and 0 < status.cpu_busy_fraction <= 1
    assert "graders 3/3" in status.line()


def test_evaluation_is_graded_before_training_and_problems_take_turns(
    sim_cluster: SimCluster,
) -> None:
    import ray

    from cudaenv.cluster import _ray
    from cudaenv.cluster.baselines import BaselineStore
    from cudaenv.cluster.scheduler import GraderSpec, Scheduler, SchedulerSettings
    from cudaenv.cluster.seam import ExclusiveWork

    _ray.join(sim_cluster.address)
    store = ray.remote(BaselineStore).options(num_cpus=0).remote()
    spec = GraderSpec(name="cpu-q", kind="cpu", options={"resources": {"cudaenv_grader": 1}})
    sched = (
        ray.remote(Scheduler)
        .options(num_cpus=0, max_concurrency=100)
        .remote([spec], store, SchedulerSettings(max_inflight=1))
    )
    plan = [("t-a1", 1), ("t-a2", 1), ("t-a3", 1), ("t-b1", 1), ("e-c1", 0), ("e-d1", 0)]
    plan.append(("e-c2", 0))
    refs = []
    try:
        for n, p in plan:  # one at a time: an async actor need not start calls in order
            work = ExclusiveWork(kind="cpu", call=None, priority=p, task=n[:3], episode=n)
            refs.append(sched.submit.remote(work))
            while ray.get(sched.status.remote()).queued["cpu"] < len(refs):
                time.sleep(0.02)
        ray.get(sched.start.remote())  # now the grader starts and takes them one at a time
        outcomes = ray.get(refs, timeout=300)
    finally:
        ray.get(sched.stop.remote())
        ray.kill(sched)
        ray.kill(store)
    order = [o.interval.episode for o in sorted(outcomes, key=lambda o: o.interval.start)]
    # evaluation first; within a priority, problems take turns (which problem starts the
    # rotation is not part of the contract) and each problem's work keeps its order
    evaluation = ({"e-c1", "e-d1"}, ["e-c2"])
    training = ({"t-a1", "t-b1"}, ["t-a2", "t-a3"])
    for got, (first_turn, rest) in ((order[:3], evaluation), (order[3:], training)):
        assert set(got[:2]) == first_turn and got[2:] == rest, order


def test_512_concurrent_trivial_episodes_with_a_bounded_driver(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    plain = cpu_problem(tmp_path / "suite", "trivial")
    with session(
        sim_cluster, "nop", episode_workers=4, episodes_per_worker=8, window=512, env_options={}
    ) as s:
        gc.collect()
        tracemalloc.start()
        start, _ = tracemalloc.get_traced_memory()
        most, keys, bad = 0, Counter(), []
        for r in s.run([plain], attempts=512):
            most = max(most, s.inflight + 1)
            keys[r.key] += 1
            # nothing submitted: graded on its worker, failed
            if r.status != "ok" or r.verdict is None or r.verdict.passed is not False:
                bad.append((r.key, r.status, r.error))
        gc.collect()
        end, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert not bad, bad[:5]
    assert len(keys) == 512 and set(keys.values()) == {1}
    assert most == 512  # every episode was out at once
    # bounded: the driver keeps no result; its heap returns to where it was
    assert peak - start < 64 << 20 and end - start < 4 << 20


def test_eval_cli_runs_on_the_cluster(sim_cluster: SimCluster, tmp_path: Path) -> None:
    """``cudaenv eval --ray-address``: the cluster's results in the driver's store, summarised
    (the status display polls beside it; its rendering: tests/test_cli_cluster_status.py)."""
    from typer.testing import CliRunner

    from cudaenv.cli import app

    suite = tmp_path / "suite"
    for i in range(2):
        cpu_problem(suite, f"cli-{i}")
    out = tmp_path / "out"
    args = ["eval", "--ray-address", sim_cluster.address, "--source", str(suite)]
    args += ["--agent", "oracle", "--attempts", "2", "--workers", "2", "--out", str(out)]
    res = CliRunner().invoke(app, args, terminal_width=200)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status_counts"] == {"ok": 4, "agent_error": 0, "infrastructure": 0}
    assert summary["pass_at_k"]["pass@1"] == 1.0
    keys = [json.loads(x)["key"] for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(keys) == sorted(f"cli-{i}#{a}" for i in range(2) for a in range(2))


def test_grader_killed_and_node_removed_mid_run_nothing_lost_or_duplicated(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    suite = tmp_path / "suite"
    slow = "sleep 0.2; ./test.out --perf"  # a benchmark round that is still running when hit
    problems = [cpu_problem(suite, f"fault-{i}", bench=slow) for i in range(2)]
    out = tmp_path / "out"
    killed = removed = False
    with session(sim_cluster, episode_workers=3, max_retries=4) as s:
        results = []
        for r in s.run(problems, attempts=6, out_dir=out):
            results.append(r)
            if not killed:
                killed = kill_a_running_grader(s)
            elif not removed and len(results) >= 4:
                sim_cluster.cluster.remove_node(sim_cluster.nodes.pop("a"))
                removed = True
        status = s.status()
        baselines = s.service.baselines()
        intervals = s.service.intervals()
    assert killed and removed
    keys = [json.loads(x)["key"] for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(keys) == sorted(f"fault-{i}#{a}" for i in range(2) for a in range(6))
    assert len(keys) == len(set(keys)) == len(results)
    assert all(r.status == "ok" and r.verdict.passed is True for r in results), [
        (r.key, r.error, r.verdict and r.verdict.reason) for r in results
    ]
    assert sum(g.restarts for g in status.graders) >= 1  # the killed grader was replaced
    assert status.grades_retried + status.episodes_retried >= 1
    assert set(baselines.published.values()) == {1}
    no_overlap(intervals)


def kill_a_running_grader(s: ClusterSession) -> bool:
    """SIGKILL a CPU grader's process while it holds its device; False if none ran within
    the wait (the next result tries again)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for g in s.service.status().graders:
            if g.kind == "cpu" and g.running and g.pid:
                os.kill(g.pid, signal.SIGKILL)
                return True
        time.sleep(0.05)
    return False
