"""Tasks chosen at reset (options, the suite env), and the flat terminal info keys."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import cudaenv
from cudaenv.env.info import TERMINAL_KEYS
from cudaenv.errors import ModeError, ProblemNotFoundError, SandboxError, SpecError
from cudaenv.problems import load_suite
from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem

SUB_HEADER = "int sub(int a, int b);\n"
SUB_TEST = CPU_TEST.replace('"add.h"', '"sub.h"').replace(
    "add(2, 3) != 5 || add(-4, 4) != 0", "sub(5, 3) != 2 || sub(4, 4) != 0"
)
SUB_SOLUTION = '#include "sub.h"\nint sub(int a, int b) { return a - b; }\n'


def _cpu(root: Path, task_id: str, header: tuple[str, str], test: str, solution: str) -> None:
    write_problem(
        root,
        task_id,
        spec={
            "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
            "metadata": {"difficulty": "easy", "tags": ["cpu"], "requires_gpu": False},
        },
        files={
            f"context/include/{header[0]}": header[1],
            "test/test_main.cpp": test,
            "solution/solution.cpp": solution,
        },
    )


@pytest.fixture
def two_dir(tmp_path: Path) -> str:
    """Two CPU problems (cpu-add, cpu-sub) in one suite directory."""
    root = tmp_path / "two"
    _cpu(root, "cpu-add", ("add.h", CPU_HEADER), CPU_TEST, CPU_SOLUTION)
    _cpu(root, "cpu-sub", ("sub.h", SUB_HEADER), SUB_TEST, SUB_SOLUTION)
    return str(root)


def act(tool: str, **args) -> dict:
    return {"tool": tool, "args": args}


def test_reset_options_switch_the_task(two_dir: str) -> None:
    env = cudaenv.make("cpu-add", source=two_dir)
    obs, info = env.reset(options={"task_id": "cpu-sub"})
    assert info["task_id"] == "cpu-sub" and "sub.h" in obs and env.problem.task_id == "cpu-sub"
    env.step(act("write_file", path="solution.cpp", content=SUB_SOLUTION))
    *_, reward, term, _, info = env.step(act("submit"))
    assert term and reward == 1.0 and info["task_id"] == "cpu-sub"
    obs, info = env.reset()  # the switch lasts
    assert info["task_id"] == "cpu-sub"
    obs, info = env.reset(options={"task_id": "cpu-add", "mode": "solve"})
    assert info["task_id"] == "cpu-add" and "add.h" in obs
    with pytest.raises(ProblemNotFoundError, match=r"'cpu-ad'.*did you mean cpu-add"):
        env.reset(options={"task_id": "cpu-ad"})
    with pytest.raises(ModeError, match="benchmark"):
        env.reset(options={"mode": "optimize"})  # no baseline: refused, episode untouched
    with pytest.raises(ModeError, match="unknown mode"):
        env.reset(options={"mode": "golf"})
    with pytest.raises(SpecError, match="task_ids"):
        env.reset(options={"task_ids": ["cpu-add"]})
    obs, *_ = env.step(act("list_files"))  # the refused resets left the episode running
    assert "include/add.h" in obs
    env.close()


def test_reset_options_switch_mode_on_a_bundled_problem() -> None:
    suite = load_suite("builtin").filter(with_benchmark=True)
    problem = next(p for p in suite if p.baseline_solution is not None)
    env = cudaenv.make(problem)
    obs, info = env.reset(options={"mode": "optimize"})
    assert info["mode"] == "optimize" and "Benchmark command" in obs
    base = problem.baseline_solution.files[0]
    obs, *_ = env.step(act("read_file", path=base.path))
    assert obs == base.content
    _, info = env.reset(options={"mode": "solve"})
    assert info["mode"] == "solve"
    env.close()


def test_suite_env_draws_tasks_by_seed_and_honours_the_option(two_dir: str) -> None:
    env = cudaenv.make_suite(two_dir)
    assert sorted(env.problems.ids) == ["cpu-add", "cpu-sub"]
    first = [env.reset(seed=s)[1]["task_id"] for s in range(12)]
    again = [env.reset(seed=s)[1]["task_id"] for s in range(12)]
    assert first == again and set(first) == {"cpu-add", "cpu-sub"}
    env.reset(seed=5)
    unseeded = [env.reset()[1]["task_id"] for _ in range(8)]
    env.reset(seed=5)
    assert [env.reset()[1]["task_id"] for _ in range(8)] == unseeded  # one seeded stream
    _, info = env.reset(seed=0, options={"task_id": "cpu-sub"})
    assert info["task_id"] == "cpu-sub"
    env.close()
    only = cudaenv.make_suite(two_dir, ids=["cpu-sub"])
    assert {only.reset(seed=s)[1]["task_id"] for s in range(4)} == {"cpu-sub"}
    with pytest.raises(ProblemNotFoundError, match="cpu-add"):
        only.reset(options={"task_id": "cpu-add"})  # outside the chosen ids
    only.close()
    with pytest.raises(ProblemNotFoundError, match=r"'cpu-sbu'.*did you mean cpu-sub"):
        cudaenv.make_suite(two_dir, ids=["cpu-sbu"])
    with pytest.raises(SpecError, match="no problem"):
        cudaenv.make_suite(two_dir, groups=["nope"])
    with pytest.raises(ModeError, match="cpu-add"):
        cudaenv.make_suite(two_dir, ids=["cpu-add"], mode="optimize")


def test_gymnasium_make_suite_id_and_check_env(two_dir: str) -> None:
    env = gym.make("cudaenv/suite-v0", source=two_dir, ids=["cpu-add", "cpu-sub"])
    obs, info = env.reset(seed=1)
    assert info["task_id"] in obs
    env.close()
    bundled = gym.make("cudaenv/suite-v0", groups=["cuda-python"])
    _, info = bundled.reset(seed=0)
    assert info["task_id"].startswith("py-")
    bundled.close()
    suite_env = cudaenv.make_suite(two_dir)
    check_env(suite_env, skip_render_check=True)
    suite_env.close()
    plain = cudaenv.make("cpu-add", source=two_dir)
    check_env(plain, skip_render_check=True)
    plain.close()


def _json_keys(info: dict) -> dict:
    flat = {k: info[k] for k in TERMINAL_KEYS}
    assert json.loads(json.dumps(flat)) == flat
    return flat


def test_terminal_info_keys(two_dir: str) -> None:
    env = cudaenv.make("cpu-add", source=two_dir, max_steps=3)
    env.reset()
    env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    _, reward, *_, info = env.step(act("submit"))
    assert _json_keys(info) == {
        "is_success": True, "reward_valid": True, "failure": None, "reason": "passed",
        "task_id": "cpu-add", "mode": "solve", "speedup": None, "truncation_reason": None,
    }  # fmt: skip
    assert reward == 1.0 and info["verdict"].passed and info["trajectory"].reward == 1.0
    env.reset()
    _, reward, *_, info = env.step(act("submit"))
    flat = _json_keys(info)
    assert flat["is_success"] is False and flat["reward_valid"] is True
    assert flat["failure"] == "agent" and flat["reason"] and reward == 0.0
    env.reset()  # truncated by the step limit: the same keys
    env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    env.step(act("list_files"))
    _, reward, term, trunc, info = env.step(act("list_files"))
    flat = _json_keys(info)
    assert trunc and not term and flat["truncation_reason"] == "max_steps"
    assert flat["is_success"] is True and reward == 1.0
    env.close()
    ungraded = cudaenv.make("cpu-add", source=two_dir, max_steps=1, grade_on_truncation=False)
    ungraded.reset()
    _, reward, _, trunc, info = ungraded.step(act("list_files"))
    flat = _json_keys(info)
    assert trunc and "verdict" not in info and flat["is_success"] is False
    assert flat["reward_valid"] is True and flat["failure"] is None
    ungraded.close()


def test_infrastructure_verdict_masks_the_reward(two_dir: str) -> None:
    """A grading sandbox that cannot start is infrastructure: reward_valid is False."""

    def broken():
        raise SandboxError("no sandbox today (test)")

    env = cudaenv.make("cpu-add", source=two_dir, grading_sandbox=broken)
    env.reset()
    env.step(act("write_file", path="solution.cpp", content=CPU_SOLUTION))
    _, reward, term, _, info = env.step(act("submit"))
    flat = _json_keys(info)
    assert term and flat["reward_valid"] is False and flat["failure"] == "infrastructure"
    assert flat["is_success"] is False and reward == 0.0 and "no sandbox today" in flat["reason"]
    env.close()
