"""How a model agent samples: the fields sent with every request, and their defaults.

One model for the ``cudaenv eval`` flags (``--temperature``, ``--top-p``, ``--max-tokens``,
``--seed``), the OpenAI-compatible agent's keywords and the run manifest, so the three never
disagree about a default.

Defaults, and why:

- ``temperature`` 1.0 and ``top_p`` 1.0: the model's own distribution. pass@k with k > 1 needs
  samples that differ; greedy decoding (temperature 0) makes the k samples of a problem copies
  of one another on a deterministic server, so pass@k collapses to pass@1.
- ``max_tokens`` None: not sent; the server's limit per reply applies.
- ``seed`` None: not sent. With a seed S, episode ``a`` of a problem sends ``S + a``: every
  attempt gets its own stream, and a rerun reproduces it where the server honours seeds.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_SAMPLING", "Sampling"]


class Sampling(BaseModel):
    """The sampling fields of a chat-completions request (None: not sent)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(1.0, ge=0.0, le=2.0)
    top_p: float | None = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1, description="per reply")
    seed: int | None = Field(None, ge=0, description="base seed; episode a sends seed + a")

    def request_fields(self, episode_seed: int | None = None) -> dict[str, Any]:
        """The request's sampling fields; the seed offset by the episode's own seed.

        >>> Sampling(seed=10).request_fields(episode_seed=3)
        {'temperature': 1.0, 'top_p': 1.0, 'seed': 13}
        """
        out: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed + (episode_seed or 0)
        return {k: v for k, v in out.items() if v is not None}

    @property
    def greedy(self) -> bool:
        """Temperature 0: every sample of a prompt is the same on a deterministic server."""
        return self.temperature == 0.0


DEFAULT_SAMPLING = Sampling()
