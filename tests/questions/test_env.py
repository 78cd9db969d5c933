"""The question env's contract: one step, binary reward, every action form, info keys, prompt
styles, errors, gymnasium's checker, and ``cudaenv.make`` choosing it for questions."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from gymnasium.utils.env_checker import check_env

import cudaenv
from cudaenv.env.info import TERMINAL_KEYS
from cudaenv.errors import CudaEnvError, ModeError, ProblemNotFoundError, SpecError
from cudaenv.grading.verdict import Verdict
from cudaenv.questions import QuestionEnv, generate_questions
from cudaenv.questions.env import ANSWER_TOOL, extract_answer

SOURCE = "questions:seed=5,count=16"
QS = generate_questions(count=16, seed=5)
ARRAY = next(q for q in QS if q.answer_format == "array")
RACE = next(q for q in QS if q.kind == "race")


def _right(q: object) -> str:
    return json.dumps(q.expected)  # type: ignore[attr-defined]


def _sdk_call(args: str, call_id: str = "call_1") -> SimpleNamespace:
    return SimpleNamespace(
        id=call_id, type="function", function=SimpleNamespace(name="answer", arguments=args)
    )


@pytest.mark.parametrize(
    "make_action",
    [
        lambda a: {"tool": "answer", "args": {"answer": a}},
        lambda a: json.dumps({"tool": "answer", "args": {"answer": a}}),
        lambda a: {
            "id": "c1",
            "type": "function",
            "function": {"name": "answer", "arguments": json.dumps({"answer": a})},
        },
        lambda a: _sdk_call(json.dumps({"answer": a})),
        lambda a: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "answer", "arguments": json.dumps({"answer": a})},
                }
            ],
        },
        lambda a: (
            f'Reasoning first.\n<tool_call>{{"name": "answer", "arguments": {{"answer": {json.dumps(a)}}}}}</tool_call>'
        ),
        lambda a: f"Step by step...\n[ANSWER] {a} [/ANSWER]",
        lambda a: a,  # a bare value
    ],
)
def test_every_action_form_is_one_step_with_a_binary_reward(make_action: object) -> None:
    env = QuestionEnv(ARRAY)
    obs, info = env.reset(seed=0)
    assert ARRAY.question in obs and info["kind"] == ARRAY.kind and info["tools"] == [ANSWER_TOOL]
    out, reward, terminated, truncated, info = env.step(make_action(_right(ARRAY)))  # type: ignore[operator]
    assert (reward, terminated, truncated, out) == (1.0, True, False, "correct")
    assert set(TERMINAL_KEYS) <= set(info) and info["is_success"] and info["reward_valid"]
    assert (
        info["kind"] == ARRAY.kind
        and info["parsed"] == ARRAY.expected
        and info["reason"] == "correct"
    )
    assert (
        isinstance(info["verdict"], Verdict)
        and info["verdict"].passed
        and info["trajectory"].reward == 1.0
    )
    json.dumps({k: info[k] for k in (*TERMINAL_KEYS, "kind", "answer", "parsed")})
    with pytest.raises(CudaEnvError):
        env.step(make_action(_right(ARRAY)))  # type: ignore[operator]
    env.reset()
    _, reward, *_, info = env.step(make_action("[12345]"))  # type: ignore[operator]
    assert reward == 0.0 and info["failure"] == "agent" and info["reason"] == "wrong answer"


def test_info_says_why_an_answer_failed() -> None:
    env = QuestionEnv(RACE)
    env.reset()
    *_, info = env.step({"tool": "answer", "args": {"answer": "it races, I think"}})
    assert (
        not info["is_success"] and "not a JSON value" in info["reason"] and info["parsed"] is None
    )
    env.reset()
    *_, info = env.step({"tool": "bash", "args": {"command": "ls"}})  # no answer tool called
    assert info["reason"] == "no answer" and info["answer"] is None
    env.reset()
    _, reward, terminated, truncated, info = env.submit(truncation_reason="max_turns")
    assert (reward, terminated, truncated, info["truncation_reason"]) == (
        0.0,
        False,
        True,
        "max_turns",
    )


def test_prompt_styles_modes_and_options() -> None:
    direct, _ = QuestionEnv(ARRAY).reset()
    cot, info = QuestionEnv(ARRAY, prompt_style="cot").reset()
    assert "step by step" in cot and "step by step" not in direct and info["prompt_style"] == "cot"
    assert QuestionEnv(ARRAY, mode="solve").mode == "answer"  # the drivers' default mode
    with pytest.raises(ModeError):
        QuestionEnv(ARRAY, mode="optimize")
    with pytest.raises(SpecError):
        QuestionEnv(ARRAY, prompt_style="chatty")
    with pytest.raises(SpecError):
        QuestionEnv(ARRAY, colour="red")
    env = QuestionEnv(ARRAY, sandbox="docker", max_steps=3)  # accepted, unused: no sandbox
    with pytest.raises(SpecError):
        env.reset(options={"colour": 1})
    with pytest.raises(CudaEnvError):
        QuestionEnv(ARRAY).step("[1]")  # before reset


def test_make_picks_the_question_env_and_task_ids_switch_questions() -> None:
    env = cudaenv.make(QS[0], mode="solve", sandbox="local", max_steps=50)
    assert isinstance(env, QuestionEnv)
    env = cudaenv.make(QS[1].task_id, source=SOURCE)
    assert isinstance(env, QuestionEnv) and env.question.task_id == QS[1].task_id
    _, info = env.reset(options={"task_id": QS[2].task_id, "prompt_style": "cot"})
    assert info["task_id"] == QS[2].task_id


def test_make_suite_draws_questions_by_seed() -> None:
    env = cudaenv.make_suite(SOURCE, groups=["bank", "race"], mode="solve")
    assert isinstance(env, QuestionEnv)
    drawn = [env.reset(seed=s)[1]["task_id"] for s in range(12)]
    assert len(set(drawn)) > 1
    assert {q.kind for q in QS if q.task_id in drawn} == {"bank", "race"}
    again = cudaenv.make_suite(SOURCE, groups=["bank", "race"])
    assert [again.reset(seed=s)[1]["task_id"] for s in range(12)] == drawn
    bank = next(q for q in QS if q.kind == "bank")
    assert env.reset(options={"task_id": bank.task_id})[1]["task_id"] == bank.task_id
    with pytest.raises(ProblemNotFoundError):  # outside the selection, as SuiteEnv
        env.reset(options={"task_id": ARRAY.task_id})


def test_gymnasium_checker_and_async_calls() -> None:
    check_env(QuestionEnv(ARRAY), skip_render_check=True)

    async def play() -> float:
        env = QuestionEnv(ARRAY)
        await env.areset()
        return (await env.astep(f"[ANSWER]{_right(ARRAY)}[/ANSWER]"))[1]

    assert asyncio.run(play()) == 1.0


def test_extract_answer_takes_the_answer_call_among_others() -> None:
    message = {"role": "assistant", "content": "done", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "answer", "arguments": '{"answer": "[1]"}'}}]}  # fmt: skip
    assert extract_answer(message) == ("[1]", "b")
    assert extract_answer({"tool": "answer", "args": {"answer": [1, 2]}}) == ("[1, 2]", None)
    assert extract_answer({"tool": "answer", "args": "not json"}) == (None, None)
