"""``cudaenv eval --prices``: a CLI agent's calls priced by the gateway, summed in summary.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.rollout import ResultStore
from tests.agents.openai_stream_server import StreamingScriptedServer
from tests.agents.scripted_server import text, tool_call
from tests.conftest import CPU_SOLUTION

runner = CliRunner()
PRICES = "scripted*:\n  input_per_mtok: 3.0\n  output_per_mtok: 15.0\n"


def test_prices_apply_to_the_gateway_agents_only(cpu_problem_dir: Path, tmp_path: Path) -> None:
    table = tmp_path / "prices.yaml"
    table.write_text(PRICES)
    args = ["eval", "--agent", "oracle", "--source", str(cpu_problem_dir.parent)]
    res = runner.invoke(app, [*args, "--prices", str(table), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--prices applies to" in res.output
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    cost = json.loads((tmp_path / "p" / "summary.json").read_text())["cost"]
    assert cost == {"cost_usd": None, "priced_samples": 0, "unpriced_samples": 0,
                    "unpriced_calls": 0}  # fmt: skip


@pytest.mark.skipif(shutil.which("opencode") is None, reason="opencode is not installed")
def test_eval_sums_the_gateway_cost(cpu_problem_dir: Path, tmp_path: Path) -> None:
    table = tmp_path / "prices.yaml"
    table.write_text(PRICES)
    out = tmp_path / "run"
    script = [
        tool_call("write", filePath="{cwd}/solution.cpp", content=CPU_SOLUTION),
        text("Done."),
    ]
    with StreamingScriptedServer(script, usage=(1000, 200)) as srv:
        res = runner.invoke(
            app,
            ["eval", "--agent", "opencode", "--model", "scripted", "--base-url", srv.base_url,
             "--source", str(cpu_problem_dir.parent), "--prices", str(table), "--out", str(out)],
            terminal_width=200,
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_k"]["pass@1"] == 1.0
    (rec,) = ResultStore(out, "trajectories").records()
    calls = [c for c in rec["trajectory"]["model_calls"] if c["api"] is not None]
    assert len(calls) >= 2 and all(c["cost_usd"] == pytest.approx(0.006) for c in calls)
    assert summary["cost"]["cost_usd"] == pytest.approx(0.006 * len(calls))
    assert summary["cost"]["priced_samples"] == 1 and summary["cost"]["unpriced_calls"] == 0
