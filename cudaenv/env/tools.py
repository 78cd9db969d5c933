"""The agent's tools: OpenAI function schemas, and parsing any accepted action form.

An action may be ``{"tool": name, "args": {...}}``, its JSON string, an OpenAI ``tool_call``
(object or dict with ``function.name`` / ``function.arguments``), or ``{"name", "arguments"}``.
Every malformed action becomes a :class:`ToolError` the env turns into an error observation.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cudaenv.errors import ToolError

MAX_BASH_TIMEOUT_S = 600
#: the longest action (and so the longest file content or command) the action space admits
MAX_ACTION_CHARS = 1_000_000
_TEXT = {"max_length": MAX_ACTION_CHARS}


class BashArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(description="A bash command, run in the workspace.", **_TEXT)
    timeout: int = Field(
        default=120,
        ge=1,
        le=MAX_BASH_TIMEOUT_S,
        description="Seconds before the command is killed.",
    )

    @field_validator("command")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        # no argv or shell string can hold one: the model's mistake, an error observation
        if "\x00" in value:
            raise ValueError("a command cannot contain a NUL byte (\\x00)")
        return value


class WriteFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Workspace-relative path.")
    content: str = Field(description="The whole new content of the file.", **_TEXT)


class EditFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Workspace-relative path.")
    old: str = Field(description="Exact text to replace; must occur exactly once.", **_TEXT)
    new: str = Field(description="Replacement text.", **_TEXT)


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Workspace-relative path.")
    start_line: int | None = Field(default=None, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to show (inclusive).")


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "bash": BashArgs,
    "write_file": WriteFileArgs,
    "edit_file": EditFileArgs,
    "read_file": ReadFileArgs,
    "list_files": NoArgs,
    "submit": NoArgs,
}
TOOL_DESCRIPTIONS: dict[str, str] = {
    "bash": "Run a bash command in the workspace and return its exit code and output.",
    "write_file": "Create or overwrite a file in the workspace.",
    "edit_file": "Replace one exact occurrence of `old` with `new` in a workspace file.",
    "read_file": "Read a workspace file, optionally a line range.",
    "list_files": "List every file in the workspace.",
    "submit": "Submit the workspace for grading. Ends the episode.",
}


class ToolCall(BaseModel):
    """A parsed action."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None

    def arguments_json(self) -> str:
        return json.dumps(self.args, ensure_ascii=False)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    props = {
        k: {
            kk: vv
            for kk, vv in v.items()
            if kk in ("type", "description", "minimum", "maximum", "default")
        }
        for k, v in schema.get("properties", {}).items()
    }
    for k, v in schema.get("properties", {}).items():
        if "anyOf" in v:
            props[k]["type"] = "integer"
    return {
        "type": "object",
        "properties": props,
        "required": schema.get("required", []),
        "additionalProperties": False,
    }


def tool_schemas() -> list[dict[str, Any]]:
    """The tools as OpenAI function-calling schemas (a fresh copy each call: parsed from
    cached JSON, several times cheaper than a deep copy, and it runs at every reset)."""
    return json.loads(_tool_schemas_json())


@functools.cache
def _tool_schemas_json() -> str:
    schemas = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": TOOL_DESCRIPTIONS[name],
                "parameters": _schema(model),
            },
        }
        for name, model in TOOL_ARGS.items()
    ]
    return json.dumps(schemas)


def _args(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolError(
                f"tool arguments are not valid JSON: {exc.msg} at position {exc.pos}"
            ) from exc
    if not isinstance(raw, dict):
        raise ToolError("tool arguments must be a JSON object")
    return raw


def parse_action(action: Any) -> ToolCall:
    """Normalise any accepted action form into a validated ToolCall."""
    call_id = None
    if isinstance(action, str | bytes) and len(action) > MAX_ACTION_CHARS:
        raise ToolError(
            f"action is {len(action):,} characters; the limit is {MAX_ACTION_CHARS:,} "
            "(write a large file in parts)"
        )
    if isinstance(action, str | bytes):
        try:
            action = json.loads(action)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ToolError(f"action is not valid JSON: {exc}") from exc
    if hasattr(action, "function") and not isinstance(action, dict):  # OpenAI SDK object
        call_id = getattr(action, "id", None)
        action = {"name": action.function.name, "arguments": action.function.arguments}
    if not isinstance(action, dict):
        raise ToolError('an action must be an object like {"tool": "bash", "args": {...}}')
    if isinstance(action.get("function"), dict):
        call_id = action.get("id")
        action = action["function"]
    name = action.get("tool", action.get("name"))
    raw_args = action.get("args", action.get("arguments"))
    if not isinstance(name, str):
        raise ToolError("the action names no tool (expected a 'tool' or 'name' field)")
    model = TOOL_ARGS.get(name)
    if model is None:
        raise ToolError(f"unknown tool {name!r}; available: {', '.join(TOOL_ARGS)}")
    args = _args(raw_args)
    try:
        validated = model.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "<args>"
        raise ToolError(f"bad arguments for {name}: {field}: {err['msg']}") from exc
    call = ToolCall(
        tool=name, args=validated.model_dump(exclude_none=True), call_id=call_id or action.get("id")
    )
    if (size := len(call.arguments_json())) > MAX_ACTION_CHARS:
        raise ToolError(
            f"{name} arguments are {size:,} characters; the limit is {MAX_ACTION_CHARS:,} "
            "(write a large file in parts)"
        )
    return call
