"""``cudaenv eval``: run an agent over a suite, stream results to DIR, summarise pass@k.

DIR/run.json (the manifest: agent, model, sampling, limits, mode, sandbox, cudaenv version,
problem hashes) is written before the first episode; DIR/results.jsonl and
DIR/trajectories.jsonl are appended as episodes finish. A rerun with the same --out resumes
(skips what is done) only when its settings match the manifest: otherwise it stops with one
line naming the difference and appends nothing (``--force`` resumes anyway, recorded).
Infrastructure failures are counted apart and never scored as the agent's failures.
``--mode repair --from RUN`` starts one repair episode per failed sample of RUN (per
``--attempts``) from that sample's files and grading output.
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
    SinceOpt,
    UntilOpt,
    WorkersOpt,
    check_mode,
    console,
    err_console,
    friendly,
    parse_day,
    parse_ks,
    sandbox_options,
    selected,
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
    from cudaenv.agents.sampling import Sampling
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


SAMPLING_FLAGS = {
    "temperature": "--temperature",
    "top_p": "--top-p",
    "max_tokens": "--max-tokens",
    "seed": "--seed",
}


def _sampling(agent: str, flags: dict[str, Any]) -> Sampling | None:
    """The sampling of a model agent from the flags (unset ones take their defaults: see
    :mod:`cudaenv.agents.sampling`); None for agents that call no model."""
    from pydantic import ValidationError

    from cudaenv.agents.sampling import Sampling

    given = {k: v for k, v in flags.items() if v is not None}
    if agent != "openai":
        if given:
            names = " ".join(SAMPLING_FLAGS[k] for k in given)
            raise SpecError(f"{names} apply to --agent openai, not {agent!r}", field="agent")
        return None
    try:
        return Sampling(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = SAMPLING_FLAGS.get(str(err["loc"][0]), str(err["loc"][0]))
        raise SpecError(f"{flag}: {err['msg']}, got {err.get('input')!r}", field=flag) from None


def _agent_spec(
    agent: str,
    model: str | None,
    base_url: str | None,
    max_turns: int | None,
    sampling: Sampling | None = None,
) -> Any:
    """A registered agent's name, or its name with the model options (model agents only)."""
    options: dict[str, Any] = {"model": model, "base_url": base_url, "max_turns": max_turns}
    options = {key: value for key, value in options.items() if value}
    if sampling is not None:
        options["sampling"] = sampling.model_dump()
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


def _plot_speedups(rows: list[Any], path: Path) -> str:
    """The optimize-mode speedup histogram (:func:`cudaenv.evaluation.plots.speedup_plot`)."""
    from cudaenv.evaluation.plots import speedup_plot

    return speedup_plot([r.verdict for r in rows], path)


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
    temperature: Annotated[
        float | None,
        typer.Option("--temperature", help="openai: sampling temperature (default 1.0)"),
    ] = None,
    top_p: Annotated[
        float | None, typer.Option("--top-p", help="openai: nucleus sampling (default 1.0)")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", help="openai: tokens per reply (default: the server's)"),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed", help="openai: sampling seed S; attempt a sends S + a (default: none sent)"
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", "-s", help="problem source (default builtin; repair: RUN's)"),
    ] = None,
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    mode: ModeOpt = "solve",
    repair_from: Annotated[
        Path | None,
        typer.Option(
            "--from", help="--mode repair: the run directory whose failed samples are repaired"
        ),
    ] = None,
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
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="resume DIR although its run.json differs (recorded in run.json)"
        ),
    ] = False,
) -> None:
    """Evaluate an agent: episodes in parallel, DIR/summary.json with pass@k by group."""
    from cudaenv.grading.summary import summarise
    from cudaenv.rollout import ResultStore, latest_results, run_episodes
    from cudaenv.rollout.episode import resolve_agent
    from cudaenv.rollout.manifest import build_manifest, check_resume, write_manifest
    from cudaenv.rollout.rundir import RunDir, graded_rows, repair_plan
    from cudaenv.rollout.store import claim_dir

    check_mode(mode)
    if (mode == "repair") != (repair_from is not None):
        raise SpecError(
            "--mode repair needs --from RUN (a run directory whose failed samples it repairs)"
            if mode == "repair"
            else f"--from applies to --mode repair, not --mode {mode}",
            field="from",
        )
    if repair_from is not None and ray_address:
        raise SpecError("--mode repair runs on threads or --ray, not --ray-address", field="from")
    box_options = sandbox_options(sandbox, image, gpus, isolation)
    ks = parse_ks(k, attempts)
    flags = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
    sampling = _sampling(agent, flags)
    spec = _with_prices(_agent_spec(agent, model, base_url, max_turns, sampling), agent, prices)
    agent_obj = resolve_agent(spec)  # a bad spec or a missing extra: one line, before any work
    if source is None:
        run_manifest = RunDir(repair_from).manifest if repair_from is not None else None
        source = run_manifest.source if run_manifest is not None else "builtin"
    suite = selected(source, ids, groups, since, until)
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
    work: list[Any] = problems
    repair: dict[str, Any] | None = None
    if repair_from is not None:
        work, repair = repair_plan(repair_from, problems, attempts)
        if not work:
            raise SpecError(f"{repair_from} has no failed samples with stored files to repair")
    if sampling is not None and sampling.greedy and max(ks) > 1:
        err_console.print(
            f"warning: pass@{max(ks)} at --temperature 0: a deterministic server gives every "
            "attempt the same reply, so pass@k equals pass@1; sample with a temperature > 0",
            soft_wrap=True,
            markup=False,
        )
    env_options = {"mode": mode, "sandbox": sandbox, "source": source, "max_steps": max_steps}
    if box_options:
        env_options["sandbox_options"] = box_options
    if repair_from is not None:
        planned = {f"{j.problem.task_id}#{j.attempt}" for j in work}
    else:
        planned = {f"{p.task_id}#{a}" for p in problems for a in range(attempts)}
    window = (parse_day("--since", since), parse_day("--until", until))
    manifest = build_manifest(
        agent, agent_obj, sampling, env_options, problems, window, repair_from
    )
    claim = claim_dir(out)  # writable and ours (one line, exit 2 if not) before any episode
    store = ResultStore(out, "results")
    stored = next(iter(store.records()), None) is not None
    manifest = check_resume(out, manifest, has_results=stored, force=force)
    write_manifest(out, manifest)
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
                work,
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
    rows = graded_rows(records, mode)
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
            "since": window[0],
            "until": window[1],
            "sampling": sampling.model_dump() if sampling is not None else None,
            "forced": any(r.forced for r in manifest.history),
        }
    )
    if manifest.model is not None:
        summary["model"] = manifest.model
    if repair is not None:
        summary["repair"] = repair
    write_summary(out, summary)
    title = f"{summary['agent']} on {source} ({mode}): {summary['problems']} problems"
    console.print(summary_table(summary, ks, title))
    for line in left_out(summary):
        console.print(line, highlight=False)
    if mode == "optimize":
        console.print(_plot_speedups(rows, out / "speedup.png"), highlight=False)
    console.print(f"results: {store.path}  summary: {out / 'summary.json'}")
    claim.release()
    if stop["signals"]:
        raise typer.Exit(INTERRUPTED_EXIT)


def register(app: typer.Typer) -> None:
    """Add ``eval`` to ``app``."""
    app.command("eval")(eval_cmd)
