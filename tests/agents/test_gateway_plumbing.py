"""Gateway mode without a real CLI: a recipe whose "CLI" is a short Python script.

Runs everywhere (no npm CLI needed): the script, in the episode's network-less sandbox, posts
one chat completion to the base URL and key the recipe hands it (the forwarder's loopback
address and the session token), then writes the solution. The call reaches the upstream
through the gateway with the real key, is in ``model_calls`` and ``turns``, and the workspace
is graded.
"""

from __future__ import annotations

import base64
import shlex
from pathlib import Path

import pytest

import cudaenv
from cudaenv.agents.installed import InstalledAgent
from cudaenv.agents.recipes import load_recipe
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION
from tests.gateway.upstreams import ReplayServer

KEY = "sk-upstream-secret-plumbing-0123456789"
SCRIPT = """
import base64, json, os, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["BASE"] + "/chat/completions", body,
    {"content-type": "application/json", "authorization": "Bearer " + os.environ["TOKEN"]})
reply = json.load(urllib.request.urlopen(req, timeout=60))
assert reply["choices"][0]["message"]["content"]
open("solution.cpp", "w").write(base64.b64decode(os.environ["SOLUTION"]).decode())
print(json.dumps({"type": "text", "part": {"text": "done"}}))
"""


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def script_recipe():
    return load_recipe("opencode").model_copy(
        update={
            "name": "script",
            "binary": "python3",
            "run": f"python3 -I -c {shlex.quote(SCRIPT)}",
            "env": {"BASE": "{base_url}", "TOKEN": "{api_key}", "HOME": "{home}"},
            "config_files": {},
        }
    )


def test_a_scripted_cli_goes_through_the_gateway(
    monkeypatch: pytest.MonkeyPatch, cpu_problem
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    solution = base64.b64encode(CPU_SOLUTION.encode()).decode()
    with ReplayServer() as up:
        agent = InstalledAgent(
            script_recipe(), model="m", base_url=up.base_url, timeout_s=120,
            extra_env={"SOLUTION": solution},
        )  # fmt: skip
        traj = agent.run(cudaenv.make(cpu_problem))
        seen = list(up.requests)
    assert traj.reward == 1.0, (traj.verdict, agent.last_result)
    assert len(seen) == 1 and KEY in str(seen[0])  # the upstream got the real key
    (call,) = traj.model_calls
    assert call["status"] == 200 and call["usage"]["input_tokens"] == 120
    assert len(traj.turns) == 1 and traj.usage["output_tokens"] == 30
    assert KEY not in traj.model_dump_json()
    assert agent.last_session_summary is not None
    assert agent.last_session_summary["requests"] == 1
