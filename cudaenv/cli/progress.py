"""Progress and summary tables of the batch commands (``validate``, ``grade``, ``eval``,
``redteam``), and the live cluster table of ``eval --ray-address``.

On a terminal a rich bar. Anywhere else (a CI log, ``nohup``, a pipe) rich draws nothing until
the end, so the reporter prints one plain, flushed line per finished item instead (position,
item, status, seconds) and a summary line when the batch ends: a long run shows life. The
cluster's status (:class:`StatusMonitor`) is a table under the bar when stderr is a terminal,
else one line on stderr every half minute.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

if TYPE_CHECKING:
    from cudaenv.cluster.status import ClusterStatus

P = ParamSpec("P")
T = TypeVar("T")


def timed(fn: Callable[P, T]) -> Callable[P, tuple[T, float]]:
    """``fn`` returning ``(result, seconds)``: per-item seconds for work run in a pool."""

    def wrapper(*args: P.args, **kwargs: P.kwargs) -> tuple[T, float]:
        start = time.monotonic()
        result = fn(*args, **kwargs)
        return result, time.monotonic() - start

    return wrapper


class _Bar(Progress):
    """A progress bar with an optional renderable under it (redrawn at every refresh)."""

    extra: Callable[[], RenderableType | None] | None = None

    def get_renderables(self) -> Iterable[RenderableType]:
        yield from super().get_renderables()
        if self.extra is not None and (below := self.extra()) is not None:
            yield below


class Reporter:
    """Reports finished items of one batch; a context manager around the batch.

    ``completed`` items were done before (a resumed run): they count in the position but not
    in this run's status counts. ``plain`` defaults to "the console is not a terminal".
    ``clock`` is injectable so the summary's elapsed time can be tested without waiting.
    """

    def __init__(
        self,
        console: Console,
        label: str,
        total: int,
        *,
        completed: int = 0,
        plain: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.label = label
        self.total = total
        self.done = completed
        self.earlier = completed
        self.plain = (not console.is_terminal) if plain is None else plain
        self.counts: Counter[str] = Counter()
        self._clock = clock
        self._start = 0.0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Reporter:
        self._start = self._clock()
        if not self.plain:
            self._bar = _Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._bar.start()
            self._task = self._bar.add_task(
                self.label, total=self.total, completed=self.done, counts=""
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        # an interrupt is said once, by the command's own "interrupted: ..." line
        if self.plain and not (exc_type and issubclass(exc_type, KeyboardInterrupt)):
            stopped = f" (stopped: {exc_type.__name__})" if exc_type else ""
            self._line(self.summary() + stopped)

    def item(
        self,
        name: str,
        status: str,
        seconds: float | None = None,
        detail: str = "",
        *,
        warn: bool = False,
    ) -> None:
        """One item finished with ``status``; the first line of ``detail`` (a reason) goes on
        the item's line, and on a terminal above the bar when ``warn`` says it matters."""
        self.done += 1
        self.counts[status] += 1
        first = detail.splitlines()[0] if detail else ""
        if self.plain:
            took = f"  {seconds:.1f}s" if seconds is not None else ""
            width = len(str(self.total))
            extra = f"  {first}" if first else ""
            self._line(f"[{self.done:>{width}}/{self.total}] {name}  {status}{took}{extra}")
            return
        if warn:
            self.console.print(
                f"{name}: {status} {first}", style="yellow", markup=False, highlight=False
            )
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, counts=self._counts())

    @property
    def live(self) -> bool:
        """Whether a bar is being drawn (on a terminal, between enter and exit)."""
        return self._bar is not None

    def show_below(self, extra: Callable[[], RenderableType | None] | None) -> None:
        """Draw ``extra()`` under the bar at every refresh (None: nothing more)."""
        if isinstance(self._bar, _Bar):
            self._bar.extra = extra

    def note(self, text: str) -> None:
        """A line that is not an item (a warning), above the bar on a terminal."""
        if self.plain:
            self._line(text)
        else:
            self.console.print(text, markup=False, highlight=False)

    def summary(self) -> str:
        """``label: done/total finished in Ns: status n, ...`` for this run's items."""
        elapsed = self._clock() - self._start
        text = f"{self.label}: {self.done}/{self.total} finished in {elapsed:.1f}s"
        if self.counts:
            text += f": {self._counts()}"
        if self.earlier:
            text += f" ({self.earlier} from an earlier run)"
        return text

    def _counts(self) -> str:
        return ", ".join(f"{status} {n}" for status, n in sorted(self.counts.items()))

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
        self.console.file.flush()


def verdict_status(passed: bool | None, failure: str | None) -> str:
    """One word for a graded sample, the words the summaries count by."""
    if failure == "infrastructure":
        return "infrastructure"
    if passed is None and failure is None:
        return "not run"
    return "passed" if passed else "failed"


NOT_RUN = "not run (no GPU)"


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _rate(value: Any, s: dict[str, Any], spec: str = ".3f") -> str:
    """A rate, or why there is none: nothing here could run it (with the count), or too few
    samples (``-``)."""
    if value is None and s["run"] == 0 and s["not_run"]:
        return f"{NOT_RUN}: {s['not_run']}"
    return _fmt(value, spec)


def summary_table(summary: dict[str, Any], ks: list[int], title: str) -> Table:
    """Per-group and overall pass@k (and speedups where any were measured) of ``summarise``;
    rates are over the samples that ran; ``not run`` and ``infra`` columns count the others."""
    with_speed = summary["speedup"]["count"] > 0
    with_not_run = summary["not_run"] > 0
    with_infra = summary["infrastructure_failures"] > 0
    table = Table(title=title)
    table.add_column("group", no_wrap=True)
    table.add_column("samples", justify="right")
    if with_not_run:
        table.add_column("not run", justify="right")
    if with_infra:
        table.add_column("infra", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    if with_speed:
        for col in ("geomean", "median", "fast_1", "fast_1.2"):
            table.add_column(col, justify="right")
    lines = [*summary["groups"].items(), ("all", summary)]
    for name, s in lines:
        row = [f"[bold]{name}[/]" if name == "all" else name, str(s["samples"])]
        if with_not_run:
            row.append(str(s["not_run"]))
        if with_infra:
            row.append(str(s["infrastructure_failures"]))
        row += [_rate(s["pass_at_k"].get(f"pass@{k}"), s) for k in ks]
        if with_speed:
            sp = s["speedup"]
            row += [
                _fmt(sp["geomean"], ".2f") + ("x" if sp["geomean"] else ""),
                _fmt(sp["median"], ".2f"),
                _fmt(sp["fast_1"], ".2f"),
                _fmt(sp["fast_1.2"], ".2f"),
            ]
        table.add_row(*row)
    return table


def left_out(summary: dict[str, Any]) -> list[str]:
    """Lines saying which samples the rates leave out, and why."""
    lines = []
    if summary["not_run"]:
        lines.append(
            f"{summary['not_run']} sample(s) not run to a decision (GPU stages skipped: no GPU); "
            f"the rates are over the {summary['run']} that ran"
        )
    if summary["infrastructure_failures"]:
        lines.append(
            f"[yellow]{summary['infrastructure_failures']} infrastructure failure(s)[/] "
            "(excluded; rerun to retry them)"
        )
    return lines


def _state(alive: bool, ready: bool, running: bool) -> str:
    if not alive:
        return "dead"
    if not ready:
        return "starting"
    return "busy" if running else "idle"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def cluster_table(status: ClusterStatus, *, max_graders: int = 12) -> Table:
    """``status`` as a table: two summary lines (nodes, workers, graders busy and idle, busy
    fractions; episodes, queued stages, retries) over a row per grader (busy ones first, at
    most ``max_graders``)."""
    states = [_state(g.alive, g.ready, g.running) for g in status.graders]
    busy, idle = states.count("busy"), states.count("idle")
    queued = ", ".join(f"{k} {v}" for k, v in sorted(status.queued.items())) or "none"
    graders = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("grader", "kind", "state", "waiting", "graded", "restarts", "busy"):
        graders.add_column(col, justify="left" if col in ("grader", "kind", "state") else "right")
    order = {"busy": 0, "idle": 1, "starting": 2, "dead": 3}
    rows = sorted(zip(status.graders, states, strict=True), key=lambda r: order[r[1]])
    for g, state in rows[:max_graders]:
        cells = (g.queued_here, g.graded, g.restarts)
        graders.add_row(g.name, g.kind, state, *map(str, cells), _pct(g.busy_fraction))
    if len(rows) > max_graders:
        graders.add_row(f"+{len(rows) - max_graders} more", *[""] * 6)
    table = Table.grid()
    table.add_column()
    table.add_row(
        f"cluster: {status.nodes} nodes, {status.workers} episode workers, graders {busy} busy "
        f"/ {idle} idle of {len(status.graders)} | GPU busy {_pct(status.gpu_busy_fraction)}, "
        f"CPU-grader busy {_pct(status.cpu_busy_fraction)}"
    )
    table.add_row(
        f"episodes {status.episodes_in_flight} in flight, {status.episodes_pending} pending, "
        f"{status.episodes_done} done, {status.episodes_retried} retried | queued stages: "
        f"{queued} | grades retried {status.grades_retried}, failed {status.grades_failed}"
    )
    table.add_row(graders)
    return table


class StatusMonitor:
    """Polls ``status()`` on a thread while a cluster run goes (a context manager).

    ``live`` (default: ``console`` is a terminal): :func:`cluster_table` of the latest poll
    is drawn under the reporter's bar, or in a display of its own when the reporter prints
    plain lines; else :meth:`ClusterStatus.line` goes to ``console`` at every poll. A poll
    that fails keeps the last status: a display never stops the run.
    """

    def __init__(
        self,
        status: Callable[[], ClusterStatus],
        console: Console,
        *,
        live: bool | None = None,
        every_s: float | None = None,
    ) -> None:
        self.status = status
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.every_s = every_s if every_s is not None else (2.0 if self.live else 30.0)
        self.latest: ClusterStatus | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._own: Live | None = None
        self._report: Reporter | None = None
        self._table: tuple[ClusterStatus | None, Table | None] = (None, None)

    def renderable(self) -> RenderableType | None:
        """The table of the latest status (None before the first poll); built once per poll,
        drawn at every refresh of the display."""
        latest = self.latest
        if latest is not None and self._table[0] is not latest:
            self._table = (latest, cluster_table(latest))
        return self._table[1]

    def tick(self) -> None:
        """Poll once; without a live display, print the status line."""
        try:
            self.latest = self.status()
        except Exception:  # the session closing, a slow head: keep the last one
            return
        if not self.live:
            self.console.print(self.latest.line(), markup=False, highlight=False, soft_wrap=True)
            self.console.file.flush()

    def attach(self, report: Reporter) -> StatusMonitor:
        """Draw under ``report``'s bar when it draws one (else in a display of our own)."""
        if self.live and report.live:
            self._report = report
            report.show_below(self.renderable)
        elif self.live:  # stdout is not redirected into it: the reporter's lines stay there
            self._own = Live(
                console=self.console,
                get_renderable=self._drawn,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
        return self

    def _drawn(self) -> RenderableType:
        return self.renderable() or ""

    def _loop(self) -> None:
        if self.live:  # a table at once; a line only once there is something to say
            self.tick()
        while not self._stop.wait(self.every_s):
            self.tick()

    def __enter__(self) -> StatusMonitor:
        if self._own is not None:
            self._own.start()
        self._thread = threading.Thread(target=self._loop, name="cluster-status", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._report is not None:
            self._report.show_below(None)
        if self._own is not None:
            self._own.stop()
