"""One or two TRL GRPO steps on two cuda_python problems, with a tiny model built here.

This proves the WIRING, not learning: ``GRPOTrainer(environment_factory=...)`` drives
cudaenv's TRL adapter end to end: ``reset`` per rollout, the model's tool calls parsed by
TRL and run as the adapter's methods, ``get_reward`` per rollout from a real grading
(cuda_python problems grade on numba-cuda's CPU simulator), and optimizer steps with a
finite loss and finite gradients, nonzero wherever a group's rewards differ.

The model starts from random weights; a few supervised steps first make it memorize one
reply per problem: ``write_file`` with the reference solution, then ``submit``. So some
rollouts score 1.0 (sampled ones that deviate score 0): a model-written solution goes
through TRL's parser, the adapter and the grader to a reward. Memorizing the answer is not
learning. A small shaping reward (the share of distinct tokens in a completion) keeps the
advantages nonzero where a group's env rewards tie; it is wrapped in
``mask_infrastructure`` so that a rollout the env masks (an infrastructure fault: the env's
reward is None) gets None from it too: TRL drops a rollout from its group only when every
reward function returns None for it.

Nothing is downloaded: the model is a 2-layer Qwen2 built from a config (hidden size 64);
the tokenizer is a byte-level BPE trained here on the rendered prompts and replies (so they
are a few dozen tokens: a quick step; it fits these texts and nothing else) and wrapped as
a ``PreTrainedTokenizerFast`` with TRL's bundled Qwen2.5 chat template (it renders tools
and TRL knows how to parse its tool calls).

    pip install 'cudaenv[trl,python]'
    python examples/train_grpo_trl.py --max-steps 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import tempfile
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

TASKS = ["py-vector-add", "py-relu-clip"]
TOOLS = ["bash", "edit_file", "list_files", "read_file", "submit", "write_file"]
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
SUBMIT = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'


def oracle_reply(problem: Any) -> str:
    """One reply that writes the reference solution's files, then submits."""
    writes = [
        "<tool_call>\n"
        + json.dumps({"name": "write_file", "arguments": {"path": f.path, "content": f.content}})
        + "\n</tool_call>"
        for f in problem.solution.files
    ]
    return "\n".join([*writes, SUBMIT]) + "<|im_end|>"


TEACH_STEPS = 150
TEACH_LR = 1e-2


def build_tokenizer(texts: list[str]) -> Any:
    """A byte-level BPE trained on ``texts``, with a chat template that renders tools."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=8192,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    raw.train_from_iterator(texts, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tok.add_tokens(ADDED)
    tok.chat_template = qwen2_5_chat_template
    return tok


def build_model(tok: Any) -> Any:
    """A 2-layer Qwen2 with random weights (a few hundred thousand parameters)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model


def teach_calls(
    model: Any, tok: Any, prompts: list[list[dict]], calls: list[str], tools: list
) -> float:
    """Supervised steps until the model answers each prompt with its reply (``calls``).

    Without them a random model never emits a parseable call and the trainer's tool loop
    (parse, call the env's methods, append the results, generate again) would not run.
    Returns the final loss on the replies' tokens.
    """
    import torch

    rows, starts = [], []
    for messages, call in zip(prompts, calls, strict=True):
        text = tok.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False
        )
        prefix = tok(text, add_special_tokens=False).input_ids
        rows.append(prefix + tok(call, add_special_tokens=False).input_ids)
        starts.append(len(prefix))
    width = max(len(r) for r in rows)
    ids = torch.tensor([[tok.pad_token_id] * (width - len(r)) + r for r in rows])
    mask = (torch.arange(width) >= torch.tensor([[width - len(r)] for r in rows])).long()
    labels = torch.full_like(ids, -100)
    for i, (row, start) in enumerate(zip(rows, starts, strict=True)):
        first = width - len(row) + start
        labels[i, first:] = ids[i, first:]
    opt = torch.optim.Adam(model.parameters(), lr=TEACH_LR)
    model.train()
    for _ in range(TEACH_STEPS):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


def distinct_tokens(completion_ids: list[list[int]], **_: Any) -> list[float]:
    """Shaping only: the share of distinct tokens, so a group's rewards differ."""
    return [len(set(ids)) / max(len(ids), 1) for ids in completion_ids]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--completion-length", type=int, default=64)
    parser.add_argument("--out", default=None, help="trainer output dir (default: a temp dir)")
    args = parser.parse_args()

    import datasets
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from cudaenv.integrations.trl import dataset_rows, environment_factory, mask_infrastructure
    from cudaenv.problems import load_suite

    env_cls = environment_factory("builtin", mode="solve", ids=TASKS, max_steps=4)
    rows = dataset_rows("builtin", "solve", ids=TASKS)
    probe = env_cls()
    tools = [getattr(probe, name) for name in TOOLS]
    prompts = []
    for row in rows:  # the prompts as TRL renders them: the row's, plus reset's instruction
        text = probe.reset(**row)
        prompts.append([*row["prompt"][:-1], {"role": "user", "content": text}])
    asyncio.run(probe.get_reward())  # ends the probe's episode (graded as it stands)

    suite = load_suite("builtin")
    replies = [oracle_reply(suite[row["task_id"]]) for row in rows]

    # train the tokenizer on the prompts as the chat template renders them (a first pass on
    # the raw texts gives a tokenizer to render with): short prompts, a quick step
    seed = build_tokenizer([m["content"] for p in prompts for m in p] + replies)
    rendered = [seed.apply_chat_template(p, tools=tools, tokenize=False) for p in prompts]
    tok = build_tokenizer([*rendered, *replies] * 4)
    model = build_model(tok)
    teach_loss = teach_calls(model, tok, prompts, replies, tools)
    print(f"taught the reference reply (write_file..., submit): loss {teach_loss:.4f}")
    rewards_seen: list[float | None] = []
    model_submits: list[str] = []

    class CountedEnv(env_cls):  # type: ignore[misc, valid-type]
        """The adapter's class, counting the rewards TRL reads (one per rollout)."""

        def reset(self, **row: Any) -> str:
            self.counted = False
            return super().reset(**row)

        async def get_reward(self) -> float | None:
            # asked twice per rollout (TRL, and the masked shaping reward): count it once
            first, self.counted = not self.counted, True
            submitted = self._grading is not None  # the model's own submit started a grading
            reward = await super().get_reward()
            if first:
                rewards_seen.append(reward)
                if submitted:
                    model_submits.append(str(self.info["task_id"]))
            return reward

    checks: list[tuple[float, bool, bool]] = []  # (loss, grads finite, some grad nonzero)

    class CheckedTrainer(GRPOTrainer):
        """GRPOTrainer that inspects the loss and the gradients right after backward."""

        def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
            loss = super().training_step(model, inputs, num_items_in_batch)
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            finite = bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads)
            nonzero = any(bool(g.abs().sum() > 0) for g in grads)
            checks.append((float(loss.detach()), finite, nonzero))
            return loss

    out = args.out or tempfile.mkdtemp(prefix="cudaenv-grpo-")
    config = GRPOConfig(
        output_dir=out,
        max_steps=args.max_steps,
        per_device_train_batch_size=4,  # 2 prompts x 2 generations: both problems each step
        num_generations=2,
        max_completion_length=args.completion_length,
        max_tool_calling_iterations=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = CheckedTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[mask_infrastructure(distinct_tokens)],
        args=config,
        train_dataset=datasets.Dataset.from_list(rows),
        environment_factory=CountedEnv,
    )
    trainer.train()

    losses = [c[0] for c in checks]
    print(f"steps: {len(checks)}  losses: {[round(x, 6) for x in losses]}")
    print(f"env rewards seen: {len(rewards_seen)}  values: {rewards_seen}")
    logged = [h for h in trainer.state.log_history if "rewards/CountedEnv/mean" in h]
    print(f"logged env reward means: {[h['rewards/CountedEnv/mean'] for h in logged]}")
    calls = [float(h["tools/call_frequency"]) for h in logged]
    print(f"tool calls per completion: {calls}  rollouts the model submitted: {model_submits}")
    # a group whose rollouts all scored alike has zero advantage, so its gradient is exactly
    # zero (the sampled completions of a well-taught tiny model are often identical): nonzero
    # gradients are required only where some group's rewards differed
    zero_std = [float(h["frac_reward_zero_std"]) for h in logged if "frac_reward_zero_std" in h]
    some_advantage = not zero_std or any(z < 1.0 for z in zero_std)
    print(f"share of groups with equal rewards per step: {zero_std}")
    ok = (
        len(checks) == args.max_steps
        and all(math.isfinite(x) for x in losses)
        and all(c[1] for c in checks)
        and (any(c[2] for c in checks) or not some_advantage)
        and len(rewards_seen) == 4 * args.max_steps
        and all(r is not None and math.isfinite(r) for r in rewards_seen)
        and any(c > 0 for c in calls)
        and model_submits
        and 1.0 in rewards_seen
    )
    if not ok:
        raise SystemExit(f"check failed: checks={checks} rewards={rewards_seen}")
    print("finite loss and gradients, a model-written solution scored 1.0: OK")


if __name__ == "__main__":
    main()
