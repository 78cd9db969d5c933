"""``cudaenv eval``: run an agent over a suite, stream results to DIR, summarise pass@k.

Resumable: DIR/results.jsonl and DIR/trajectories.jsonl are appended as episodes finish and a
rerun with the same --out skips what is done. Infrastructure failures are counted apart and
never scored as the agent's failures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cudaenv.cli.common import (
    GpusOption,
    GroupsOpt,
    IdsOpt,
    ImageOption,
    IsolationOption,
    KOpt,
    ModeOpt,
    OutOpt,
    SandboxOpt,
    SourceOpt,
    WorkersOpt,
    check_mode,
    console,
    err_console,
    friendly,
    sandbox_options,
    selected,
    split_csv,
)
from cudaenv.cli.progress import (
    Reporter,
    StatusMonitor,
    left_out,
    summary_table,
    verdict_status,
)
from cudaenv.cli.runs import INTERRUPTED_EXIT, interrupted_line, stop_on_interrupt, write_summary
from cudaenv.errors import SpecError

if TYPE_CHECKING:
    from cudaenv.cluster.session import ClusterRun
    from cudaenv.problems.model import Problem
    from cudaenv.rollout.episode import EpisodeResult

MODEL_AGENTS = ("openai", "claude-code", "opencode")  # agents that talk to a model
GATEWAY_AGENTS = ("claude-code", "opencode")  # CLIs whose calls go through the model gateway


def _with_prices(spec: Any, agent: str, prices: Path | None) -> Any:
    """The agent spec with a gateway price table (``--prices FILE``, claude-code/opencode)."""
    if prices is None:
        return spec
    if agent not in GATEWAY_AGENTS:
        raise SpecError(
            f"--prices applies to --agent {' | '.join(GATEWAY_AGENTS)}, not {agent!r}",
            field="prices",
        )
    from cudaenv.gateway import PriceTable

    base = {"name": spec} if isinstance(spec, str) else dict(spec)
    return base | {"prices": PriceTable.load(prices)}


def _run_cost(out: Path, planned: set[str]) -> dict[str, Any]:
    """The cost totals of the planned episodes' latest trajectories (``summary["cost"]``)."""
    from cudaenv.grading.summary import cost_stats
    from cudaenv.rollout import ResultStore

    latest: dict[str, dict[str, Any]] = {}
    for rec in ResultStore(out, "trajectories").records():
        if rec.get("key") in planned and isinstance(rec.get("trajectory"), dict):
            latest[rec["key"]] = rec["trajectory"]
    return cost_stats(latest.values())


def _agent_spec(agent: str, model: str | None, base_url: str | None, max_turns: int | None) -> Any:
    """A registered agent's name, or its name with the model options (model agents only)."""
    options = {"model": model, "base_url": base_url, "max_turns": max_turns}
    options = {key: value for key, value in options.items() if value}
    if agent not in MODEL_AGENTS:
        if options:
            raise SpecError(
                f"--model/--base-url/--max-turns apply to --agent {' | '.join(MODEL_AGENTS)}, "
                f"not {agent!r}",
                field="agent",
            )
        return agent
    if agent == "openai" and not model:
        raise SpecError("--agent openai needs --model", field="model")
    return {"name": agent, **options} if options else agent


def _graded_rows(records: list[dict[str, Any]], mode: str) -> list[Any]:
    """Results as ``Graded`` rows: an agent error is a failed sample, an infrastructure fault a
    sample marked ``failure="infrastructure"`` (excluded from pass@k by ``summarise``)."""
    from cudaenv.grading.summary import Graded
    from cudaenv.grading.verdict import Verdict

    rows = []
    for rec in records:
        verdict = Verdict.model_validate(rec["verdict"]) if rec.get("verdict") else None
        reason = (rec.get("error") or "").splitlines()[0] if rec.get("error") else ""
        if rec["status"] == "infrastructure":
            verdict = (verdict or Verdict(task_id=rec["task_id"], mode=mode)).model_copy(
                update={
                    "failure": "infrastructure",
                    "passed": None,
                    "reason": reason or "infrastructure",
                }
            )
        elif verdict is None:
            verdict = Verdict(
                task_id=rec["task_id"],
                mode=mode,
                passed=False,
                failure="agent",
                reason=reason or rec["status"],
            )
        rows.append(
            Graded(
                task_id=rec["task_id"], group=rec["group"], sample=rec["attempt"], verdict=verdict
            )
        )
    return rows


def _plot_speedups(rows: list[Any], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: skipped the speedup plot (pip install matplotlib)"
    speeds = sorted(r.verdict.speedup for r in rows if r.verdict.passed and r.verdict.speedup)
    if not speeds:
        return "no passing samples with a speedup: no plot"
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist(speeds, bins=min(30, max(5, len(speeds) // 2)), color="#4c72b0")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("speedup over baseline (x)")
    ax.set_ylabel("samples")
    ax.set_title(f"speedup distribution ({len(speeds)} passing samples)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"speedup plot: {path}"


def _on_cluster(
    spec: Any,
    problems: list[Problem],
    attempts: int,
    workers: int,
    out: Path,
    env_options: dict[str, Any],
    address: str,
) -> ClusterRun:
    """The cluster path (``cudaenv.cluster``): same results, same store; its status live."""
    from cudaenv.cluster import run_cluster_episodes

    return run_cluster_episodes(
        spec,
        problems,
        attempts=attempts,
        out_dir=out,
        env_options=env_options,
        ray_address=address,
        episode_workers=workers,
        priority="evaluation",
    )


@friendly
def eval_cmd(
    out: OutOpt,
    agent: Annotated[
        str,
        typer.Option("--agent", "-a", help="oracle | nop | openai | claude-code | opencode"),
    ] = "oracle",
    model: Annotated[
        str | None, typer.Option("--model", help="model name (openai, claude-code, opencode)")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="model server: OpenAI-compatible (openai, opencode) or Anthropic (claude-code)",
        ),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="model replies per episode")
    ] = None,
    source: SourceOpt = "builtin",
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
    mode: ModeOpt = "solve",
    attempts: Annotated[
        int, typer.Option("--attempts", "-n", min=1, help="episodes per problem")
    ] = 1,
    k: KOpt = "1",
    workers: WorkersOpt = 2,
    ray: Annotated[bool, typer.Option("--ray/--no-ray", help="run episodes on Ray actors")] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="run on an existing Ray cluster (ADDR, or 'auto'): episode workers anywhere, "
            "GPU stages on one grader per GPU (docs/CLUSTER.md)",
        ),
    ] = None,
    sandbox: SandboxOpt = "local",
    image: ImageOption = None,
    gpus: GpusOption = None,
    isolation: IsolationOption = None,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, help="steps before truncation")
    ] = 50,
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="YAML/JSON price table {model: {input_per_mtok, output_per_mtok}} for the "
            "gateway's per-call cost (claude-code, opencode); summary.json sums it",
        ),
    ] = None,
) -> None:
    """Evaluate an agent: episodes in parallel, DIR/summary.json with pass@k by group."""
    from cudaenv.grading.summary import summarise
    from cudaenv.rollout import ResultStore, latest_results, run_episodes
    from cudaenv.rollout.store import claim_dir

    check_mode(mode)
    if mode == "repair":
        raise SpecError(
            "repair mode needs a failing solution per problem; `cudaenv eval` runs solve and optimize",
            field="mode",
        )
    box_options = sandbox_options(sandbox, image, gpus, isolation)
    ks = sorted({int(x) for x in split_csv(k) or ["1"]})
    spec = _with_prices(_agent_spec(agent, model, base_url, max_turns), agent, prices)
    suite = selected(source, ids, groups)
    problems = list(suite)
    if mode == "optimize":
        problems = [p for p in problems if p.has_benchmark and p.baseline_solution is not None]
        skipped = len(suite) - len(problems)
        if skipped:
            console.print(
                f"optimize mode: skipped {skipped} problem(s) without a benchmark and baseline"
            )
    if not problems:
        raise SpecError("no problems selected")
    if max(ks) > attempts:
        console.print(f"note: pass@{max(ks)} needs --attempts >= {max(ks)}; it is reported as '-'")
    env_options = {"mode": mode, "sandbox": sandbox, "source": source, "max_steps": max_steps}
    if box_options:
        env_options["sandbox_options"] = box_options
    planned = {f"{p.task_id}#{a}" for p in problems for a in range(attempts)}
    claim = claim_dir(out)  # writable and ours (one line, exit 2 if not) before any episode
    store = ResultStore(out, "results")
    before = {
        key: r
        for key, r in latest_results(store).items()
        if key in planned and r.get("status") != "infrastructure"
    }

    with (
        stop_on_interrupt() as stop,
        Reporter(console, "episodes", len(planned), completed=len(before)) as report,
    ):
        shown: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        if ray_address:
            cluster = _on_cluster(spec, problems, attempts, workers, out, env_options, ray_address)
            # its status: a table under the bar when stderr is a terminal, else a line
            shown = StatusMonitor(cluster.status, err_console).attach(report)
            results: Iterator[EpisodeResult] = cluster
        else:
            results = run_episodes(
                spec,
                problems,
                attempts=attempts,
                workers=workers,
                use_ray=ray,
                out_dir=out,
                env_options=env_options,
            )
        try:
            with shown:
                for res in results:
                    v, status = res.verdict, res.status
                    if status == "ok":
                        status = verdict_status(v.passed, v.failure) if v else "failed"
                    why = res.error or (v.reason if v and not v.passed else "")
                    report.item(res.key, status, res.seconds, why, warn=res.status != "ok")
        finally:  # close now, not when `results` goes: the store is sealed before the summary
            close = getattr(results, "close", None)
            if close is not None:
                close()

    records = [r for key, r in latest_results(store).items() if key in planned]
    if stop["signals"]:
        err_console.print(
            interrupted_line(len(records), len(planned), "episodes"), soft_wrap=True, markup=False
        )
    rows = _graded_rows(records, mode)
    summary = summarise(rows, ks)
    statuses = {
        s: sum(r["status"] == s for r in records) for s in ("ok", "agent_error", "infrastructure")
    }
    summary.update(
        {
            "agent": spec if isinstance(spec, str) else spec["name"],
            "mode": mode,
            "source": source,
            "attempts": attempts,
            "status_counts": statuses,
            "interrupted": bool(stop["signals"]),
            "cost": _run_cost(out, planned),
        }
    )
    if isinstance(spec, dict) and spec.get("model"):
        summary["model"] = spec["model"]
    write_summary(out, summary)
    title = f"{summary['agent']} on {source} ({mode}): {summary['problems']} problems"
    console.print(summary_table(summary, ks, title))
    for line in left_out(summary):
        console.print(line, highlight=False)
    if mode == "optimize":
        console.print(_plot_speedups(rows, out / "speedup.png"))
    console.print(f"results: {store.path}  summary: {out / 'summary.json'}")
    claim.release()
    if stop["signals"]:
        raise typer.Exit(INTERRUPTED_EXIT)


def register(app: typer.Typer) -> None:
    """Add ``eval`` to ``app``."""
    app.command("eval")(eval_cmd)
