"""One rule for who is at fault (``cudaenv.faults``), through the runner and ``cudaenv eval``.

The OpenAI agent talks to the scripted server over real HTTP: a server that fails (500s, a
closed port, a failure after the first reply, a key it refuses) makes the episode
``infrastructure`` (not scored, run again on resume, counted apart); a request the server
refuses as malformed (400) and a NUL byte in the model's bash command are the agent's (the
first an ``agent_error``, the second an error observation in an episode that goes on). An
exception cudaenv did not raise on purpose is infrastructure and is logged with its
traceback.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.errors import AgentError, ModelServerError, SandboxError, ToolError
from cudaenv.faults import fault_of, status_fault
from cudaenv.problems import load_suite
from cudaenv.rollout import ResultStore, run_episodes
from tests.agents.scripted_server import ScriptedServer, tool_call
from tests.conftest import CPU_SOLUTION

pytest.importorskip("openai")

SOLVE = [tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), tool_call("submit")]


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def closed_port_url() -> str:
    """A local URL nothing listens on (bound, then closed: connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def agent_spec(base_url: str) -> dict:
    return {"name": "openai", "model": "scripted", "base_url": base_url, "backoff_s": 0.001,
            "max_backoff_s": 0.01, "max_attempts": 2}  # fmt: skip


def run_one(cpu_problem, base_url: str, out: Path):
    [res] = run_episodes(agent_spec(base_url), [cpu_problem], out_dir=out)
    return res


def test_the_rule_as_data() -> None:
    assert fault_of(ModelServerError("down")) == "infrastructure"
    assert fault_of(AgentError("bad request")) == fault_of(ToolError("NUL")) == "agent"
    assert fault_of(SandboxError("x")) == fault_of(KeyError("bug")) == "infrastructure"
    assert [status_fault(s) for s in (500, 502, 429, 408, 401, 404, 400, 413, 422, 200)] == [
        *["infrastructure"] * 6, "agent", "agent", "agent", None,
    ]  # fmt: skip


@pytest.mark.parametrize("failure", ["500", "429", "garbage", "401"])
def test_a_failing_model_server_is_infrastructure_and_rerun_on_resume(
    cpu_problem, tmp_path: Path, failure: str
) -> None:
    out = tmp_path / "run"
    with ScriptedServer(SOLVE, fail_first=100, failure=failure) as srv:
        res = run_one(cpu_problem, srv.base_url, out)
    assert res.status == "infrastructure" and res.reward == 0.0, res
    assert "ModelServerError" in (res.error or "")
    with ScriptedServer(SOLVE) as srv:  # resume against a live server: run again, scored
        res = run_one(cpu_problem, srv.base_url, out)
    assert res.status == "ok" and res.reward == 1.0
    assert [r["status"] for r in ResultStore(out).records()] == ["infrastructure", "ok"]


def test_a_closed_port_is_infrastructure(cpu_problem, tmp_path: Path) -> None:
    res = run_one(cpu_problem, closed_port_url(), tmp_path / "run")
    assert res.status == "infrastructure" and "APIConnectionError" in (res.error or "")


def test_a_server_failing_after_the_first_reply_is_infrastructure(
    cpu_problem, tmp_path: Path
) -> None:
    first = tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION)
    with ScriptedServer([first, tool_call("submit")], fail_from=1) as srv:
        res = run_one(cpu_problem, srv.base_url, tmp_path / "run")
    assert res.status == "infrastructure", res
    assert res.trajectory is not None and res.trajectory.steps[0].tool == "write_file"
    assert res.verdict is None  # not graded: the episode did not end by the agent's doing


def test_a_request_refused_as_malformed_is_the_agents(cpu_problem, tmp_path: Path) -> None:
    with ScriptedServer(SOLVE, fail_first=100, failure="400") as srv:
        res = run_one(cpu_problem, srv.base_url, tmp_path / "run")
        assert len(srv.requests) == 1  # not retried
    assert res.status == "agent_error" and "rejected (400)" in (res.error or "")


def test_a_nul_byte_in_a_bash_command_is_an_error_observation(cpu_problem, tmp_path: Path) -> None:
    script = [tool_call("bash", command="echo a\x00b"), *SOLVE]
    with ScriptedServer(script) as srv:
        res = run_one(cpu_problem, srv.base_url, tmp_path / "run")
        told = srv.requests[1]["messages"][-1]
    assert res.status == "ok" and res.reward == 1.0, res.error
    step = res.trajectory.steps[0]
    assert step.tool is None and "NUL" in (step.error or "")
    assert told["role"] == "tool" and "NUL" in told["content"]  # the model is told why


class _BuggyAgent:
    name = "buggy"

    def run(self, env, *, seed=None):
        env.reset(seed=seed)
        return {}["no such key"]  # a bug of ours, not an error raised on purpose


def test_an_unexpected_exception_is_infrastructure_with_its_traceback_logged(
    cpu_problem, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="cudaenv.rollout.episode"):
        [res] = run_episodes(_BuggyAgent, [cpu_problem])
    assert res.status == "infrastructure" and "KeyError" in (res.error or "")
    logged = [r for r in caplog.records if "unexpected exception" in r.getMessage()]
    assert logged and logged[0].exc_info is not None and logged[0].exc_info[0] is KeyError


def test_eval_counts_a_model_server_outage_apart_and_reruns_it(
    cpu_problem_dir: Path, tmp_path: Path
) -> None:
    """Issue 30, item 1, through the real CLI: ``--base-url`` to a closed port, then a live one."""
    out, src = tmp_path / "eval", str(cpu_problem_dir.parent)
    runner = CliRunner()

    def run(url: str):
        args = ["eval", "--agent", "openai", "--model", "scripted", "--base-url", url,
                "--source", src, "--out", str(out)]  # fmt: skip
        return runner.invoke(app, args, terminal_width=200)

    res = run(closed_port_url())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status_counts"] == {"ok": 0, "agent_error": 0, "infrastructure": 1}, res.output
    assert summary["infrastructure_failures"] == 1
    assert summary["pass_at_k"].get("pass@1") != 0.0  # not scored as the model failing
    with ScriptedServer(SOLVE) as srv:
        res = run(srv.base_url)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status_counts"] == {"ok": 1, "agent_error": 0, "infrastructure": 0}
    assert summary["pass_at_k"]["pass@1"] == 1.0
