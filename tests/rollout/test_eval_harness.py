"""The evaluation harness through the real CLI against a scripted OpenAI-compatible server:
the run manifest and resume checks, sampling, what trajectories keep, re-grading, repair,
the release window, reports and comparisons, and flag errors as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.rollout import ResultStore
from tests.agents.scripted_server import ScriptedServer, text, tool_call, with_reasoning
from tests.conftest import CPU_SOLUTION
from tests.rollout.conftest import cpu_suite

runner = CliRunner()
#: a wrong solution made through bash (a file no write_file call names), then submit
WRONG = [
    with_reasoning(
        tool_call(
            "bash",
            command="printf '#include \"add.h\"\\nint add(int a, int b) { return a - b; }\\n' "
            "> solution.cpp",
        ),
        "subtracting is close enough",
    ),
    text("I think that is it."),
    tool_call("submit"),
]
RIGHT = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), tool_call("submit")]


def _cli(*args: str) -> Any:
    return runner.invoke(app, list(args), terminal_width=200)


def _eval(srv: ScriptedServer, src: Path, out: Path, *args: str) -> Any:
    return _cli(
        "eval",
        "--agent",
        "openai",
        "--model",
        "scripted",
        "--base-url",
        srv.base_url,
        "--source",
        str(src),
        "--workers",
        "1",
        "--out",
        str(out),
        *args,
    )


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return cpu_suite(tmp_path / "suite", 2)


@pytest.fixture
def failed_run(suite: Path, tmp_path: Path) -> Path:
    """A run whose 2 samples (one per problem) failed their tests: the model wrote a wrong
    solution with bash."""
    out = tmp_path / "wrong"
    with ScriptedServer(WRONG * 2) as srv:
        res = _eval(srv, suite, out, "--seed", "7")
    assert res.exit_code == 0, res.output
    return out


def test_the_manifest_guards_resume(suite: Path, failed_run: Path) -> None:
    manifest = json.loads((failed_run / "run.json").read_text())
    assert manifest["agent"] == "openai" and manifest["model"] == "scripted"
    assert manifest["sampling"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": None, "seed": 7}
    assert manifest["max_turns"] == 50 and manifest["max_steps"] == 50
    assert manifest["mode"] == "solve" and manifest["sandbox"]["backend"] == "local"
    assert set(manifest["problems"]) == {"cpu-add-0", "cpu-add-1"}
    assert all(len(h) == 64 for h in manifest["problems"].values())
    results = _lines(failed_run / "results.jsonl")
    trajectories = _lines(failed_run / "trajectories.jsonl")
    with ScriptedServer(RIGHT) as srv:
        other_model = _cli(
            *["eval", "--agent", "openai", "--model", "other", "--base-url", srv.base_url],
            *["--seed", "7", "--source", str(suite), "--out", str(failed_run), "--attempts", "2"],
        )
        assert other_model.exit_code == 2
        assert len(other_model.output.strip().splitlines()) == 1
        assert "model: 'scripted' stored, 'other' now" in other_model.output
        oracle = _cli("eval", "--agent", "oracle", "--source", str(suite), "--out", str(failed_run))
        assert oracle.exit_code == 2 and "agent: 'openai' stored, 'oracle' now" in oracle.output
        assert srv.requests == []  # refused before any episode
    assert _lines(failed_run / "results.jsonl") == results  # nothing appended
    assert _lines(failed_run / "trajectories.jsonl") == trajectories
    assert json.loads((failed_run / "run.json").read_text()) == manifest

    with ScriptedServer(RIGHT * 2) as srv:  # --force resumes (one more attempt) and says so
        forced = _eval(srv, suite, failed_run, "--attempts", "2", "--force")
    assert forced.exit_code == 0, forced.output
    after = json.loads((failed_run / "run.json").read_text())
    assert after["model"] == "scripted" and after["sampling"]["seed"] == 7  # the stored run's
    (record,) = after["history"]
    assert record["forced"] is True and any("seed" in d for d in record["differences"])
    summary = json.loads((failed_run / "summary.json").read_text())
    assert summary["forced"] is True and summary["samples"] == 4
    assert len(_lines(failed_run / "results.jsonl")) == 4  # only the new attempts ran


def test_results_without_a_manifest_need_force(suite: Path, failed_run: Path) -> None:
    (failed_run / "run.json").unlink()
    res = _cli("eval", "--agent", "nop", "--source", str(suite), "--out", str(failed_run))
    assert res.exit_code == 2 and "no run.json" in res.output and "--force" in res.output


def test_sampling_flags_reach_the_server(suite: Path, tmp_path: Path) -> None:
    with ScriptedServer(RIGHT * 4) as srv:
        res = _eval(
            srv,
            suite,
            tmp_path / "s",
            *["--ids", "cpu-add-0", "--attempts", "2", "--k", "1,2"],
            *["--temperature", "0.7", "--top-p", "0.9", "--max-tokens", "512", "--seed", "100"],
        )
        sent = srv.requests
    assert res.exit_code == 0, res.output
    fields = {(r["temperature"], r["top_p"], r["max_tokens"]) for r in sent}
    assert fields == {(0.7, 0.9, 512)}
    assert sorted({r["seed"] for r in sent}) == [100, 101]  # attempt a sends seed + a
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["sampling"] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 512, "seed": 100}


def test_defaults_sample_and_greedy_pass_at_k_warns(suite: Path, tmp_path: Path) -> None:
    with ScriptedServer(RIGHT * 4) as srv:
        default = _eval(srv, suite, tmp_path / "d", "--ids", "cpu-add-0")
        sent = list(srv.requests)
        greedy = _eval(
            srv,
            suite,
            tmp_path / "g",
            *["--ids", "cpu-add-0", "--attempts", "2", "--k", "2", "--temperature", "0"],
        )
    assert default.exit_code == 0 and "warning" not in default.output
    assert all(r["temperature"] == 1.0 and r["top_p"] == 1.0 for r in sent)
    assert all("seed" not in r and "max_tokens" not in r for r in sent)
    assert greedy.exit_code == 0, greedy.output
    assert "warning: pass@2 at --temperature 0" in greedy.output


def test_trajectories_keep_the_conversation_and_the_graded_files(failed_run: Path) -> None:
    rec = next(ResultStore(failed_run, "trajectories").records())
    traj = rec["trajectory"]
    assert traj["turns"][0]["message"]["reasoning_content"] == "subtracting is close enough"
    assert traj["turns"][1]["message"]["content"] == "I think that is it."
    roles = [m["role"] for m in traj["messages"]]
    assert roles[:3] == ["system", "user", "assistant"] and roles[-1] == "tool"
    assert any(m.get("content") == "I think that is it." for m in traj["messages"])
    # the file bash made is what was graded, and it is kept
    (kept,) = traj["solution_files"]
    assert kept["path"] == "solution.cpp" and "a - b" in kept["content"]


def test_grade_regrades_a_run_directory(suite: Path, failed_run: Path) -> None:
    res = _cli("grade", str(failed_run), "--workers", "1")
    assert res.exit_code == 0, res.output
    regraded = failed_run / "regraded"
    rows = {r["key"]: r for r in ResultStore(regraded, "graded").records()}
    original = {r["key"]: r for r in ResultStore(failed_run).records()}
    assert set(rows) == set(original) == {"cpu-add-0#0", "cpu-add-1#0"}
    for key, row in rows.items():
        assert row["verdict"]["passed"] is False
        assert row["verdict"]["reason"] == original[key]["verdict"]["reason"]
    summary = json.loads((regraded / "summary.json").read_text())
    assert summary["regraded_from"] == str(failed_run) and summary["pass_at_k"]["pass@1"] == 0.0
    assert _cli("report", str(regraded)).exit_code == 0
    assert f"A re-grade of `{failed_run}`" in (regraded / "report" / "report.md").read_text()
    window = _cli("grade", str(failed_run), "--until", "2000-01-01", "--out", str(failed_run / "w"))
    assert window.exit_code == 0, window.output
    assert json.loads((failed_run / "w" / "summary.json").read_text())["samples"] == 0


def test_repair_starts_from_the_failed_samples(suite: Path, failed_run: Path) -> None:
    out = failed_run.parent / "repair"
    with ScriptedServer(RIGHT * 2) as srv:
        res = _cli(
            *["eval", "--agent", "openai", "--model", "scripted", "--base-url", srv.base_url],
            *["--mode", "repair", "--from", str(failed_run), "--out", str(out), "--workers", "1"],
        )
        first = srv.requests[0]["messages"][1]["content"]
    assert res.exit_code == 0, res.output
    assert "The workspace holds a solution that failed grading" in first
    assert "reason: test failed" in first and "FAIL" in first  # its grading output
    results = {r["key"]: r for r in ResultStore(out).records()}
    assert {r["origin"] for r in results.values()} == {"cpu-add-0#0", "cpu-add-1#0"}
    assert all(r["verdict"]["passed"] for r in results.values())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "repair" and summary["pass_at_k"]["pass@1"] == 1.0
    assert summary["repair"] == {
        "from": str(failed_run),
        "failed_samples": 2,
        "failed_without_files": 0,
        "repaired_samples": 2,
    }
    assert json.loads((out / "run.json").read_text())["repair_from"] == str(failed_run)
    nothing = _cli("eval", "--mode", "repair", "--from", str(out), "--out", str(out / "again"))
    assert nothing.exit_code == 2 and "no failed samples" in nothing.output


def test_release_window_selects_and_is_recorded(suite: Path, tmp_path: Path) -> None:
    # the suite's problems are dated 2026-11-01
    out = tmp_path / "w"
    res = _cli(
        *["eval", "--agent", "oracle", "--source", str(suite), "--out", str(out)],
        *["--since", "2026-10-01", "--until", "2026-11-30"],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["since"] == "2026-10-01" and summary["until"] == "2026-11-30"
    assert summary["problems"] == 2
    late = _cli(
        "eval", "--source", str(suite), "--out", str(tmp_path / "x"), "--since", "2027-01-01"
    )
    assert late.exit_code == 2 and "no problems selected" in late.output


def test_report_and_compare(suite: Path, failed_run: Path, tmp_path: Path) -> None:
    good = tmp_path / "good"
    with ScriptedServer(RIGHT * 2) as srv:
        assert _eval(srv, suite, good).exit_code == 0
    res = _cli("report", str(failed_run), "--k", "1")
    assert res.exit_code == 0, res.output
    md = (failed_run / "report" / "report.md").read_text()
    assert "| agent | openai |" in md and "| model | scripted |" in md
    assert "| cpu-add-0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 |" in md  # failed at test, once
    assert "| all | 0.000 [0.000, 0.000] |" in md
    for png in ("pass_at_k.png", "failures.png"):
        data = (failed_run / "report" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and f"]({png})" in md

    out = tmp_path / "cmp.md"
    res = _cli("compare", str(failed_run), str(good), "--out", str(out))
    assert res.exit_code == 0, res.output
    result = json.loads(out.with_suffix(".json").read_text())
    assert result["shared_problems"] == 2
    assert result["pass_at_k"]["all"]["pass@1"]["value"] == 1.0
    assert result["better_in_b"] == ["cpu-add-0", "cpu-add-1"] and result["better_in_a"] == []
    assert any(s.startswith("sampling:") for s in result["settings"])  # A had a seed
    assert "| all | +1.000" in out.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "one"], "--k takes integers"),
        (["--k", "0"], "--k values must be >= 1"),
        (["--k", "5", "--attempts", "2"], "pass@5 needs 5 samples per problem"),
        (["--agent", "openai", "--model", "m", "--temperature", "3"], "--temperature: Input"),
        (["--agent", "openai", "--model", "m", "--top-p", "0"], "--top-p: Input"),
        (["--temperature", "0.5"], "--temperature apply to --agent openai"),
        (["--workers", "0"], "Invalid value for '--workers'"),
        (["--tempratur", "1"], "No such option: --tempratur"),
        (["--since", "2026-13-01"], "--since takes a date"),
        (["--mode", "repair"], "--mode repair needs --from RUN"),
        (["--from", "somewhere"], "--from applies to --mode repair"),
        (["--mode", "repair", "--from", "nowhere"], "not a run directory"),
    ],
)
def test_bad_flags_are_one_line_exit_2(
    suite: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "never"
    res = _cli("eval", "--source", str(suite), "--out", str(out), *args)
    assert res.exit_code == 2, res.output
    assert message in res.output and len(res.output.strip().splitlines()) == 1
    assert not out.exists()  # stopped before any work


@pytest.mark.docker
def test_a_missing_image_stops_before_any_work(suite: Path, tmp_path: Path) -> None:
    from tests.conftest import need_image

    need_image("cudaenv-eval-cpu:latest")  # the engine answers (any image will do)
    out = tmp_path / "img"
    res = _cli(
        *["eval", "--agent", "oracle", "--source", str(suite), "--out", str(out)],
        *["--sandbox", "docker", "--image", "cudaenv-no-such-image:never"],
    )
    assert res.exit_code == 2, res.output
    assert "cudaenv-no-such-image:never" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_report_compare_and_grade_errors_are_one_line(suite: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-run"
    for args, message in [
        (["report", str(missing)], "is not a run directory"),
        (["compare", str(suite), str(missing)], "is not a run directory"),
        (["report", str(suite), "--k", "two"], "is not a run directory"),
        (["grade", str(missing), "--k", "0"], "--k values must be >= 1"),
        (["grade", str(missing), "--mode", "fast"], "unknown mode 'fast'"),
    ]:
        res = _cli(*args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output and len(res.output.strip().splitlines()) == 1, args


def _optimize_run(out: Path, speedups: dict[str, list[float]]) -> Path:
    """An optimize-mode run directory as eval writes it, its verdicts carrying the speedups a
    GPU grading measures (injected: no GPU here)."""
    from cudaenv.grading.verdict import Verdict
    from cudaenv.rollout.episode import EpisodeResult
    from cudaenv.rollout.manifest import RunManifest, write_manifest

    store = ResultStore(out, "results")
    for task, values in speedups.items():
        for a, s in enumerate(values):
            verdict = Verdict(task_id=task, mode="optimize", passed=True, compiled=True, speedup=s)
            store.append(
                EpisodeResult(
                    key=f"{task}#{a}",
                    task_id=task,
                    group="cuda-kernels",
                    attempt=a,
                    verdict=verdict,
                ).record()
            )
    manifest = RunManifest(
        cudaenv_version="0", agent="oracle", max_steps=50, mode="optimize", source="builtin"
    )
    write_manifest(out, manifest)
    return out


def test_optimize_reports_speedups_and_compare_gives_their_ratio(tmp_path: Path) -> None:
    a = _optimize_run(tmp_path / "a", {"t1": [1.0, 2.0, 3.0], "t2": [4.0, 4.0, 4.0]})
    b = _optimize_run(tmp_path / "b", {"t1": [4.0, 4.0, 4.0], "t2": [8.0, 8.0, 8.0]})
    res = _cli("report", str(a))
    assert res.exit_code == 0, res.output
    md = (a / "report" / "report.md").read_text()
    assert "## Speedups" in md and "| geomean |" in md and "| median | 3.500 |" in md
    assert "| t1 | cuda-kernels | 3 | 3 | 3 | 1.000 | 2.00x |" in md  # per-problem median
    assert (a / "report" / "speedup.png").read_bytes()[:4] == b"\x89PNG"
    out = tmp_path / "cmp.md"
    assert _cli("compare", str(a), str(b), "--out", str(out)).exit_code == 0
    ratio = json.loads(out.with_suffix(".json").read_text())["speedup_ratio"]
    assert ratio["value"] == pytest.approx(2.0) and ratio["problems"] == 2  # 4/2 and 8/4
    assert "Speedup, B over A" in out.read_text()
