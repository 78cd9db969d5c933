"""The TRL adapter through its public methods, as GRPOTrainer drives it (coroutines awaited,
one reply's calls gathered); the training example."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the trl extra is not installed (pip install 'cudaenv[trl]')")

from cudaenv.errors import (
    CudaEnvError,
    ModeError,
    ProblemNotFoundError,
    SandboxError,
    SpecError,
)
from cudaenv.grading.request import GradeRequest, grade_here
from cudaenv.grading.verdict import Verdict
from cudaenv.integrations.trl import dataset_rows, environment_factory, mask_infrastructure
from cudaenv.problems import load_suite
from tests.conftest import descendants, sandbox_dirs

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["py-vector-add", "py-relu-clip"]
TOOLS = ["bash", "edit_file", "list_files", "read_file", "submit", "write_file"]


def _broken_sandbox():
    raise SandboxError("no sandbox today: the pool is exhausted")


def run(coro: Any) -> Any:
    """One awaited call, as TRL's event loop thread awaits a tool or the reward."""
    return asyncio.run(coro)


def test_public_functions_are_the_six_tools_with_schemas() -> None:
    """TRL turns every public function but reset/get_reward into a tool (inspect, as TRL does);
    each one's schema (type hints + Args:) is what transformers renders into the prompt."""
    from transformers.utils import get_json_schema

    env_cls = environment_factory("builtin", ids=TASKS)
    public = [n for n, _ in inspect.getmembers(env_cls, inspect.isfunction) if n[0] != "_"]
    assert sorted(set(public) - {"reset", "get_reward"}) == TOOLS
    # coroutine functions: TRL awaits them on its loop (its async tool and reward paths)
    assert all(inspect.iscoroutinefunction(getattr(env_cls, n)) for n in [*TOOLS, "get_reward"])
    assert not inspect.iscoroutinefunction(env_cls.reset)  # TRL calls reset synchronously
    env = env_cls()
    schemas = {n: get_json_schema(getattr(env, n))["function"] for n in TOOLS}
    assert schemas["write_file"]["parameters"]["required"] == ["path", "content"]
    assert schemas["bash"]["parameters"]["properties"]["timeout"]["type"] == "integer"
    assert all(s["description"] for s in schemas.values())


def test_dataset_rows_feed_reset_and_a_dataset() -> None:
    import datasets

    rows = dataset_rows("builtin", "solve", ids=TASKS)
    assert sorted(r["task_id"] for r in rows) == sorted(TASKS)
    assert rows[0]["prompt"][-1] == {"role": "user", "content": ""}
    ds = datasets.Dataset.from_list(rows)
    assert set(ds.column_names) == {"prompt", "task_id"}
    env = environment_factory("builtin", ids=TASKS)()
    text = env.reset(**ds[0])  # TRL passes the whole row
    assert "solution.py" in text
    assert run(env.submit()).startswith("submitted for grading")
    assert run(env.get_reward()) == 0.0
    with pytest.raises(ProblemNotFoundError, match="py-vector-ad"):
        dataset_rows("builtin", ids=["py-vector-ad"])


def test_bad_factory_options_fail_now_naming_them() -> None:
    with pytest.raises(SpecError, match="max_stepz"):
        environment_factory("builtin", max_stepz=3)
    with pytest.raises(ModeError, match="'solv'"):
        environment_factory("builtin", mode="solv")
    env = environment_factory("builtin", ids=TASKS)()
    with pytest.raises(ProblemNotFoundError, match="py-vector-ad"):
        env.reset(task_id="py-vector-ad")


def test_nop_submit_scores_zero_and_later_calls_raise() -> None:
    env = environment_factory("builtin", ids=TASKS)()
    with pytest.raises(CudaEnvError, match="before reset"):
        run(env.list_files())
    env.reset(task_id="py-vector-add")
    run(env.submit())
    assert run(env.get_reward()) == 0.0
    assert env.info["reward_valid"] is True and env.info["failure"] == "agent"
    for call in (env.submit, env.list_files, lambda: env.write_file("solution.py", "x = 1\n")):
        with pytest.raises(CudaEnvError, match="episode is over"):
            run(call())
    assert run(env.get_reward()) == 0.0  # idempotent


def test_malformed_tool_arguments_are_an_error_observation() -> None:
    env = environment_factory("builtin", ids=TASKS)()
    env.reset(task_id="py-relu-clip")
    bad_path = run(env.write_file(path=5, content="x"))  # type: ignore[arg-type]
    assert bad_path.startswith("error:") and "path" in bad_path
    bad_timeout = run(env.bash(command="ls", timeout=0))
    assert bad_timeout.startswith("error:") and "timeout" in bad_timeout
    assert not run(env.write_file("scratch.txt", "ok\n")).startswith("error")  # goes on
    assert "scratch.txt" in run(env.list_files())
    run(env.submit())
    assert run(env.get_reward()) == 0.0


def test_broken_sandbox_factory_gives_none_the_mask() -> None:
    env = environment_factory("builtin", ids=TASKS, sandbox=_broken_sandbox)()
    text = env.reset(task_id="py-vector-add")
    assert text.startswith("error: the environment could not start") and "exhausted" in text
    assert run(env.get_reward()) is None
    with pytest.raises(CudaEnvError, match="failed at reset"):
        run(env.bash("ls"))


def test_broken_grading_sandbox_gives_none() -> None:
    env = environment_factory("builtin", ids=TASKS, grading_sandbox=_broken_sandbox)()
    env.reset(task_id="py-vector-add")
    run(env.write_file("solution.py", "def vector_add(a, b, out):\n    pass\n"))
    run(env.submit())
    assert run(env.get_reward()) is None
    assert env.info["reward_valid"] is False and env.info["failure"] == "infrastructure"


def test_reused_instance_two_tasks_in_a_row_leaves_nothing_behind() -> None:
    env_cls = environment_factory("builtin", ids=TASKS)
    warm = env_cls()  # helpers the process keeps (the first grading) start here
    warm.reset(task_id="py-relu-clip")
    run(warm.submit())
    run(warm.get_reward())
    dirs, procs = sandbox_dirs(), descendants()
    env = env_cls()
    env.reset(task_id="py-vector-add")
    run(env.write_file("notes.txt", "first task\n"))
    assert sandbox_dirs() - dirs  # the count sees a live episode
    text = env.reset(task_id="py-relu-clip")  # the unfinished first episode's sandbox goes
    assert "relu" in text.lower()
    assert "notes.txt" not in run(env.list_files())
    assert len(sandbox_dirs() - dirs) == 1
    assert run(env.get_reward()) == 0.0  # never submitted: graded as it stands (empty)
    assert env.info["truncation_reason"] is None and env.info["task_id"] == "py-relu-clip"
    assert sandbox_dirs() <= dirs
    assert descendants() <= procs


def test_unsubmitted_rollout_scores_zero_without_grading_when_asked() -> None:
    dirs = sandbox_dirs()
    env = environment_factory("builtin", ids=TASKS, grade_on_truncation=False)()
    env.reset(task_id="py-vector-add")
    run(env.write_file("solution.py", "def vector_add(a, b, out):\n    pass\n"))
    assert run(env.get_reward()) == 0.0
    assert env.info is None  # never graded
    assert sandbox_dirs() <= dirs
    with pytest.raises(CudaEnvError, match="episode is over"):
        run(env.list_files())


@pytest.mark.slow
def test_oracle_files_via_write_file_and_submit_score_one() -> None:
    pytest.importorskip("numba.cuda", reason="cuda_python problems grade with the python extra")
    problem = load_suite("builtin")["py-vector-add"]
    env = environment_factory("builtin", ids=TASKS)()
    env.reset(task_id=problem.task_id)

    async def one_reply() -> list[str]:  # the calls of one reply, gathered as TRL does
        writes = [env.write_file(f.path, f.content) for f in problem.solution.files]
        return await asyncio.gather(*writes, env.submit())

    outputs = run(one_reply())
    assert not any(o.startswith("error") for o in outputs)  # the writes ran before the submit
    assert run(env.get_reward()) == 1.0
    assert env.info["is_success"] is True


class HeldGrader:
    """A grader that waits until released: shows what runs at once, without timing."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, request: GradeRequest) -> Verdict:
        self.entered.release()
        assert self.release.wait(60), "the test never released the grading"
        return grade_here(request)


def test_submit_returns_at_once_and_gradings_run_side_by_side() -> None:
    held = HeldGrader()
    env_cls = environment_factory("builtin", ids=TASKS, grader=held)
    envs = [env_cls(), env_cls()]
    for env, task in zip(envs, TASKS, strict=True):
        env.reset(task_id=task)
        # returns while its grading is held: the trainer's loop is not blocked by it
        assert run(env.submit()).startswith("submitted for grading")
    for _ in envs:  # both gradings are in flight at the same time
        assert held.entered.acquire(timeout=60)
    held.release.set()

    async def rewards() -> list[Any]:
        return [await e.get_reward() for e in envs]  # TRL awaits them in turn

    assert run(rewards()) == [0.0, 0.0]  # nothing written: both graded as failures
    assert all(e.info["failure"] == "agent" for e in envs)


def test_mask_infrastructure_masks_the_shaping_reward_where_the_env_does() -> None:
    good = environment_factory("builtin", ids=TASKS)()
    bad = environment_factory("builtin", ids=TASKS, grading_sandbox=_broken_sandbox)()
    for env in (good, bad):  # a file to grade: the grading sandbox is needed (and broken)
        env.reset(task_id="py-vector-add")
        run(env.write_file("solution.py", "def vector_add(a, b, out):\n    pass\n"))
        run(env.submit())

    def length(completion_ids: list[list[int]], **_: Any) -> list[float]:
        return [float(len(ids)) for ids in completion_ids]

    masked = mask_infrastructure(length)
    assert masked.__name__ == "length"  # TRL logs a reward under its function's name
    assert inspect.iscoroutinefunction(masked)
    values = run(masked(completion_ids=[[1, 2], [3]], environments=[good, bad]))
    assert values == [2.0, None]  # only the rollout the env masked
    assert run(masked(completion_ids=[[1]])) == [1.0]  # no environments: unchanged


@pytest.mark.slow
def test_train_grpo_example_runs_one_finite_step() -> None:
    """examples/train_grpo_trl.py: GRPOTrainer, a tiny model built there, two problems, one
    step: finite loss and gradients, four rollouts scored, one model-written solution at 1.0."""
    pytest.importorskip("numba.cuda", reason="cuda_python problems grade with the python extra")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRL_EXPERIMENTAL_SILENCE": "1"}
    proc = subprocess.run(
        [sys.executable, "examples/train_grpo_trl.py", "--max-steps", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "finite loss and gradients, a model-written solution scored 1.0: OK" in proc.stdout
    assert "env rewards seen: 4" in proc.stdout
