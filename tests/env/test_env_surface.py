"""Small parts of the env's gymnasium surface: the action space holds the structured actions
``step`` runs, ``cudaenv.make`` sets ``spec`` as ``gymnasium.make`` does, and a sandbox
option typo fails when the env is made, naming the option."""

from __future__ import annotations

import gymnasium as gym
import pytest

import cudaenv
from cudaenv.errors import SpecError


def test_action_space_contains_every_action_form_step_runs() -> None:
    space = cudaenv.make("py-vector-add").action_space
    assert space.contains({"tool": "submit", "args": {}})
    assert {"tool": "bash", "args": {"command": "ls"}} in space
    assert space.contains([{"tool": "list_files", "args": {}}])
    call = {"id": "c1", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
    assert space.contains({"role": "assistant", "content": None, "tool_calls": [call]})
    assert space.contains('<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
    assert not space.contains({"tool": "rm_rf", "args": {}})  # no such tool
    assert not space.contains({"tool": "bash", "args": {"command": 5}})  # bad argument
    assert not space.contains(42)
    assert space.contains(space.sample())


def test_make_sets_the_spec_gymnasium_make_would() -> None:
    env = cudaenv.make("py-vector-add", max_steps=7)
    assert env.spec is not None and env.spec.id == "cudaenv/py-vector-add-v0"
    assert env.spec.id == gym.make("cudaenv/py-vector-add-v0").spec.id
    assert env.spec.kwargs["max_steps"] == 7 and env.spec.kwargs["problem"] == "py-vector-add"
    suite = cudaenv.make_suite("builtin", ids=["py-vector-add"])
    assert suite.spec is not None and suite.spec.id == "cudaenv/suite-v0"


def test_a_sandbox_option_typo_fails_at_construction() -> None:
    with pytest.raises(SpecError, match="'isolaton' is not an option of the local sandbox"):
        cudaenv.make("py-vector-add", sandbox_options={"isolaton": "rlimits"})
    with pytest.raises(SpecError, match="image"):  # a docker option given to a local sandbox
        cudaenv.make("py-vector-add", sandbox_options={"image": "x:1"})
