"""Agents: the ``Agent`` protocol, the oracle and nop baselines, an OpenAI-compatible agent.

Nothing heavy loads here: the ``openai`` SDK is imported only when an OpenAI agent runs.
"""

from __future__ import annotations

from cudaenv.agents.base import Agent, finish_trajectory
from cudaenv.agents.registry import AGENTS, make_agent

__all__ = ["AGENTS", "Agent", "finish_trajectory", "make_agent"]
