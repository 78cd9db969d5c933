"""Running one parsed tool call in the agent's sandbox, as observation text."""

from __future__ import annotations

import time

from cudaenv.env.actions_text import MAX_CALLS_PER_REPLY, Reply, no_call_help
from cudaenv.env.messages import Outcome
from cudaenv.env.text import clip, to_charset
from cudaenv.env.tools import ToolCall
from cudaenv.errors import SandboxError, SandboxPathError, ToolError
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


def run_call(box: Sandbox, call: ToolCall) -> tuple[str, str | None]:
    """One call's observation and error (None when it ran cleanly): the agent's mistakes and
    a failing sandbox both become observations, never exceptions."""
    try:
        return run_tool(box, call), None
    except ToolError as exc:
        return f"error: {exc}", str(exc)
    except SandboxPathError as exc:  # the agent's bad path, not a failure of the sandbox
        where = call.args.get("path", "")
        return (
            f"error: {call.tool}: bad path {where!r}: {exc}",
            f"bad path {where!r}: {exc}",
        )
    except SandboxError as exc:
        return f"error: the sandbox failed: {exc}", f"sandbox: {exc}"


def run_reply(box: Sandbox, reply: Reply, index: int) -> tuple[list[Outcome], bool]:
    """Run the calls of reply number ``index`` in order; their outcomes, and whether a
    ``submit`` ran. Calls after the submit, calls beyond ``MAX_CALLS_PER_REPLY`` and calls
    that did not parse get an error outcome; a reply without any call gets one outcome
    saying how to make one. Every observation is clipped and in the charset."""
    outs: list[Outcome] = []
    submitted = False
    for k, parsed in enumerate(reply.calls):
        t0 = time.perf_counter()
        call = parsed.call
        call_id = (call.call_id if call else None) or (
            f"call_{index}" if k == 0 else f"call_{index}_{k}"
        )
        if submitted:
            obs, error = "not run: the episode ended at submit", "after submit"
        elif k >= MAX_CALLS_PER_REPLY:
            error = f"at most {MAX_CALLS_PER_REPLY} tool calls run per reply"
            obs = f"not run: {error}"
        elif call is None:
            error = parsed.error or "unparseable tool call"
            obs = f"error: {error}"
        else:
            obs, error = run_call(box, call)
            submitted = call.tool == "submit" and error is None
        outs.append(Outcome(call, call_id, to_charset(clip(obs)), error, time.perf_counter() - t0))
    if reply.kind == "invalid" and not outs:
        outs.append(
            Outcome(None, f"call_{index}", no_call_help(), "no tool call in the reply", 0.0)
        )
    return outs, submitted
