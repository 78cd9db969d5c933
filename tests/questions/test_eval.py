"""``cudaenv eval --source questions:...`` end to end: the OpenAI-compatible agent against a
local scripted server that answers by the question it is asked (right for every kind but
one), pass@1 reported per kind; the oracle scores 1 and the nop agent 0 on every kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.problems.loader import load_suite
from cudaenv.questions.model import KINDS
from tests.agents.scripted_server import ScriptedServer, text, tool_call

SOURCE = "questions:seed=3,count=16"
runner = CliRunner()


def _eval(*args: str) -> Any:
    return runner.invoke(app, ["eval", "--source", SOURCE, *args], terminal_width=200)


def _summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


def test_openai_agent_reports_pass_at_1_per_kind(tmp_path: Path) -> None:
    suite = load_suite(SOURCE)
    asked: list[str] = []

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        user = body["messages"][1]["content"]
        q = next(q for q in suite if q.question in user)
        asked.append(q.kind)
        if (
            q.kind == "bank"
            and body["messages"][-1]["role"] == "user"
            and len(body["messages"]) == 2
        ):
            return text(f"[ANSWER] {json.dumps(q.expected)} [/ANSWER]")  # text: the agent nudges
        if q.kind == "race":  # always wrong
            return tool_call(
                "answer", answer=json.dumps({"race": not q.expected["race"], "line": 1})
            )
        return tool_call("answer", answer=json.dumps(q.expected))

    with ScriptedServer([], responder=respond) as srv:
        out = tmp_path / "o"
        res = _eval("--agent", "openai", "--model", "scripted", "--base-url", srv.base_url,
                    "--workers", "2", "--out", str(out))  # fmt: skip
        assert res.exit_code == 0, res.output
        tools = srv.requests[0]["tools"]
    summary = _summary(out)
    groups = summary["groups"]
    assert set(groups) == set(KINDS)
    for kind in KINDS:
        assert groups[kind]["pass_at_k"]["pass@1"] == (0.0 if kind == "race" else 1.0), kind
    assert summary["pass_at_k"]["pass@1"] == 14 / 16 and summary["model"] == "scripted"
    assert [t["function"]["name"] for t in tools] == ["answer"]
    assert asked.count("bank") == 4  # two questions, each nudged once after a text reply
    assert "race" in res.output and "pass@1" in res.output


def test_oracle_scores_one_and_nop_zero_on_every_kind(tmp_path: Path) -> None:
    for agent, want in (("oracle", 1.0), ("nop", 0.0)):
        out = tmp_path / agent
        res = _eval("--agent", agent, "--out", str(out))
        assert res.exit_code == 0, res.output
        summary = _summary(out)
        assert {k: g["pass_at_k"]["pass@1"] for k, g in summary["groups"].items()} == dict.fromkeys(
            KINDS, want
        )
        assert summary["status_counts"]["infrastructure"] == 0
