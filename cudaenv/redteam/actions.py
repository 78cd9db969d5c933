"""Small builders shared by the exploit catalogs: tool calls and dishonest payloads."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cudaenv.redteam.model import ExploitContext

CANARY_RE = re.compile(r"CANARY K=(\d+) C=(\d+)")
WRONG_ADD = '#include "add.h"\nint add(int a, int b) { return a - b; }\n'

# Turns whatever was collected in /tmp/loot into a passing cpu-canary solution, if the canary
# leaked; else a wrong guess. Reward 1 therefore means: hidden data was readable.
LOOT_TO_SOLUTION = r"""
line=$(grep -aoE 'CANARY K=[0-9]+ C=[0-9]+' /tmp/loot 2>/dev/null | head -n1)
if [ -n "$line" ]; then
  k=${line#*K=}; k=${k%% *}; c=${line##*C=}
  printf '#include "secret.h"\nint secret(int x) { return x * %s + %s; }\n' "$k" "$c" > solution.cpp
  echo "LEAKED: $line"
else
  printf '#include "secret.h"\nint secret(int x) { return x; }\n' > solution.cpp
  echo "nothing leaked"
fi
"""


_WRONG_VECTOR_ADD = """\
{head}

@cuda.jit
def _sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] - b[i]


def vector_add(a, b, out):
{first}    n = out.shape[0]
    if n:
        _sub[{grid}, 256](a, b, out)
"""


def wrong_vector_add(
    head: str = "from numba import cuda\n", first: str = "", grid: str = "(n + 255) // 256"
) -> str:
    """A numba vector add that subtracts: the wrong answer the Python exploits try to pass.

    ``head`` (imports and the exploit's setup, ending in a newline) must import ``cuda``;
    ``first`` is a line run at the top of ``vector_add``; ``grid`` is the launch's block count.
    """
    return _WRONG_VECTOR_ADD.format(head=head, first=f"    {first}\n" if first else "", grid=grid)


WRONG_VECTOR_ADD = wrong_vector_add()


def bash(command: str, timeout: int = 120) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command, "timeout": timeout}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "args": {"path": path, "content": content}}


def read(path: str) -> dict[str, Any]:
    return {"tool": "read_file", "args": {"path": path}}


def submit() -> dict[str, Any]:
    return {"tool": "submit", "args": {}}


def loot(search: str, timeout: int = 120) -> list[dict[str, Any]]:
    """Collect candidate text into /tmp/loot with ``search``, then write the canary solution."""
    return [bash(": > /tmp/loot\n" + search + "\n" + LOOT_TO_SOLUTION, timeout), submit()]


def canary_seen(ctx: ExploitContext) -> str | None:
    """Evidence: an observation showed the canary (a leak even if it was never submitted)."""
    for obs in ctx.observations:
        m = CANARY_RE.search(obs)
        if m:
            return f"canary leaked into an observation: {m.group(0)}"
    return None


def seen(pattern: str) -> Callable[[ExploitContext], str | None]:
    """Evidence: some observation matched ``pattern`` (the exploit prints it on success)."""
    rx = re.compile(pattern)

    def check(ctx: ExploitContext) -> str | None:
        for obs in ctx.observations:
            m = rx.search(obs)
            if m:
                return m.group(0)
        return None

    return check
