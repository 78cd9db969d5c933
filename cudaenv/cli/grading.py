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
from cudaenv.cli.progress import Reporter, left_out, summary_table, timed, verdict_status
from cudaenv.cli.runs import INTERRUPTED_EXIT, interrupted_line, stop_on_interrupt, write_summary
from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.model import Solution, SourceFile

if TYPE_CHECKING:
    from cudaenv.grading.release_gate import ValidationRow
    from cudaenv.rollout.rundir import RunDir


def _solutions_from(path: Path, rejected: list[SpecError]) -> list[Solution]:
    """A solutions datapack (malformed lines go to ``rejected``, the rest are graded), a
    SWE-bench predictions JSONL, a ``<task_id>.patch`` file, or a directory with one
    sub-directory of files (or one ``<task_id>.patch``) per task_id (a file that cannot be read
    as UTF-8 text, a binary left beside the sources, goes to ``rejected`` too, and the rest of
    its solution is graded)."""
    from cudaenv.problems.predictions import (
        PATCH_SUFFIXES,
        is_predictions,
        read_patch_file,
        read_predictions,
    )

    if is_predictions(path):
        return read_predictions(path, rejected=rejected)
    if path.is_file() and path.suffix in PATCH_SUFFIXES:
        return [read_patch_file(path)]
    if path.is_file():
        from cudaenv.problems.datapack import read_solution_datapack

        return read_solution_datapack(path, rejected=rejected)
    if not path.is_dir():
        raise SourceNotFoundError(f"solutions {path} do not exist")
    sols = [read_patch_file(p) for p in sorted(path.iterdir()) if p.suffix in PATCH_SUFFIXES]
    for sub in sorted(p for p in path.iterdir() if p.is_dir()):
        files = []
        for f in sorted(sub.rglob("*")):
            if not f.is_file():
                continue
            try:
                content = f.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
                rejected.append(SpecError(f"skipped {f.name}: {why}", source=str(f)))
                continue
            files.append(SourceFile(path=f.relative_to(sub).as_posix(), content=content))
        sols.append(Solution(task_id=sub.name, files=files))
    return sols


def _keyed(sols: list[Solution]) -> list[tuple[str, int, Solution]]:
    """A pack's solutions keyed ``<task_id>#<n>``, n counting each task's solutions."""
    counts: dict[str, int] = {}
    keyed = []
    for sol in sols:
        sample = counts.get(sol.task_id, 0)
        counts[sol.task_id] = sample + 1
        keyed.append((f"{sol.task_id}#{sample}", sample, sol))
    return keyed


def _run_of(path: Path) -> RunDir | None:
    """The eval run directory at ``path``, or None for a solutions pack or directory."""
    from cudaenv.rollout.rundir import RunDir, is_run_dir

    return RunDir(path) if is_run_dir(path) else None


def _run_solutions(run: RunDir) -> tuple[list[tuple[str, int, Solution]], int]:
    """An eval run's samples with stored final files, under the run's own keys; and how many
    samples had none."""
    latest = run.latest()
    keyed, without = [], 0
    for key, files in sorted(run.solutions().items()):
        if not files:
            without += 1
            continue
        rec = latest[key]
        sol = Solution(task_id=rec["task_id"], files=files)
        keyed.append((key, int(rec.get("attempt", rec.get("sample", 0))), sol))
    return keyed, without


@friendly
def grade_cmd(
    solutions: Annotated[
        Path,
        typer.Argument(
            help="solutions datapack (.tar.gz), SWE-bench predictions (.jsonl), "
            "<task_id>.patch, a directory of <task_id>/<files> or <task_id>.patch, or an eval "
            "run directory (its samples' final files are graded again)"
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option("--source", "-s", help="problem source (default builtin; a run: its own)"),
    ] = None,
    workers: WorkersOpt = 2,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="results directory (default graded; a run: RUN/regraded)"),
    ] = None,
    k: KOpt = "1",
    mode: Annotated[
        str | None, typer.Option("--mode", help="solve | optimize | repair (a run: its own)")
    ] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    sandbox: SandboxOpt = "local",
    image: ImageOption = None,
    gpus: GpusOption = None,
    isolation: IsolationOption = None,
) -> None:
    """Grade solutions in parallel; write DIR/graded.jsonl and DIR/summary.json (resumable:
    a rerun grades what is missing and what failed for infrastructure reasons). Malformed
    lines of a pack are reported by line number and the rest graded (exit 1). Given an
    ``eval`` run directory, grades its samples' stored final files again."""
    from cudaenv.grading.grader import grade
    from cudaenv.grading.summary import Graded, summarise
    from cudaenv.rollout.pool import DaemonPool
    from cudaenv.rollout.runner import latest_results
    from cudaenv.rollout.store import ResultStore, claim_dir

    options = sandbox_options(sandbox, image, gpus, isolation)
    ks = parse_ks(k)
    rejected: list[SpecError] = []
    run = _run_of(solutions)
    if run is not None:
        source = source or (run.manifest.source if run.manifest else None)
        mode = mode or run.mode
        out = out or solutions / "regraded"
    source, mode, out = source or "builtin", mode or "solve", out or Path("graded")
    check_mode(mode)
    suite = selected(source, None, None, since, until)
    extra: dict[str, object] = {
        "since": parse_day("--since", since),
        "until": parse_day("--until", until),
    }
    if run is not None:
        keyed, extra["without_files"] = _run_solutions(run)
        extra["regraded_from"] = str(solutions)
    else:
        keyed = _keyed(_solutions_from(solutions, rejected))
    if since or until:  # the release window: solutions of other problems are left out
        keyed = [(key, n, sol) for key, n, sol in keyed if sol.task_id in suite.ids]
    missing = sorted({sol.task_id for _, _, sol in keyed} - set(suite.ids))
    if missing:  # before --out is created: a bad input leaves nothing behind
        raise SourceNotFoundError(f"solutions for unknown task_id(s) {missing[:5]} in {source}")
    sols = [sol for _, _, sol in keyed]
    claim = claim_dir(out)  # writable and ours (one line, exit 2 if not) before any grading
    store = ResultStore(out, "graded")
    done = {  # an infrastructure failure is graded again
        key
        for key, r in latest_results(store).items()
        if (r.get("verdict") or {}).get("failure") != "infrastructure"
    }
    jobs = [job for job in keyed if job[0] not in done]

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
    summary.update(extra)
    write_summary(out, summary)
    console.print(summary_table(summary, ks, f"grade {solutions.name} on {source}"))
    for line in left_out(summary):
        console.print(line, highlight=False)
    if extra.get("without_files"):
        console.print(
            f"{extra['without_files']} sample(s) of {solutions} have no stored solution files "
            "(never graded, or stored by an older cudaenv): not graded",
            highlight=False,
        )
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
    a generated problem's mutants fail where its tests run (``validate generated --sample N``);
    a repository task's six transitions (``cudaenv.rollout.repo_gate``)."""
    from cudaenv.grading.release_gate import validate_problem
    from cudaenv.rollout.repo_gate import validate_repository
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
                timed(validate_repository if p.repository is not None else validate_problem),
                p,
                sandbox=sandbox,
                sandbox_options=options,
                rounds=rounds,
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
