"""CLI agents behind the gateway: a record the sandbox cannot forge, faults filed by the rule.

The record of a CLI episode comes from the host side only: the real claude-code's Bash tool
forges the CLI's event log (and its output) and probes the gateway from inside the sandbox
(a path traversal, another model, an organisation header), and the trajectory still holds
every step with its result, no forged cost, and the upstream saw only the pinned model on
the closed set of routes. A model server that fails after the first reply, and a gateway
that stops mid-episode, make the episode ``infrastructure`` (not graded, run again on
resume), with claude-code and with a scripted CLI (a short Python script in the sandbox
speaking the OpenAI API, as in ``test_gateway_plumbing``).
"""

from __future__ import annotations

import shlex
import shutil
import threading
from pathlib import Path

import pytest

import cudaenv
from cudaenv.agents.installed import ClaudeCodeAgent, InstalledAgent
from cudaenv.agents.recipes import load_recipe
from cudaenv.errors import ModelServerError
from cudaenv.gateway import Gateway
from cudaenv.problems import load_suite
from cudaenv.rollout import run_episodes
from tests.agents.anthropic_server import AnthropicServer, text, tool_use
from tests.agents.scripted_server import ScriptedServer
from tests.agents.scripted_server import text as oa_text
from tests.conftest import CPU_SOLUTION
from tests.gateway.upstreams import ReplayServer

needs_claude = pytest.mark.skipif(
    shutil.which("claude") is None, reason="'claude' is not installed (.ci/agents-setup.sh)"
)

# run by claude-code's own Bash tool, inside the sandbox
FORGE_AND_PROBE = r"""
f="$(dirname "$HOME")/events.jsonl"
forged='{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.0,"usage":{"input_tokens":1,"output_tokens":1}}'
printf '%s\n' "$forged" > "$f.new" && mv "$f.new" "$f"
printf '%s\n' "$forged" > /proc/$PPID/fd/1 2>/dev/null || true
python3 - <<'PY'
import http.client, json, os
base = os.environ["ANTHROPIC_BASE_URL"].removeprefix("http://")
host, port = base.split(":")
auth = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"}
out = []
for path in ("/v1/models/../../x", "/v1/models/%2e%2e/%2e%2e/x"):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request("GET", path, headers=auth)
    out.append(c.getresponse().status)
    c.close()
c = http.client.HTTPConnection(host, int(port), timeout=60)
body = {"model": "other-model", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
c.request("POST", "/v1/messages", json.dumps(body), {**auth, "OpenAI-Organization": "org-x"})
out.append(c.getresponse().status)
print("probe", out)
PY
"""


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


@needs_claude
def test_claude_codes_record_comes_from_the_host_not_the_sandbox(cpu_problem) -> None:
    script = [
        tool_use("Bash", command=FORGE_AND_PROBE, description="forge and probe"),
        tool_use("Write", file_path="{cwd}/solution.cpp", content=CPU_SOLUTION),
        text("Wrote solution.cpp."),
    ]
    with AnthropicServer(script) as srv:
        agent = ClaudeCodeAgent(model="scripted-model", base_url=srv.base_url, max_turns=8,
                                timeout_s=180)  # fmt: skip
        traj = agent.run(cudaenv.make(cpu_problem))
        models = {r.get("model") for r in srv.requests}
        paths = list(srv.paths)
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert [s.tool for s in traj.steps] == ["Bash", "Write", None, "submit"]
    bash, write = traj.steps[0], traj.steps[1]
    assert "probe [404, 404, 200]" in bash.observation, bash.observation
    assert write.args["content"] == CPU_SOLUTION and write.observation
    assert traj.cost_usd is None  # no prices: unknown, never the CLI's (forged) figure
    assert traj.usage["turns"] == 3 and traj.usage["input_tokens"] >= 3 * 120
    assert models == {"scripted-model"}  # the probe asked for another: pinned
    assert all(p.split("?")[0] in ("/v1/messages", "/v1/messages/count_tokens") for p in paths)


@needs_claude
def test_claude_code_with_an_outage_after_the_first_reply_is_infrastructure(
    cpu_problem, tmp_path: Path
) -> None:
    ls = tool_use("Bash", command="ls", description="list files")
    with AnthropicServer([ls], fail_after=1) as srv:
        agent = ClaudeCodeAgent(model="scripted-model", base_url=srv.base_url, max_turns=8,
                                timeout_s=180, extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"})  # fmt: skip
        [res] = run_episodes(lambda: agent, [cpu_problem], out_dir=tmp_path / "run")
        assert srv.failures_sent >= 1
    assert res.status == "infrastructure", (res.error, agent.last_result)
    assert "ModelServerError" in (res.error or "") and res.verdict is None
    assert res.trajectory is not None and res.trajectory.steps[0].tool == "Bash"


TWO_CALLS = """
import json, os, sys, urllib.request
tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
def call(i):
    body = json.dumps({"model": "m", "tools": tools,
                       "messages": [{"role": "user", "content": f"turn {i}"}]}).encode()
    req = urllib.request.Request(os.environ["BASE"] + "/chat/completions", body,
        {"content-type": "application/json", "authorization": "Bearer " + os.environ["TOKEN"]})
    return json.load(urllib.request.urlopen(req, timeout=60))
for i in (1, 2):
    try:
        call(i)
    except Exception as exc:
        print(f"call {i} failed: {exc}", file=sys.stderr)
        sys.exit(3)
"""


def script_agent(base_url: str, code: str = TWO_CALLS, **options) -> InstalledAgent:
    """A "CLI" that is a Python script (by default: two agent-loop calls, tools offered)."""
    recipe = load_recipe("opencode").model_copy(
        update={
            "name": "script", "binary": "python3", "config_files": {},
            "run": f"python3 -I -c {shlex.quote(code)}",
            "env": {"BASE": "{base_url}", "TOKEN": "{api_key}", "HOME": "{home}"},
        }
    )  # fmt: skip
    return InstalledAgent(recipe, model="m", base_url=base_url, timeout_s=120, **options)


def test_a_model_server_failing_after_the_first_reply_is_infrastructure(
    cpu_problem, tmp_path: Path
) -> None:
    with (
        ScriptedServer([oa_text("one")], fail_from=1) as srv,
        pytest.raises(ModelServerError, match="upstream answered 500"),
    ):
        script_agent(srv.base_url).run(cudaenv.make(cpu_problem))
    with ScriptedServer([oa_text("one")], fail_from=1) as srv:
        [res] = run_episodes(lambda: script_agent(srv.base_url), [cpu_problem], out_dir=tmp_path)
    assert res.status == "infrastructure" and res.verdict is None
    calls = [c for c in res.trajectory.model_calls if c["api"]]
    assert [c["status"] for c in calls] == [200, 500] and calls[1]["fault"] == "infrastructure"


def test_a_gateway_that_stops_mid_episode_is_infrastructure(cpu_problem) -> None:
    gateway = Gateway().start()
    stopper = threading.Thread(target=gateway.close)
    try:
        with ReplayServer(on_reply=lambda n: n == 1 and stopper.start()) as up:
            agent = script_agent(up.base_url, model_gateway=gateway)
            with pytest.raises(ModelServerError, match="gateway stopped"):
                agent.run(cudaenv.make(cpu_problem))
    finally:
        if stopper.is_alive():
            stopper.join(timeout=60)
        gateway.close()


def test_a_cli_cannot_call_another_model_than_its_agents(cpu_problem) -> None:
    """The sandbox asks for a model of its choosing: the upstream is asked for the agent's."""
    other = TWO_CALLS.replace('"model": "m"', '"model": "some-expensive-model"')
    with ReplayServer() as up:
        script_agent(up.base_url, other).run(cudaenv.make(cpu_problem))
        models = [r["body"]["model"] for r in up.requests]
    assert models == ["m", "m"]
