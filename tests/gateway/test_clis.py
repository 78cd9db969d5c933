"""The real CLIs, in a network namespace of their own, through the gateway only.

claude-code and opencode run as the recipes run them (the recipes' commands, environment and
config files), under a plain ``bwrap --unshare-net`` with the gateway's socket and the
forwarder bound in and the session token as their API key: they reach the scripted model
servers through the gateway, write the solution into the workspace, and every model call is
captured with its usage. A budget trips: the CLI gets the API's error, stops, and the session
says why. The real key appears in no file, output or environment the CLI had.

``slow``; skipped when the CLI is not installed (``.ci/agents-setup.sh`` installs both).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudaenv.agents.recipes import load_recipe, render_config, render_env, render_run
from cudaenv.gateway import Gateway, Session, Upstream
from cudaenv.gateway.sandboxing import base_url, bwrap_args, forwarder_command
from tests.agents.anthropic_server import AnthropicServer, text, tool_use
from tests.agents.openai_stream_server import StreamingScriptedServer
from tests.agents.scripted_server import text as oa_text
from tests.agents.scripted_server import tool_call
from tests.gateway.conftest import KEY
from tests.gateway.test_egress import _bwrap

SOLUTION = "int add(int a, int b) { return a + b; }\n"
TASK = "Write solution.cpp with `int add(int a, int b)` returning a + b."


def needs(binary: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which(binary) is None, reason=f"{binary!r} is not installed (.ci/agents-setup.sh)"
    )


def run_cli(
    name: str, gateway: Gateway, session: Session, root: Path
) -> subprocess.CompletedProcess[str]:
    """The recipe's CLI on ``TASK`` in ``root/workspace``, network unshared, via the gateway."""
    recipe = load_recipe(name)
    workspace, private = root / "workspace", root / "agent"
    workspace.mkdir()
    (private / "home").mkdir(parents=True)
    (private / "instruction.md").write_text(TASK)
    values: dict[str, Any] = {
        "api_key": session.token, "model": "scripted",
        "base_url": base_url("anthropic" if name == "claude-code" else "openai"),
        "provider": recipe.provider or "", "max_turns": 6, "home": "/run/agent/home",
        "workspace": "/run/workspace", "instruction_file": "/run/agent/instruction.md",
    }  # fmt: skip
    for rel, template in recipe.config_files.items():
        target = private / "home" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_config(recipe.config_template(template), values))
    command = f"{forwarder_command(sys.executable)} && {render_run(recipe, values)}"
    assert gateway.socket_path is not None
    argv = [
        _bwrap(), "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-net", "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--tmpfs", "/run", *bwrap_args(gateway.socket_path),
        "--bind", str(private), "/run/agent", "--bind", str(workspace), "/run/workspace",
        "--chdir", "/run/workspace", "--", "bash", "-c", command,
    ]  # fmt: skip
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **render_env(recipe, values)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def assert_key_absent(root: Path, run: subprocess.CompletedProcess[str]) -> None:
    """The real key is in nothing the CLI wrote or printed (its env never held it)."""
    assert KEY not in run.stdout + run.stderr
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def assert_all_captured(session: Session, requests: list[dict[str, Any]]) -> None:
    calls = [c for c in session.calls if c.api is not None]
    assert len(calls) == len(requests) >= 2
    assert all(c.status == 200 and c.usage.reported and c.usage.total > 0 for c in calls)
    assert all(c.turn is not None for c in calls)
    assert all(r["model"] == "scripted-served" for r in requests)  # the session's override


@pytest.mark.slow
@needs("claude")
def test_claude_code_through_the_gateway_only(gateway: Gateway, tmp_path: Path) -> None:
    script = [tool_use("Write", file_path="{cwd}/solution.cpp", content=SOLUTION), text("Done.")]
    with AnthropicServer(script) as up:
        session = gateway.open_session(
            upstream=Upstream(base_url=up.base_url + "/v1", api_key=KEY), model="scripted-served"
        )
        run = run_cli("claude-code", gateway, session, tmp_path)
        requests = list(up.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "workspace" / "solution.cpp").read_text() == SOLUTION
    assert_all_captured(session, requests)
    assert any(
        b.get("name") == "Write" for t in session.turns() for b in t.message["content"] or []
    )
    assert_key_absent(tmp_path, run)


@pytest.mark.slow
@needs("claude")
def test_claude_code_gets_the_budget_error(gateway: Gateway, tmp_path: Path) -> None:
    ls = tool_use("Bash", command="ls", description="list files")
    with AnthropicServer([ls], default=ls) as up:
        session = gateway.open_session(
            upstream=Upstream(base_url=up.base_url + "/v1", api_key=KEY),
            budget={"max_requests": 2},
        )
        run = run_cli("claude-code", gateway, session, tmp_path)
        agent_requests = list(up.agent_requests)
    assert session.truncation_reason == "gateway_requests"
    assert len(agent_requests) <= 2  # nothing past the budget reached the upstream
    assert "truncated: gateway_requests" in run.stdout  # the CLI saw the API's error message
    assert session.calls[-1].refused == "gateway_requests"


@pytest.mark.slow
@needs("opencode")
def test_opencode_through_the_gateway_only(gateway: Gateway, tmp_path: Path) -> None:
    script = [
        tool_call("write", filePath="{cwd}/solution.cpp", content=SOLUTION),
        oa_text("Wrote solution.cpp."),
    ]
    with StreamingScriptedServer(script, usage=(100, 20)) as up:
        session = gateway.open_session(
            upstream=Upstream(base_url=up.base_url, api_key=KEY), model="scripted-served"
        )
        run = run_cli("opencode", gateway, session, tmp_path)
        requests = list(up.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "workspace" / "solution.cpp").read_text() == SOLUTION
    assert_all_captured(session, requests)
    assert_key_absent(tmp_path, run)
