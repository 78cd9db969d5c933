from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import cudaenv
from cudaenv.env.core import CudaEnv
from cudaenv.errors import ModeError
from cudaenv.problems import load_suite
from tests.conftest import CPU_SOLUTION


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def act(tool: str, **args) -> dict:
    return {"tool": tool, "args": args}


def test_full_episode_reference_scores_one(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    obs, info = env.reset(seed=0)
    assert "cpu-add" in obs and "include/add.h" in obs and "solution.cpp" in obs
    assert info["task_id"] == "cpu-add" and {t["function"]["name"] for t in info["tools"]} >= {
        "bash",
        "submit",
    }
    obs, r, term, trunc, _ = env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    assert "wrote" in obs and r == 0 and not term
    obs, *_ = env.step(
        act("bash", command="g++ -I include -c solution.cpp -o /tmp/x.o && echo built")
    )
    assert "exit code: 0" in obs and "built" in obs
    obs, r, term, trunc, info = env.step(act("submit"))
    assert term and not trunc
    assert r == 1.0, info["verdict"].reason
    assert info["verdict"].passed is True
    traj = info["trajectory"]
    assert [s.tool for s in traj.steps] == ["write_file", "bash", "submit"]
    json.loads(traj.model_dump_json())  # serialisable
    env.close()


def test_wrong_solution_scores_zero_and_nop_scores_zero(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    env.reset()
    env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION.replace("a + b", "a * b")))
    *_, r, _, _, info = env.step(act("submit"))
    assert r == 0.0 and info["verdict"].passed is False
    env.reset()
    *_, r, _, _, info = env.step(act("submit"))
    assert r == 0.0 and info["verdict"].compiled is False
    env.close()


def test_invalid_actions_are_observations_not_exceptions(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, max_steps=20)
    env.reset()
    cases = [
        ("{not json", "not valid JSON"),
        (act("rm_rf"), "unknown tool"),
        (act("bash"), "command"),
        (act("bash", command="true", timeout=10_000), "timeout"),
        ({"tool": "write_file", "args": "[1,2]"}, "object"),
        (42, "action must be an object"),
        (act("read_file", path="nope.txt"), "no such file"),
        (act("edit_file", path="include/add.h", old="zzz", new="y"), "found 0 matches"),
        (act("write_file", path="../escape.txt", content="x"), "error"),
    ]
    for i, (action, expect) in enumerate(cases, start=1):
        obs, r, term, trunc, info = env.step(action)
        assert obs.startswith("error"), (action, obs)
        assert expect in obs, (action, obs)
        assert r == 0 and not term and not trunc and info["step"] == i
    env.close()


def test_bad_paths_are_the_agents_and_name_the_path(cpu_problem) -> None:
    """A missing, escaping or unwritable path is an observation naming it, never "the
    sandbox failed" (which reads like infrastructure)."""
    env = cudaenv.make(cpu_problem, max_steps=20)
    env.reset()
    env.step(act("bash", command="ln -s /etc/hostname link.txt"))
    cases = [
        (act("write_file", path="../escape.txt", content="x"), "'../escape.txt'"),
        (act("read_file", path="/etc/passwd"), "'/etc/passwd'"),
        (act("read_file", path="link.txt"), "'link.txt'"),
        (act("read_file", path="gone/nope.txt"), "'gone/nope.txt'"),
        (act("write_file", path="include/add.h/x.txt", content="x"), "'include/add.h/x.txt'"),
    ]
    for action, path in cases:
        obs, _, term, _, info = env.step(action)
        assert obs.startswith("error") and path in obs, (action, obs)
        assert "sandbox failed" not in obs and not info["error"].startswith("sandbox"), obs
        assert not term
    env.close()


def test_actions_over_the_declared_size_are_refused_with_the_limit(cpu_problem) -> None:
    from cudaenv.env.tools import MAX_ACTION_CHARS

    env = cudaenv.make(cpu_problem, max_steps=20)
    env.reset()
    assert env.action_space.max_length == MAX_ACTION_CHARS
    big = "x" * (MAX_ACTION_CHARS + 1)
    for action in (
        act("write_file", path="big.txt", content=big),
        json.dumps(act("write_file", path="big.txt", content=big[:-10])),
        act("edit_file", path="include/add.h", old="int", new=big),
        act("bash", command=big),
    ):
        obs, _, term, _, _ = env.step(action)
        assert obs.startswith("error") and ("1,000,000" in obs or "1000000" in obs), obs[:300]
        assert not term
    obs, *_ = env.step(act("list_files"))
    assert "big.txt" not in obs
    obs, *_ = env.step(act("write_file", path="ok.txt", content="x" * (MAX_ACTION_CHARS // 2)))
    assert obs.startswith("wrote"), obs[:200]
    env.close()


def test_action_forms_and_messages(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem)
    env.reset()
    env.step(json.dumps(act("write_file", path="notes.txt", content="a\nb\nc\n")))
    obs, *_ = env.step(
        {
            "id": "call_x",
            "type": "function",
            "function": {
                "name": "read_file",
                "arguments": '{"path": "notes.txt", "start_line": 2, "end_line": 3}',
            },
        }
    )
    assert obs == "b\nc\n"

    class Fn:
        name = "edit_file"
        arguments = json.dumps({"path": "notes.txt", "old": "b", "new": "B"})

    class Call:
        id = "call_sdk"
        function = Fn()

    obs, *_ = env.step(Call())
    assert obs == "edited notes.txt"
    obs, *_ = env.step(act("list_files"))
    assert "notes.txt" in obs and "include/add.h" in obs
    msgs = env.messages
    assert [m["role"] for m in msgs[:2]] == ["system", "user"]
    assert msgs[4]["tool_calls"][0]["id"] == "call_x" and msgs[5] == {
        "role": "tool",
        "tool_call_id": "call_x",
        "content": "b\nc\n",
    }
    assert msgs[6]["tool_calls"][0]["id"] == "call_sdk"
    env.close()


def test_max_steps_truncates_and_grades(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, max_steps=2)
    env.reset()
    env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    _obs, r, term, trunc, info = env.step(act("bash", command="true"))
    assert trunc and not term and r == 1.0 and info["verdict"].passed
    env2 = cudaenv.make(cpu_problem, max_steps=1, grade_on_truncation=False)
    env2.reset()
    _, r, _, trunc, info = env2.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    assert trunc and r == 0 and "verdict" not in info


def test_token_budget_truncates(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, max_tokens=50, grade_on_truncation=False)
    env.reset()
    _, _, _, trunc, _ = env.step(act("bash", command="seq 1 10"))
    assert not trunc
    _, _, _, trunc, info = env.step(act("bash", command="seq 1 200"))
    assert trunc and info["trajectory"].truncation_reason == "max_tokens"


def test_step_after_end_and_render(cpu_problem) -> None:
    env = cudaenv.make(cpu_problem, render_mode="ansi")
    env.reset()
    env.step(act("bash", command="echo hello"))
    text = env.render()
    assert "hello" in text and ">>> [0] bash" in text
    env.step(act("submit"))
    with pytest.raises(cudaenv.errors.CudaEnvError):
        env.step(act("submit"))
    env.close()
    env.close()  # twice is harmless


def test_modes(cpu_problem) -> None:
    env = cudaenv.make(
        cpu_problem, mode="repair", repair_solution={"solution.cpp": CPU_SOLUTION.replace("+", "-")}
    )
    obs, _ = env.reset()
    assert "solution.cpp" in obs
    obs, *_ = env.step(act("read_file", path="solution.cpp"))
    assert "a - b" in obs
    env.step(act("edit_file", path="solution.cpp", old="a - b", new="a + b"))
    *_, r, _, _, _ = env.step(act("submit"))
    assert r == 1.0
    with pytest.raises(ModeError, match="benchmark"):
        cudaenv.make(cpu_problem, mode="optimize")
    with pytest.raises(ModeError, match="repair_solution"):
        cudaenv.make(cpu_problem, mode="repair")


def test_optimize_mode_starts_from_baseline() -> None:
    suite = load_suite("builtin").filter(with_benchmark=True)
    problem = next(p for p in suite if p.baseline_solution is not None)
    env = cudaenv.make(problem, mode="optimize")
    obs, _ = env.reset()
    assert "Benchmark command" in obs
    base = problem.baseline_solution.files[0]
    obs, *_ = env.step(act("read_file", path=base.path))
    assert obs == base.content
    env.close()


def test_gymnasium_make_registered_ids() -> None:
    suite = load_suite("builtin")
    ids = {k for k in gym.registry if k.startswith("cudaenv/")}
    for p in suite:
        assert cudaenv.env.env_id(p.task_id) in ids
    env = gym.make(cudaenv.env.env_id(suite[0].task_id))
    obs, _ = env.reset(seed=1)
    assert suite[0].task_id in obs
    env.close()


def test_register_suite(cpu_problem_dir: Path) -> None:
    suite = load_suite(cpu_problem_dir.parent)
    (eid,) = cudaenv.register_suite(suite, override=True)
    env = gym.make(eid)
    obs, _ = env.reset()
    assert "cpu-add" in obs
    env.close()


@pytest.mark.parametrize("task_id", load_suite("builtin").ids)
def test_check_env_every_bundled_problem(task_id: str) -> None:
    env = CudaEnv(task_id)
    check_env(env, skip_render_check=True)
    env.close()


def test_async_vector_env(cpu_problem_dir: Path) -> None:
    src = str(cpu_problem_dir.parent)
    # shared_memory=False: gymnasium 1.4 reads Text observations out of shared memory once, at
    # construction (a copied tuple, unlike Box views), so later observations never show up
    envs = gym.vector.AsyncVectorEnv(
        [lambda: CudaEnv("cpu-add", source=src)] * 2, shared_memory=False
    )
    obs, _ = envs.reset(seed=0)
    assert len(obs) == 2 and all("cpu-add" in o for o in obs)
    actions = [
        json.dumps(act("write_file", path="solution.cpp", content=CPU_SOLUTION)),
        json.dumps(act("submit")),
    ]
    obs, rewards, term, _trunc, _ = envs.step(actions)
    assert list(term) == [False, True]
    assert list(rewards) == [0.0, 0.0]  # the second env submitted an empty workspace
    envs.close()


def test_instruction_states_what_the_grader_forbids() -> None:
    """An honest agent is told the rule the static check enforces (and only where there is one)."""
    suite = load_suite("builtin")
    with CudaEnv(suite["reduce-sum"]) as env:
        obs, _ = env.reset()
    assert "Not allowed in the solution" in obs and "CUB" in obs and "Thrust" in obs
    with CudaEnv(suite["py-vector-add"]) as env:
        obs, _ = env.reset()
    assert "Not allowed in the solution (checked in the code, not in comments): numpy.add." in obs
    with CudaEnv(suite["cub-device-scan"]) as env:  # uses CUB on purpose: no such line
        obs, _ = env.reset()
    assert "Not allowed in the solution" not in obs
