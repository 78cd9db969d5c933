"""BatchedEnvs follows gymnasium 1.x vector conventions in each autoreset mode."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

from cudaenv.errors import CudaEnvError, SpecError
from cudaenv.problems import load_suite
from cudaenv.rollout import BatchedEnvs
from tests.conftest import CPU_SOLUTION

WRITE = {"tool": "write_file", "args": {"path": "solution.cpp", "content": CPU_SOLUTION}}
SUBMIT = {"tool": "submit"}
LIST = {"tool": "list_files"}


@pytest.fixture
def cpu_problem(cpu_problem_dir: Path):
    return load_suite(cpu_problem_dir.parent)["cpu-add"]


def test_vector_env_shape_and_disabled_mode(cpu_problem) -> None:
    with BatchedEnvs([cpu_problem], 2, autoreset_mode="disabled") as envs:
        assert isinstance(envs, VectorEnv) and envs.num_envs == 2
        assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
        obs, infos = envs.reset(seed=0)
        assert isinstance(obs, tuple) and len(obs) == 2 and all("cpu-add" in o for o in obs)
        assert envs.observation_space.contains(obs)
        assert list(infos["task_id"]) == ["cpu-add", "cpu-add"] and infos["_task_id"].all()
        assert envs.messages(0)[0]["role"] == "system" and envs.tools
        obs, rewards, term, _, infos = envs.step(
            [WRITE, {"tool": "bash", "args": {"command": "echo hi"}}]
        )
        assert "wrote" in obs[0] and "hi" in obs[1] and rewards.tolist() == [0, 0]
        assert term.dtype == np.bool_ and not term.any() and "is_success" not in infos
        obs, rewards, term, _, infos = envs.step([SUBMIT, LIST])
        assert rewards.tolist() == [1.0, 0.0] and term.tolist() == [True, False]
        assert infos["_is_success"].tolist() == [True, False] and infos["is_success"][0]
        assert infos["verdict"][0].passed and infos["_verdict"].tolist() == [True, False]
        assert envs.done.tolist() == [True, False]
        with pytest.raises(CudaEnvError, match="env 0 has finished"):
            envs.step([LIST, LIST])
        obs, rewards, term, _trunc, infos = envs.step([None, SUBMIT])
        assert rewards.tolist() == [0.0, 0.0] and term.tolist() == [False, True]
        assert infos["_is_success"].tolist() == [False, True] and not infos["is_success"][1]
        assert "submitted" in obs[0] and envs.done.all()
        json.dumps({k: v.tolist() for k, v in infos.items() if k in ("is_success", "reward_valid")})
        obs, infos = envs.reset(options={"reset_mask": np.array([False, True])})
        assert envs.done.tolist() == [True, False] and infos["_task_id"].tolist() == [False, True]
        assert "submitted" in obs[0] and "cpu-add" in obs[1]
        with pytest.raises(SpecError, match="reset_mask"):
            envs.reset(options={"reset_mask": [True, False]})


def test_same_step_autoreset_carries_final_obs_and_info(cpu_problem) -> None:
    with BatchedEnvs([cpu_problem], 2, autoreset_mode=AutoresetMode.SAME_STEP) as envs:
        envs.reset()
        envs.step([WRITE, LIST])
        obs, rewards, term, _, infos = envs.step([SUBMIT, LIST])
        assert term.tolist() == [True, False] and rewards.tolist() == [1.0, 0.0]
        assert "cpu-add" in obs[0] and "Implement" in obs[0]  # the next episode's first obs
        assert infos["_final_obs"].tolist() == [True, False]
        assert infos["final_obs"][0] == "submitted for grading" and infos["final_obs"][1] is None
        final = infos["final_info"]
        assert final["_is_success"].tolist() == [True, False] and final["is_success"][0]
        assert final["trajectory"][0].reward == 1.0
        assert not envs.done.any()
        obs, *_ = envs.step([LIST, LIST])
        assert "solution.cpp" not in obs[0]  # a fresh workspace


def test_next_step_autoreset_is_the_default(cpu_problem) -> None:
    with BatchedEnvs([cpu_problem], 2) as envs:
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        envs.reset()
        obs, rewards, term, _, infos = envs.step([SUBMIT, LIST])
        assert term.tolist() == [True, False] and obs[0] == "submitted for grading"
        assert infos["_reward_valid"].tolist() == [True, False]
        obs, rewards, term, trunc, infos = envs.step([SUBMIT, LIST])  # env 0: reset, action ignored
        assert "Implement" in obs[0] and rewards[0] == 0 and not term[0] and not trunc[0]
        assert infos["_tools"].tolist() == [True, False]  # env 0 reports its reset info
        obs, rewards, term, *_ = envs.step([LIST, SUBMIT])
        assert "include/add.h" in obs[0] and term.tolist() == [False, True]
    with pytest.raises(SpecError, match="autoreset_mode"):
        BatchedEnvs([cpu_problem], 1, autoreset_mode="sometimes")
