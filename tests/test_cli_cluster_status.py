"""The live cluster status of ``cudaenv eval --ray-address``: the table drawn from a
``ClusterStatus``, the line printed where stderr is no terminal, and the table under the
progress bar. Built from constructed statuses (no Ray, no clock)."""

from __future__ import annotations

import io

from rich.console import Console

from cudaenv.cli.progress import Reporter, StatusMonitor, cluster_table
from cudaenv.cluster.status import ClusterStatus, GraderRow


def _grader(name: str, kind: str, **kw: object) -> GraderRow:
    base: dict[str, object] = {
        "node_id": "n1",
        "alive": True,
        "ready": True,
        "running": False,
        "queued_here": 0,
        "graded": 0,
        "restarts": 0,
        "busy_fraction": None,
    }
    return GraderRow(name=name, kind=kind, **{**base, **kw})  # type: ignore[arg-type]


def _status(**kw: object) -> ClusterStatus:
    base: dict[str, object] = {
        "episodes_in_flight": 37,
        "episodes_pending": 211,
        "episodes_done": 1042,
        "episodes_retried": 3,
        "workers": 16,
        "nodes": 5,
        "queued": {"gpu": 19, "cpu": 4},
        "graders": [
            _grader("gpu-1", "gpu", graded=55, busy_fraction=0.5),
            _grader("gpu-0", "gpu", running=True, queued_here=1, graded=61, busy_fraction=0.97),
            _grader("cpu-0", "cpu", alive=False, restarts=2, graded=8),
            _grader("cpu-1", "cpu", ready=False),
        ],
        "gpu_busy_fraction": 0.735,
        "cpu_busy_fraction": None,
        "grades_retried": 6,
        "grades_failed": 1,
    }
    return ClusterStatus(**{**base, **kw})  # type: ignore[arg-type]


def _text(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=220, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_table_holds_every_number_of_the_status() -> None:
    text = _text(cluster_table(_status()))
    assert "cluster: 5 nodes, 16 episode workers, graders 1 busy / 1 idle of 4" in text
    assert "episodes 37 in flight, 211 pending, 1042 done, 3 retried" in text
    assert "queued stages: cpu 4, gpu 19" in text
    assert "grades retried 6, failed 1" in text
    assert "| GPU busy 74%, CPU-grader busy -" in text
    rows = [
        line.split()
        for line in text.splitlines()
        if line.split()[:1] in (["gpu-0"], ["gpu-1"], ["cpu-0"], ["cpu-1"])
    ]
    assert rows == [  # busy first, then idle, starting, dead
        ["gpu-0", "gpu", "busy", "1", "61", "0", "97%"],
        ["gpu-1", "gpu", "idle", "0", "55", "0", "50%"],
        ["cpu-1", "cpu", "starting", "0", "0", "0", "-"],
        ["cpu-0", "cpu", "dead", "0", "8", "2", "-"],
    ]


def test_many_graders_are_cut_with_a_count() -> None:
    graders = [_grader(f"gpu-{i}", "gpu", graded=i) for i in range(20)]
    text = _text(cluster_table(_status(graders=graders, queued={}), max_graders=5))
    assert "+15 more" in text and "queued stages: none" in text
    assert sum(line.split()[:1] == ["gpu-3"] for line in text.splitlines()) == 1
    assert not any(line.split()[:1] == ["gpu-7"] for line in text.splitlines())


def test_without_a_terminal_each_poll_prints_the_line_and_a_failed_poll_keeps_the_last() -> None:
    out = io.StringIO()
    answers: list[object] = [_status(), RuntimeError("head restarting"), _status(episodes_done=9)]

    def poll() -> ClusterStatus:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    monitor = StatusMonitor(poll, Console(file=out, width=300), live=False)
    assert monitor.renderable() is None  # nothing polled yet
    monitor.tick()
    monitor.tick()  # the failing poll: no line, no exception, the last status kept
    assert monitor.latest is not None and monitor.latest.episodes_done == 1042
    monitor.tick()
    lines = out.getvalue().splitlines()
    assert lines == [_status().line(), _status(episodes_done=9).line()]
    assert "37 in flight, 211 pending, 1042 done" in lines[0]


def test_on_a_terminal_the_table_is_drawn_under_the_bar() -> None:
    console = Console(file=io.StringIO(), width=220, force_terminal=True, record=True)
    monitor = StatusMonitor(_status, console, live=True)
    with Reporter(console, "episodes", 3) as report:
        assert report.live
        monitor.attach(report)
        monitor.tick()  # what the poll thread does; the bar's next refresh draws it
        report.item("t#0", "passed", 1.0)
    text = console.export_text()
    assert "episodes" in text and "1/3" in text
    assert "episodes 37 in flight, 211 pending, 1042 done, 3 retried" in text
