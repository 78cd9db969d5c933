"""``cudaenv.training``: a training-mode episode as one sample (token ids, loss mask, logprobs)
with the prefix check, against a scripted server that tokenizes as vLLM does, with a real
tokenizer (a byte-level BPE trained here, nothing downloaded) and real chat templates (the
Qwen2.5 and Qwen3 templates TRL ships)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers", reason="needs transformers (the trl extra)")
_TRL = importlib.util.find_spec("trl")
if _TRL is None or not _TRL.submodule_search_locations:
    pytest.skip("the chat templates come with trl (the trl extra)", allow_module_level=True)
#: TRL's bundled chat templates, read as files (importing trl would load torch)
TEMPLATES = Path(next(iter(_TRL.submodule_search_locations))) / "chat_templates"
QWEN2_5 = (TEMPLATES / "qwen2_5.jinja").read_text(encoding="utf-8")
QWEN3 = (TEMPLATES / "qwen3.jinja").read_text(encoding="utf-8")

import cudaenv  # noqa: E402
from cudaenv.agents.openai_agent import OpenAIAgent  # noqa: E402
from cudaenv.env.instructions import SYSTEM_PROMPT  # noqa: E402
from cudaenv.env.tools import tool_schemas  # noqa: E402
from cudaenv.errors import TrajectoryPrefixError  # noqa: E402
from cudaenv.training import renderable, training_sample  # noqa: E402
from tests.agents.scripted_server import ScriptedServer, text, tool_call  # noqa: E402
from tests.conftest import CPU_SOLUTION  # noqa: E402

END = "<|im_end|>"
SCRIPT = [
    {**tool_call("write_file", path="solution.cpp", content=CPU_SOLUTION), "content": "Writing."},
    text("Let me check the files."),  # no call: the agent nudges, the episode goes on
    tool_call("list_files"),
    tool_call("submit"),
]


def build_tokenizer(template: str) -> Any:
    """A byte-level BPE (GPT-2 style splits, so a turn boundary is a token boundary) trained
    on the texts these episodes render, with ``template`` as its chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    raw.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", END]
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = [SYSTEM_PROMPT, json.dumps(tool_schemas()), CPU_SOLUTION, json.dumps(SCRIPT)] * 3
    raw.train_from_iterator(corpus, trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token=END, pad_token="<|endoftext|>")
    tok.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"])
    tok.add_tokens(["<think>", "</think>"])
    tok.chat_template = template
    return tok


def ids(rendered: Any) -> list[int]:
    return list(rendered["input_ids"] if hasattr(rendered, "keys") else rendered)


class TokenizingServer(ScriptedServer):
    """The scripted server, tokenizing as vLLM does: the prompt is the chat template's
    rendering of the request (tool-call arguments as objects), the completion the tokens the
    template gives the reply, up to and including the end-of-turn token (as if sampled)."""

    def __init__(self, script: list[dict[str, Any]], tokenizer: Any) -> None:
        super().__init__(script)
        self.tok = tokenizer

    def _render(self, messages: list[dict[str, Any]], tools: Any, generation: bool) -> list[int]:
        rendered = self.tok.apply_chat_template(
            [renderable(m) for m in messages],
            tools=tools,
            add_generation_prompt=generation,
            tokenize=True,
        )
        return ids(rendered)

    def _next(self, body: dict[str, Any]) -> tuple[int, bytes, str]:
        code, data, ctype = super()._next(body)
        payload = json.loads(data)
        choice = payload["choices"][0]
        messages, tools = body["messages"], body.get("tools")
        prompt = self._render(messages, tools, True)
        full = self._render([*messages, choice["message"]], tools, False)
        assert full[: len(prompt)] == prompt, "the template must extend its own prompt"
        completion = full[len(prompt) :]
        end = self.tok.convert_tokens_to_ids(END)
        completion = completion[: len(completion) - completion[::-1].index(end)]
        payload["prompt_token_ids"] = prompt
        choice["token_ids"] = completion
        choice["logprobs"] = {
            "content": [
                {"token": self.tok.decode([t]), "logprob": -0.001 * (i + 1), "top_logprobs": []}
                for i, t in enumerate(completion)
            ]
        }
        return code, json.dumps(payload).encode(), ctype


def episode(cpu_problem: Any, template: str) -> tuple[Any, Any]:
    tok = build_tokenizer(template)
    with TokenizingServer(SCRIPT, tok) as srv:
        agent = OpenAIAgent("scripted", base_url=srv.base_url, training=True, backoff_s=0.01)
        traj = agent.run(cudaenv.make(cpu_problem))
    return traj, tok


@pytest.fixture(scope="module")
def cpu_problem(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.conftest import CPU_HEADER, CPU_TEST, write_problem

    root = tmp_path_factory.mktemp("suite")
    spec = {
        "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
        "metadata": {"requires_gpu": False},
    }
    files = {
        "context/include/add.h": CPU_HEADER,
        "test/test_main.cpp": CPU_TEST,
        "solution/solution.cpp": CPU_SOLUTION,
    }
    write_problem(root, "cpu-add", spec=spec, files=files)
    return cudaenv.load_suite(str(root))["cpu-add"]


@pytest.fixture(scope="module")
def qwen25(cpu_problem: Any) -> tuple[Any, Any]:
    """One episode served with the Qwen2.5 template (the tests copy what they change)."""
    return episode(cpu_problem, QWEN2_5)


def test_server_token_ids_make_one_sample(qwen25: tuple[Any, Any]) -> None:
    traj, tok = qwen25
    assert traj.reward == 1.0 and len(traj.turns) == 4
    sample = training_sample(traj)
    last = traj.turns[-1]
    assert sample.input_ids == last.prompt_token_ids + last.completion_token_ids
    assert len(sample.loss_mask) == len(sample.input_ids) == len(sample.logprobs)
    assert sum(sample.loss_mask) == sum(len(t.completion_token_ids) for t in traj.turns)
    assert sample.reward == 1.0 and sample.turns == 4
    # the masked spans are the replies, in order: the model's own words and calls
    spans, current = [], []
    for token, m in zip(sample.input_ids, sample.loss_mask, strict=True):
        if m:
            current.append(token)
        elif current:
            spans.append(tok.decode(current))
            current = []
    spans.append(tok.decode(current))
    assert len(spans) == 4 and all(s.endswith(END) for s in spans)
    assert "Writing." in spans[0] and '"name": "write_file"' in spans[0]
    assert "Let me check the files." in spans[1] and '"name": "submit"' in spans[3]
    masked = [lp for lp, m in zip(sample.logprobs, sample.loss_mask, strict=True) if m]
    assert all(lp < 0 for lp in masked)
    assert all(lp == 0.0 for lp, m in zip(sample.logprobs, sample.loss_mask, strict=True) if not m)


def test_the_chat_template_gives_the_same_sample(qwen25: tuple[Any, Any]) -> None:
    traj, tok = qwen25
    served = training_sample(traj)
    rendered = training_sample(traj, tok)  # checked against the server's ids turn by turn
    n = len(served.input_ids)
    assert rendered.input_ids[:n] == served.input_ids
    assert rendered.loss_mask[:n] == served.loss_mask and rendered.logprobs[:n] == served.logprobs
    assert not any(rendered.loss_mask[n:])  # the template's separator after the last reply
    # without the server's ids (an evaluation trajectory), the template alone
    bare = traj.model_copy(
        update={
            "turns": [
                t.model_copy(
                    update={
                        "prompt_token_ids": None,
                        "completion_token_ids": None,
                        "completion_logprobs": None,
                    }
                )
                for t in traj.turns
            ]
        }
    )
    alone = training_sample(bare.model_dump(mode="json"), tok)
    assert alone.input_ids == rendered.input_ids and alone.logprobs is None
    assert sum(alone.loss_mask) >= sum(served.loss_mask)
    with pytest.raises(TrajectoryPrefixError, match="turn 1 has no token ids"):
        training_sample(bare)


def test_a_template_that_rewrites_past_turns_is_refused(cpu_problem: Any) -> None:
    """Qwen3's template renders the last reply with a <think> block it drops from the same
    reply once another turn follows: turn 2's prompt no longer extends turn 1's tokens."""
    traj, tok = episode(cpu_problem, QWEN3)
    with pytest.raises(TrajectoryPrefixError, match=r"turn 2: its prompt does not extend"):
        training_sample(traj)
    with pytest.raises(TrajectoryPrefixError, match=r"turn 2"):
        training_sample(traj, tok)


def test_a_rewritten_history_is_named_by_turn_and_position(qwen25: tuple[Any, Any]) -> None:
    traj = qwen25[0].model_copy(deep=True)
    turn = traj.turns[2]
    changed = list(turn.prompt_token_ids)
    changed[40] += 1  # one token of turn 3's prompt differs from what turns 1-2 produced
    traj.turns[2] = turn.model_copy(update={"prompt_token_ids": changed})
    with pytest.raises(TrajectoryPrefixError, match=r"turn 3: .*first difference at token 40"):
        training_sample(traj)
