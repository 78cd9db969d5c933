"""One or two TRL GRPO steps on two cuda_python problems, with a tiny random model.

This proves the WIRING, not learning: ``GRPOTrainer(environment_factory=...)`` drives
cudaenv's TRL adapter (reset per rollout, tools, ``get_reward`` per rollout), the rollouts
are graded for real (cuda_python problems grade on numba-cuda's CPU simulator), and one
optimizer step runs with a finite loss and finite gradients. The model has random weights,
so it never solves anything: the environment's reward is 0 for every rollout. A small
shaping reward (the share of distinct tokens in a completion) varies within each group so
the advantages, and so the gradients, are not all zero; the check is meaningful, the
"learning" is not.

Nothing is downloaded: the model is a 2-layer Qwen2 built from a config (hidden size 64),
the tokenizer is a byte-level BPE trained here on the problems' own text and wrapped as a
``PreTrainedTokenizerFast`` with TRL's bundled Qwen2.5 chat template (it renders tools).

    pip install 'cudaenv[trl,python]'
    python examples/train_grpo_trl.py --max-steps 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

TASKS = ["py-vector-add", "py-relu-clip"]
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def build_tokenizer(texts: list[str]) -> Any:
    """A byte-level BPE trained on ``texts``, with a chat template that renders tools."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
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


def distinct_tokens(completion_ids: list[list[int]], **_: Any) -> list[float]:
    """Shaping only: the share of distinct tokens, so a group's rewards differ."""
    return [len(set(ids)) / max(len(ids), 1) for ids in completion_ids]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--completion-length", type=int, default=24)
    parser.add_argument("--out", default=None, help="trainer output dir (default: a temp dir)")
    args = parser.parse_args()

    import datasets
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from cudaenv.env.instructions import SYSTEM_PROMPT
    from cudaenv.env.tools import tool_schemas
    from cudaenv.integrations.trl import dataset_rows, environment_factory
    from cudaenv.problems import load_suite

    suite = load_suite("builtin")
    corpus = [SYSTEM_PROMPT, json.dumps(tool_schemas())] + [suite[t].prompt for t in TASKS]
    tok = build_tokenizer(corpus * 4)
    model = build_model(tok)

    env_cls = environment_factory("builtin", mode="solve", ids=TASKS, max_steps=4)
    rewards_seen: list[float | None] = []

    class CountedEnv(env_cls):  # type: ignore[misc, valid-type]
        """The adapter's class, counting the rewards TRL reads (one per rollout)."""

        def get_reward(self) -> float | None:
            reward = super().get_reward()
            rewards_seen.append(reward)
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
        reward_funcs=[distinct_tokens],
        args=config,
        train_dataset=datasets.Dataset.from_list(dataset_rows("builtin", "solve", ids=TASKS)),
        environment_factory=CountedEnv,
    )
    trainer.train()

    losses = [c[0] for c in checks]
    print(f"steps: {len(checks)}  losses: {[round(x, 6) for x in losses]}")
    print(f"env rewards seen: {len(rewards_seen)}  values: {rewards_seen}")
    logged = [h for h in trainer.state.log_history if "rewards/CountedEnv/mean" in h]
    print(f"logged env reward means: {[h['rewards/CountedEnv/mean'] for h in logged]}")
    ok = (
        len(checks) == args.max_steps
        and all(math.isfinite(x) for x in losses)
        and all(c[1] for c in checks)
        and any(c[2] for c in checks)
        and len(rewards_seen) == 4 * args.max_steps
        and all(r is not None and math.isfinite(r) for r in rewards_seen)
    )
    if not ok:
        raise SystemExit(f"check failed: checks={checks} rewards={rewards_seen}")
    print("finite loss and gradients: OK")


if __name__ == "__main__":
    main()
