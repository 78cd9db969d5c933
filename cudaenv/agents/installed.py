"""Coding-agent CLIs (claude-code, opencode) run unmodified inside the episode's sandbox.

``InstalledAgent.run(env)`` resets the env, then runs the CLI headless in the problem
workspace of ``env.sandbox`` with one ``exec`` bounded by ``timeout_s``: the CLI edits the
workspace with its own tools, and when it exits (or is killed at the time limit) what it did
is recorded through the env's boundary for external drivers (:mod:`cudaenv.env.external`):
each tool call with its input and result and each piece of assistant text with
``env.record_step``, token usage and cost with ``env.record_usage``; then ``env.submit``
grades the workspace like any other submission (truncated, with the reason, when the CLI's
turn or time limit stopped it). How to install, run and configure each CLI is data: the
recipes in ``agents/<name>/recipe.yaml`` (:mod:`cudaenv.agents.recipes`).

The CLI's own files (its HOME, config with the API key, session logs and the instruction)
live in a private directory under the sandbox's ``$HOME`` (a per-sandbox ``/tmp`` under
bubblewrap), never in the workspace, so none of it reaches the grader. Files cross the
sandbox boundary through ``exec`` in base64 chunks, so no output cap truncates them and any
backend works.

Model calls (the default, "gateway mode"): the sandbox has no network at all. The CLI's
model calls go to the process-wide model gateway (:mod:`cudaenv.agents.gateway_link`,
:mod:`cudaenv.gateway`): the gateway's Unix socket and a forwarder are mounted read-only into
the sandbox, the forwarder listens on the sandbox's own loopback, and the CLI is given that
address and a per-episode token as its API key. The real key stays on the host, the model is
pinned to the agent's, budgets (``budget``) are enforced per episode (past one, the episode
ends truncated with the reason and is still graded), and every call is captured. The whole
record comes from the host side, never from a file in the sandbox (where the commands the
CLI runs could rewrite it): the steps (each tool call the model made, with the result the
CLI sent back to it: :mod:`cudaenv.gateway.steps`), ``trajectory.turns``,
``trajectory.model_calls``, usage and cost (from ``prices``; None when a call is unpriced)
all come from the gateway; the CLI's own output is kept only to explain a failure
(``last_run``). Who is at fault (:mod:`cudaenv.faults`): when the model server or the
gateway failed the episode (its last model call failed on their side after the CLI's
retries, or the gateway stopped), it raises
:class:`~cudaenv.errors.ModelServerError` (infrastructure: not graded, run again on
resume); a CLI that exits without any model reply raises
:class:`~cudaenv.errors.AgentError`; a model call still waiting when the time limit ends the
CLI is the time limit's (truncated, graded).

Direct mode (an explicit opt-in, with a warning): an env made with
``sandbox_options={"network": True}`` (or ``gateway=False``) runs the CLI with the host's
network and the real key in its environment, and its record is the CLI's own event stream
(read back from the sandbox: no better than the sandbox's word). The local bubblewrap backend cannot allow a
single host: every address the host reaches is open to the CLI and the commands it runs, and
those commands can read the key. Grading never gets the network (``CudaEnv`` drops the
option for its grading sandboxes), nor the gateway's mounts.
"""

from __future__ import annotations

import base64
import gzip
import os
import shlex
import warnings
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cudaenv.agents.base import finish_trajectory
from cudaenv.agents.cli_events import PARSERS, ParsedRun
from cudaenv.agents.gateway_link import EpisodeLink, api_family
from cudaenv.agents.recipes import Recipe, load_recipe, render_config, render_env, render_run
from cudaenv.env.external import ExternalStep
from cudaenv.errors import AgentError, ModelServerError

if TYPE_CHECKING:
    from cudaenv.env.core import CudaEnv
    from cudaenv.env.trajectory import Trajectory
    from cudaenv.gateway import Budget, Gateway, PriceTable
    from cudaenv.sandbox.base import ExecResult, Sandbox

__all__ = ["ClaudeCodeAgent", "InstalledAgent", "OpenCodeAgent", "cli_instruction"]

AGENT_DIR = ".cudaenv-agent"  # under the sandbox's $HOME
HELPER_TIMEOUT_S = 120.0
_B64_CHUNK = 60_000  # base64 characters per write command (one argv string must stay < 128 KiB)
CLI_NOTE = (
    "Work in the current directory with your own tools. When the solution is ready, simply "
    "stop: the workspace is then graded by hidden tests in a fresh copy of it."
)


def cli_instruction(task: str) -> str:
    """The task text (``env.instruction.task``: no list of env tools, a CLI brings its own),
    plus how an episode ends for a CLI.

    >>> cli_instruction("Do X.")
    'Do X.\\n\\nWork in the current directory with your own tools. When the solution is ready, simply stop: the workspace is then graded by hidden tests in a fresh copy of it.'
    """
    return f"{task.rstrip()}\n\n{CLI_NOTE}"


class InstalledAgent:
    """Runs a recipe's CLI against a CudaEnv (see the module docstring).

    Args:
        recipe: a shipped recipe name ("claude-code", "opencode"), a recipe.yaml path, or a Recipe.
        model: the model the CLI asks for (default: the recipe's).
        base_url: the model server (claude-code: the origin, ``http://host:port``; opencode: the
            OpenAI-compatible ``.../v1``); None = the recipe's default (the vendor's API).
        api_key_env: host variable holding the API key (default: the recipe's); with
            ``base_url`` set and the variable unset, a dummy key is sent.
        max_turns: the CLI's own turn limit (claude ``--max-turns``, opencode agent ``steps``).
        timeout_s: wall-clock limit of the CLI run; at the limit its process group is killed,
            the workspace is graded and the trajectory marked truncated ("time_limit").
        extra_env: more variables for the CLI (override the recipe's).
        name: the agent name in trajectories (default: the recipe's).
        gateway: None (default): through the model gateway unless the env's sandboxes have
            the network; True: always (an env with network is refused); False: direct mode
            (needs the network; the key is in the CLI's environment; warns).
        budget: the gateway session's :class:`~cudaenv.gateway.Budget` (or its fields):
            model requests, tokens, wall time per episode.
        prices: a :class:`~cudaenv.gateway.PriceTable` for the calls' cost.
        model_gateway: a started :class:`~cudaenv.gateway.Gateway` to use instead of the
            process-wide one.
    """

    def __init__(
        self,
        recipe: str | Recipe = "claude-code",
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_turns: int = 50,
        timeout_s: float = 1800.0,
        extra_env: Mapping[str, str] | None = None,
        name: str | None = None,
        gateway: bool | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        prices: PriceTable | None = None,
        model_gateway: Gateway | None = None,
    ) -> None:
        if max_turns < 1 or timeout_s <= 0:
            raise ValueError("max_turns must be >= 1 and timeout_s > 0")
        self.recipe = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
        self.model = model or self.recipe.default_model
        self.base_url = base_url
        self.api_key_env = api_key_env or self.recipe.api_key_env
        self.max_turns = max_turns
        self.timeout_s = timeout_s
        self.extra_env = dict(extra_env or {})
        self.name = name or self.recipe.name
        self.gateway = gateway
        self.budget = budget
        self.prices = prices
        self.model_gateway = model_gateway
        self.last_run: ParsedRun | None = None  # the parsed events of the latest episode
        self.last_result: ExecResult | None = None  # the CLI's exec result (stderr, exit code)
        self.last_session_summary: dict[str, Any] | None = None  # gateway mode: the totals

    # ------------------------------------------------------------------ helpers
    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url is None:
            raise AgentError(
                f"no API key for {self.name}: set ${self.api_key_env} (or pass base_url for a local server)"
            )
        return "sk-local-dummy"

    @staticmethod
    def _check(box: Sandbox, command: str, what: str) -> ExecResult:
        res = box.exec(command, timeout=HELPER_TIMEOUT_S)
        if not res.ok:
            raise AgentError(
                f"could not {what} in the sandbox (exit {res.exit_code}): {res.stderr.strip()[-500:]}"
            )
        return res

    def _write_private(self, box: Sandbox, path: str, data: str) -> None:
        """Create ``path`` (outside the workspace) with ``data``, in base64 chunks."""
        encoded = base64.b64encode(data.encode()).decode()
        target = shlex.quote(path)
        self._check(
            box,
            f"mkdir -p -- {shlex.quote(os.path.dirname(path))} && : > {target}",
            f"create {path}",
        )
        for i in range(0, len(encoded), _B64_CHUNK):
            piece = encoded[i : i + _B64_CHUNK]
            self._check(box, f"printf %s {piece} | base64 -d >> {target}", f"write {path}")

    def _read_private(self, box: Sandbox, path: str) -> str:
        """``path``'s text (empty if missing), gzipped and read in chunks under the output cap."""
        gz = shlex.quote(path + ".gz")
        res = self._check(
            box,
            f"if [ -f {shlex.quote(path)} ]; then gzip -c -- {shlex.quote(path)} > {gz}; else : > {gz}; fi; wc -c < {gz}",
            f"compress {path}",
        )
        size = int(res.stdout.strip() or 0)
        cap = box.output_cap_bytes
        step = max(3, (cap - 1024) // 4 * 3)
        chunks = []
        for offset in range(0, size, step):
            part = self._check(
                box, f"tail -c +{offset + 1} {gz} | head -c {step} | base64 -w0", f"read {path}"
            )
            if part.truncated:
                raise AgentError(
                    f"reading {path} from the sandbox was truncated (output cap {cap} bytes)"
                )
            chunks.append(base64.b64decode(part.stdout))
        if not chunks:
            return ""
        try:
            return gzip.decompress(b"".join(chunks)).decode("utf-8", errors="replace")
        except (OSError, EOFError, zlib.error) as exc:
            raise AgentError(f"the CLI's event log came back damaged: {exc}") from exc

    @staticmethod
    def _record(env: CudaEnv, parsed: ParsedRun) -> None:
        """The CLI's tool calls and text as the episode's steps (its usage: the caller's)."""
        for step in parsed.steps:
            env.record_step(
                ExternalStep(
                    tool=step.tool,
                    args=step.args,
                    call_id=step.call_id,
                    observation=step.observation,
                    error=step.error,
                )
            )

    # ------------------------------------------------------------------ episode
    def _uses_gateway(self, env: CudaEnv) -> bool:
        networked = env.sandbox_network
        if self.gateway is True and networked:
            raise AgentError(
                f"{self.name} with gateway=True needs a sandbox without network: drop "
                "sandbox_options={'network': True}"
            )
        use = not networked if self.gateway is None else self.gateway
        if not use:
            warnings.warn(
                f"{self.name} runs in direct mode: the sandbox shares the host's network and the "
                f"CLI's environment holds the real API key (${self.api_key_env}); the commands it "
                "runs can reach every host and read the key. Leave the network off to go "
                "through the model gateway.",
                UserWarning,
                stacklevel=3,
            )
        return use

    def _link(self) -> EpisodeLink:
        family = api_family(self.recipe.parser)
        return EpisodeLink(
            family=family,
            base_url=self.base_url or self.recipe.default_base_url,
            api_key=self._api_key(),
            model=self.model,
            budget=self.budget,
            prices=self.prices,
            gateway=self.model_gateway,
        )

    def run(self, env: CudaEnv, *, seed: int | None = None) -> Trajectory:
        key = self._api_key()  # fail before a sandbox is opened
        link = self._link() if self._uses_gateway(env) else None
        try:
            if link is None:
                env.reset(seed=seed)
            else:
                with env.sandbox_mounts(link.mounts):
                    env.reset(seed=seed)
            return self._episode(env, key, link)
        finally:
            if link is not None and not link.session.closed:
                link.close()

    def _episode(self, env: CudaEnv, key: str, link: EpisodeLink | None) -> Trajectory:
        box = env.sandbox
        if link is None and not box.network:
            raise AgentError(
                f"{self.name} in direct mode runs inside the sandbox and must reach its model "
                "server: create the env with sandbox_options={'network': True} (the local "
                "sandbox then shares the host's network; it cannot allow a single host), or "
                "leave gateway=None to go through the model gateway"
            )
        probe = self._check(
            box,
            f'printf "%s\\n%s\\n" "$HOME" "$PWD"; command -v -- {shlex.quote(self.recipe.binary)} || true',
            "inspect the environment",
        )
        lines = [*probe.stdout.splitlines(), "", "", ""]
        home, workspace, binary = lines[0].strip() or "/tmp", lines[1].strip(), lines[2].strip()
        if not binary:
            raise AgentError(
                f"{self.recipe.binary!r} ({self.recipe.npm_package}) is not on the sandbox's PATH; install it "
                f"where the sandbox sees it (not under /root): {self.recipe.install_command()}"
            )
        private = f"{home}/{AGENT_DIR}"
        values: dict[str, Any] = {
            "api_key": key if link is None else link.token,
            "base_url": (self.base_url or self.recipe.default_base_url)
            if link is None
            else link.base_url,
            "model": self.model,
            "provider": self.recipe.provider or "",
            "max_turns": self.max_turns,
            "home": f"{private}/home",
            "workspace": workspace,
            "instruction_file": f"{private}/instruction.md",
        }
        self._write_private(box, values["instruction_file"], cli_instruction(env.instruction.task))
        for rel, template in self.recipe.config_files.items():
            config = render_config(self.recipe.config_template(template), values)
            self._write_private(box, f"{values['home']}/{rel}", config)
        events_file = f"{private}/events.jsonl"
        command = render_run(self.recipe, values)
        if link is None:
            command = f"{command} > {shlex.quote(events_file)}"
        else:  # its output comes back to the host (only to explain a failure)
            command = f"{link.forwarder} && {command}"
        cli_env = render_env(self.recipe, values) | self.extra_env
        result = box.exec(command, timeout=self.timeout_s, env=cli_env)
        self.last_result = result
        if link is None:
            parsed = PARSERS[self.recipe.parser](self._read_private(box, events_file))
            self.last_run = parsed
            self._record(env, parsed)
            env.record_usage({**parsed.usage, "turns": parsed.turns}, cost_usd=parsed.cost_usd)
            turns, budget_reason, stop_reason = parsed.turns, None, parsed.stop_reason
            errors = parsed.errors
        else:
            self.last_run = PARSERS[self.recipe.parser](result.stdout)
            link.close()  # nothing more is admitted; grading runs without it
            turns = self._record_gateway(env, link)
            budget_reason = link.session.truncation_reason
            stop_reason = "max_turns" if self._out_of_turns(link, turns) else None
            errors = [*self.last_run.errors, *link.errors()]
            if (fault := link.fault()) is not None:
                finish_trajectory(env, self.name)  # the partial record names it
                raise ModelServerError(f"{self.name}: {fault}")
        failed = (
            not result.timed_out and result.exit_code != 0 and turns == 0 and budget_reason is None
        )
        if not failed:
            reason = budget_reason or ("time_limit" if result.timed_out else stop_reason)
            env.submit(truncation_reason=reason)
        traj = finish_trajectory(env, self.name)  # a failed run's partial record names it too
        if failed:
            detail = "; ".join(errors) or result.stderr.strip()[-1000:] or "no output"
            raise AgentError(
                f"{self.name} exited with code {result.exit_code} before any model reply: {detail}"
            )
        return traj

    def _out_of_turns(self, link: EpisodeLink, turns: int) -> bool:
        """The CLI stopped at its turn limit: as many turns as allowed, the last one asking
        for more tools (a last reply of text alone is a natural end)."""
        if turns < self.max_turns:
            return False
        steps = link.session.steps()
        return bool(steps) and steps[-1].tool is not None

    def _record_gateway(self, env: CudaEnv, link: EpisodeLink) -> int:
        """Steps, usage, cost, turns and calls, all from the gateway's capture; the turns."""
        summary = link.session.summary()
        self.last_session_summary = summary
        for step in link.session.steps():
            env.record_step(step)
        turns = link.session.agent_turns()
        env.record_usage({**link.usage(), "turns": turns}, cost_usd=summary["cost_usd"])
        env.record_turns(link.session.turns())
        env.record_model_calls(link.model_calls())
        return turns


class ClaudeCodeAgent(InstalledAgent):
    """claude-code (``agents/claude-code/recipe.yaml``); base_url is the Anthropic API origin."""

    def __init__(self, **options: Any) -> None:
        super().__init__("claude-code", **options)


class OpenCodeAgent(InstalledAgent):
    """opencode (``agents/opencode/recipe.yaml``) on any OpenAI-compatible ``base_url``."""

    def __init__(self, **options: Any) -> None:
        super().__init__("opencode", **options)
