"""Running one parsed tool call in the agent's sandbox, as observation text."""

from __future__ import annotations

from cudaenv.env.tools import ToolCall
from cudaenv.errors import SandboxPathError, ToolError
from cudaenv.sandbox.base import Sandbox


def run_tool(box: Sandbox, call: ToolCall) -> str:
    """Run one parsed call in ``box`` and return its observation (ToolError: the agent's fault)."""
    a = call.args
    if call.tool == "bash":
        res = box.exec(a["command"], timeout=a.get("timeout", 120))
        head = "timed out (killed)" if res.timed_out else f"exit code: {res.exit_code}"
        parts = [head + (" (output truncated)" if res.truncated else "")]
        if res.stdout:
            parts.append(f"stdout:\n{res.stdout}")
        if res.stderr:
            parts.append(f"stderr:\n{res.stderr}")
        return "\n".join(parts)
    if call.tool == "write_file":
        try:
            box.write_file(a["path"], a["content"])
        except SandboxPathError:
            raise
        except OSError as exc:  # a parent that is a file, a full workspace
            raise ToolError(f"write_file: cannot write {a['path']!r}: {exc.strerror}") from None
        return f"wrote {len(a['content'].encode())} bytes to {a['path']}"
    if call.tool in ("edit_file", "read_file"):
        try:
            text = box.read_file(a["path"]).decode("utf-8", errors="replace")
        except FileNotFoundError:
            raise ToolError(f"{call.tool}: no such file: {a['path']!r}") from None
        except IsADirectoryError:
            raise ToolError(f"{call.tool}: {a['path']!r} is a directory") from None
        except SandboxPathError:
            raise
        except OSError as exc:
            raise ToolError(f"{call.tool}: cannot read {a['path']!r}: {exc.strerror}") from None
        if call.tool == "read_file":
            lines = text.splitlines(keepends=True)
            start = a.get("start_line", 1)
            end = a.get("end_line", len(lines))
            return "".join(lines[start - 1 : end]) or "(empty)"
        count = text.count(a["old"])
        if count != 1 or not a["old"]:
            raise ToolError(
                f"edit_file: `old` must match exactly once in {a['path']}, found {count} matches"
            )
        box.write_file(a["path"], text.replace(a["old"], a["new"], 1))
        return f"edited {a['path']}"
    if call.tool == "list_files":
        return "\n".join(box.list_files()) or "(no files)"
    if call.tool == "submit":
        return "submitted for grading"
    raise ToolError(f"unknown tool {call.tool!r}")
