"""Observation clipping: the sandbox's capper (``cap_output``) at the env's limit."""

from __future__ import annotations

import json

from cudaenv.agents.cli_events import MAX_OBSERVATION_CHARS, parse_opencode_json
from cudaenv.env.text import CHARSET, MAX_OBS_CHARS, clip, text_space
from cudaenv.sandbox.base import cap_output


def test_clip_keeps_head_and_tail_like_the_sandbox() -> None:
    assert clip("short") == "short"
    exact = "x" * MAX_OBS_CHARS
    assert clip(exact) is exact
    long = "h" * 150_000 + "t" * 150_000
    out = clip(long)
    assert out == cap_output(long.encode(), MAX_OBS_CHARS)[0]
    assert out.startswith("h" * 1000) and out.endswith("t" * 1000)
    assert "[... 100000 bytes truncated ...]" in out


def test_clip_counts_bytes_and_stays_in_the_observation_space() -> None:
    wide = "\u00e9" * 150_000  # 300 000 UTF-8 bytes in 150 000 characters
    out = clip(wide)
    assert "bytes truncated" in out and len(out.encode()) <= MAX_OBS_CHARS + 100
    space = text_space(MAX_OBS_CHARS + 200, 0)
    assert space.contains(out) and set(out) <= set(CHARSET)


def test_cli_event_observations_are_clipped_at_their_own_limit() -> None:
    big = "o" * (3 * MAX_OBSERVATION_CHARS)
    event = json.dumps({"type": "tool_use", "part": {"tool": "bash", "state": {"output": big}}})
    (step,) = parse_opencode_json(event).steps
    assert step.observation == clip(big, MAX_OBSERVATION_CHARS)
    assert "bytes truncated" in step.observation and len(step.observation) < len(big) // 2
