"""``make_agent(name, **options)``: built-in agents by name, imported lazily."""

from __future__ import annotations

import importlib
from typing import Any

from cudaenv.agents.base import Agent
from cudaenv.errors import SpecError

AGENTS: dict[str, str] = {
    "oracle": "cudaenv.agents.oracle:OracleAgent",
    "nop": "cudaenv.agents.nop:NopAgent",
    "openai": "cudaenv.agents.openai_agent:OpenAIAgent",
    "claude-code": "cudaenv.agents.installed:ClaudeCodeAgent",
    "opencode": "cudaenv.agents.installed:OpenCodeAgent",
}


def make_agent(name: str, **options: Any) -> Agent:
    """Build the agent registered as ``name`` with ``options`` as its constructor arguments.

    >>> make_agent("nop").name
    'nop'
    """
    target = AGENTS.get(name)
    if target is None:
        raise SpecError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}", field="agent")
    module, attr = target.split(":")
    cls = getattr(importlib.import_module(module), attr)
    try:
        return cls(**options)
    except TypeError as exc:
        raise SpecError(f"bad options for agent {name!r}: {exc}", field="agent") from exc
