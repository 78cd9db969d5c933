"""Recipes for installed coding-agent CLIs: data in ``agents/<name>/recipe.yaml``.

A recipe says how to install a CLI (npm package, pinned version), how to run it headless
(a shell template), which environment variables and config files it needs, and which parser
reads its event stream. Keeping this as data lets a new CLI version, flag or variable be a
YAML change; the Python side (:mod:`cudaenv.agents.installed`) only fills templates in.

Templates use ``{name}`` placeholders (not ``str.format``, so JSON braces need no escaping).
In ``run`` every value is shell-quoted; in ``env`` values are literal; in config files
(JSON) values are substituted inside strings, and a string that is one placeholder of an
integer (``"{max_turns}"``) becomes that integer.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cudaenv.errors import SpecError
from cudaenv.package_data import data_path

__all__ = ["Recipe", "load_recipe", "recipe_names", "render_config", "render_run"]

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class Recipe(BaseModel):
    """One CLI's recipe (see the module docstring and ``agents/*/recipe.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    npm_package: str = Field(description="npm package that ships the CLI")
    version: str = Field(description="pinned package version; .ci/agents-setup.sh installs it")
    binary: str = Field(description="executable name looked up on the sandbox's PATH")
    install: str = Field(description="install command ({npm_package}, {version} filled in)")
    run: str = Field(description="headless run command, a shell template")
    env: dict[str, str] = Field(
        default_factory=dict, description="variables for the CLI (templates)"
    )
    api_key_env: str = Field(description="host variable holding the API key")
    default_base_url: str
    default_model: str
    provider: str | None = Field(default=None, description="provider id the config declares")
    config_files: dict[str, str] = Field(
        default_factory=dict,
        description="path under the agent home -> template file in the recipe folder",
    )
    parser: Literal["claude-stream-json", "opencode-json"]
    network_note: str = ""
    folder: Path | None = Field(default=None, exclude=True, description="where the recipe was read")

    def install_command(self) -> str:
        """The shell command that installs this CLI at its pinned version."""
        return self.install.replace("{npm_package}", self.npm_package).replace(
            "{version}", self.version
        )

    def config_template(self, name: str) -> str:
        """Text of a config template shipped beside the recipe."""
        if self.folder is None:
            raise SpecError(
                f"recipe {self.name!r} has no folder to read {name!r} from", field="config_files"
            )
        return (self.folder / name).read_text()


def recipe_names() -> list[str]:
    """Names of the shipped recipes."""
    return sorted(p.parent.name for p in data_path("agents").glob("*/recipe.yaml"))


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A shipped recipe by name (``"claude-code"``) or a ``recipe.yaml`` path.

    >>> load_recipe("opencode").binary
    'opencode'
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = data_path("agents") / str(name_or_path) / "recipe.yaml"
        if not path.is_file():
            raise SpecError(
                f"no agent recipe {name_or_path!r}; shipped: {', '.join(recipe_names())}",
                field="agent",
            )
    try:
        raw = yaml.safe_load(path.read_text())
        return Recipe.model_validate({**raw, "folder": path.parent})
    except (OSError, yaml.YAMLError, ValidationError, TypeError) as exc:
        raise SpecError(f"bad agent recipe: {exc}", source=str(path)) from exc


def _fill(text: str, values: dict[str, Any], quote: bool) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            return m.group(0)
        value = str(values[key])
        return shlex.quote(value) if quote else value

    return _PLACEHOLDER.sub(sub, text)


def render_run(recipe: Recipe, values: dict[str, Any]) -> str:
    """The run command with every placeholder replaced by its shell-quoted value.

    >>> r = load_recipe("claude-code")
    >>> "--max-turns 7" in render_run(r, {"max_turns": 7, "model": "m", "instruction_file": "/i"})
    True
    """
    return _fill(recipe.run, values, quote=True)


def render_env(recipe: Recipe, values: dict[str, Any]) -> dict[str, str]:
    """The CLI's environment variables with placeholders filled in (no quoting)."""
    return {k: _fill(v, values, quote=False) for k, v in recipe.env.items()}


def render_config(template: str, values: dict[str, Any]) -> str:
    """A JSON config template filled in: values land inside JSON strings, escaped."""

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            whole = _PLACEHOLDER.fullmatch(node)
            if whole and isinstance(values.get(whole.group(1)), int):
                return values[whole.group(1)]
            return _fill(node, values, quote=False)
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return json.dumps(walk(json.loads(template)), indent=2)
