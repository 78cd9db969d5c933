"""CLI commands that grade: ``grade`` (a solutions datapack or directory), ``validate`` and
``baseline`` (the baseline-only timing pass that writes the baseline cache)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

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
    console,
    err_console,
    friendly,
    sandbox_options,
    selected,
    split_csv,
)
from cudaenv.cli.progress import Reporter, left_out, summary_table, timed, verdict_status
from cudaenv.cli.runs import INTERRUPTED_EXIT, interrupted_line, stop_on_interrupt, write_summary
from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.model import Solution, SourceFile

if TYPE_CHECKING:
    from cudaenv.grading.release_gate import ValidationRow


def _solutions_from(path: Path, rejected: list[SpecError]) -> list[Solution]:
    """A solutions datapack (malformed lines go to ``rejected``, the rest are graded), or a
    directory with one sub-directory of files per task_id."""
    if path.is_file():
        from cudaenv.problems.datapack import read_solution_datapack

        return read_solution_datapack(path, rejected=rejected)
    if not path.is_dir():
        raise SourceNotFoundError(f"solutions {path} do not exist")
    sols = []
    for sub in sorted(p for p in path.iterdir() if p.is_dir()):
        files = [
            SourceFile(path=f.relative_to(sub).as_posix(), content=f.read_text(encoding="utf-8"))
            for f in sorted(sub.rglob("*"))
            if f.is_file()
        ]
        sols.append(Solution(task_id=sub.name, files=files))
    return sols


def failures_table(summary: dict, limit: int = 40) -> Table | None:
    """The failed, infrastructure and suspected samples by group, deciding stage and reason
    (``summarise``'s ``failures``): false failures at a glance."""
    rows = summary.get("failures") or []
    if not rows:
        return None
    table = Table(title="failures by group, stage and reason")
    for col in ("group", "kind", "stage", "count", "reason", "e.g."):
        table.add_column(col, overflow="fold", justify="right" if col == "count" else "left")
    for r in rows[:limit]:
        table.add_row(
            r["group"], r["kind"], r["stage"], str(r["count"]), r["reason"], " ".join(r["examples"])
        )
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more in summary.json (failures)"
    return table


@friendly
def grade_cmd(
    solutions: Annotated[
        Path, typer.Argument(help="solutions datapack (.tar.gz) or directory <task_id>/<files>")
    ],
    source: SourceOpt = "builtin",
    workers: WorkersOpt = 2,
    out: OutOpt = Path("graded"),
    k: KOpt = "1",
    mode: ModeOpt = "solve",
    sandbox: SandboxOpt = "local",
    image: ImageOption = None,
    gpus: GpusOption = None,
    isolation: IsolationOption = None,
    grading_policy: Annotated[
        str | None,
        typer.Option(
            "--grading-policy",
            help="grade every problem by this policy (strict, computeeval, repository) instead "
            "of the one its source gives it",
        ),
    ] = None,
) -> None:
    """Grade solutions in parallel; write DIR/graded.jsonl and DIR/summary.json (resumable:
    a rerun grades what is missing and what failed for infrastructure reasons). Malformed
    lines of a pack are reported by line number and the rest graded (exit 1). The summary
    counts failures by group, deciding stage and reason."""
    from cudaenv.grading.grader import grade
    from cudaenv.grading.summary import Graded, summarise
    from cudaenv.problems.loader import load_suite
    from cudaenv.rollout.pool import DaemonPool
    from cudaenv.rollout.runner import latest_results
    from cudaenv.rollout.store import ResultStore, claim_dir

    options = sandbox_options(sandbox, image, gpus, isolation)
    suite = load_suite(source)
    if grading_policy is not None:
        try:
            suite = suite.with_grading_policy(grading_policy)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--grading-policy") from None
    rejected: list[SpecError] = []
    sols = _solutions_from(solutions, rejected)
    ks = [int(x) for x in split_csv(k) or ["1"]]
    missing = sorted({s.task_id for s in sols} - set(suite.ids))
    if missing:  # before --out is created: a bad input leaves nothing behind
        raise SourceNotFoundError(f"solutions for unknown task_id(s) {missing[:5]} in {source}")
    claim = claim_dir(out)  # writable and ours (one line, exit 2 if not) before any grading
    store = ResultStore(out, "graded")
    done = {  # an infrastructure failure is graded again
        key
        for key, r in latest_results(store).items()
        if (r.get("verdict") or {}).get("failure") != "infrastructure"
    }
    counts: dict[str, int] = {}
    jobs = []
    for sol in sols:
        sample = counts.get(sol.task_id, 0)
        counts[sol.task_id] = sample + 1
        key = f"{sol.task_id}#{sample}"
        if key not in done:
            jobs.append((key, sample, sol))

    def run(job: tuple[str, int, Solution]) -> dict:
        key, sample, sol = job
        problem = suite[sol.task_id]
        verdict = grade(
            problem,
            sol,
            mode=mode,  # type: ignore[arg-type]
            sandbox=sandbox,
            sandbox_options=options,
        )
        return {
            "key": key,
            "task_id": sol.task_id,
            "group": problem.group,
            "sample": sample,
            "verdict": verdict.model_dump(mode="json"),
        }

    progress = Reporter(console, "grading", len(sols), completed=len(sols) - len(jobs))
    pool = DaemonPool(workers, "cudaenv-grade")  # an interrupt abandons, never awaits, gradings
    with stop_on_interrupt() as stop, progress as report:
        for fut in as_completed([pool.submit(run, j) for j in jobs]):
            record = fut.result()
            store.append(record)
            v = record["verdict"]
            status = verdict_status(v["passed"], v["failure"])
            why = "" if v["passed"] else v["reason"]
            report.item(record["key"], status, v["seconds"], why, warn=status == "infrastructure")
    pool.shutdown()
    latest = latest_results(store)
    if stop["signals"]:
        err_console.print(
            interrupted_line(len(latest), len(sols), "gradings"), soft_wrap=True, markup=False
        )
    rows = [Graded.model_validate(r) for r in latest.values()]
    summary = summarise(rows, ks)
    summary["interrupted"] = bool(stop["signals"])
    summary["rejected_lines"] = [str(exc) for exc in rejected]
    write_summary(out, summary)
    console.print(summary_table(summary, ks, f"grade {solutions.name} on {source}"))
    if (failures := failures_table(summary)) is not None:
        console.print(failures)
    for line in left_out(summary):
        console.print(line, highlight=False)
    console.print(f"results: {store.path}  summary: {out / 'summary.json'}")
    claim.release()
    for exc in rejected:
        err_console.print(f"rejected: {exc}", soft_wrap=True, markup=False)
    if stop["signals"]:
        raise typer.Exit(INTERRUPTED_EXIT)
    if rejected:
        raise typer.Exit(1)


def _validate_status(row: ValidationRow) -> str:
    """ok, FAIL, or ok with the reference not run (a build is all this machine could check)."""
    from cudaenv.grading.summary import not_run

    if not row.ok:
        return "FAIL"
    ref = row.verdicts.get("reference")
    return "ok (not run: no GPU)" if ref is not None and not_run(ref) else "ok"


@friendly
def validate(
    source: Annotated[
        str, typer.Argument(help="builtin, a directory, a datapack, or hf://...")
    ] = "builtin",
    sandbox: SandboxOpt = "local",
    workers: WorkersOpt = 2,
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="also write the rows as JSON")
    ] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="benchmark rounds (GPU)")] = 3,
    image: ImageOption = None,
    gpus: GpusOption = None,
    isolation: IsolationOption = None,
    sample: Annotated[
        int | None,
        typer.Option("--sample", help="validate N problems spanning every family (or group)"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="which --sample")] = 0,
) -> None:
    """The release gate: specs valid, references build (and pass with a GPU), NOP fails, and
    a generated problem's mutants fail where its tests run (``validate generated --sample N``)."""
    from cudaenv.grading.release_gate import validate_problem
    from cudaenv.sandbox.base import declare_workers

    options = sandbox_options(sandbox, image, gpus, isolation)

    suite = selected(source, ids, groups)
    if sample is not None:
        from cudaenv.families import sample as spanning
        from cudaenv.problems.suite import Suite

        suite = Suite(spanning(list(suite), sample, seed), source=source)
    rows = []
    progress = Reporter(console, "validating", len(suite))
    declare_workers(workers)  # the sandboxes' default memory cap shares the host among them
    with progress as report, ThreadPoolExecutor(workers) as pool:
        futs = [
            pool.submit(
                timed(validate_problem), p, sandbox=sandbox, sandbox_options=options, rounds=rounds
            )
            for p in suite
        ]
        for fut in as_completed(futs):
            row, seconds = fut.result()
            rows.append(row)
            report.item(row.task_id, _validate_status(row), seconds, row.problem, warn=not row.ok)
    rows.sort(key=lambda r: (r.group, r.task_id))
    skipped = sum(_validate_status(r) == "ok (not run: no GPU)" for r in rows)
    title = f"validate {source}: {sum(r.ok for r in rows)}/{len(rows)} ok"
    if skipped:
        title += f", {skipped} of them compiled only (GPU stages not run: no GPU)"
    table = Table(title=title)
    for col in ("task_id", "group", "reference", "nop", "baseline", "speedup", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r.task_id,
            r.group,
            r.reference,
            r.nop,
            r.baseline,
            f"{r.speedup:.2f}x" if r.speedup else "-",
            _validate_status(r).replace("ok", "[green]ok[/]", 1)
            if r.ok
            else f"[red]FAIL[/] {r.problem}",
        )
    console.print(table)
    if json_out:
        json_out.write_text(json.dumps([r.model_dump() for r in rows], indent=2))
    if not all(r.ok for r in rows):
        raise typer.Exit(1)


@friendly
def baseline(
    source: Annotated[
        str, typer.Argument(help="builtin, a directory, a datapack, or hf://...")
    ] = "builtin",
    sandbox: SandboxOpt = "local",
    ids: IdsOpt = None,
    groups: GroupsOpt = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="timed rounds")] = 5,
    image: ImageOption = None,
    gpus: GpusOption = None,
    isolation: IsolationOption = None,
) -> None:
    """Time each problem's baseline alone (no solution runs) and store it in the baseline
    cache with its provenance: the only writer besides ``validate`` (grades never write it)."""
    from cudaenv.errors import CudaEnvError
    from cudaenv.grading.baseline_pass import time_baseline

    options = sandbox_options(sandbox, image, gpus, isolation)
    suite = selected(source, ids, groups)
    failed = 0
    for p in suite:
        if p.baseline_solution is None or not p.benchmark_command:
            continue
        try:
            t = time_baseline(
                p, sandbox=sandbox, sandbox_options=options, rounds=rounds, writer="cli baseline"
            )
            console.print(f"{p.task_id}: median {t.median_ms:.3f} ms over {len(t.samples_ms)}")
        except CudaEnvError as exc:
            failed += 1
            err_console.print(f"{p.task_id}: {exc}")
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``grade``, ``validate`` and ``baseline`` to ``app``."""
    app.command("grade")(grade_cmd)
    app.command()(validate)
    app.command()(baseline)
