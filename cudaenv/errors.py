"""One exception hierarchy for cudaenv.

Every error the library raises on purpose derives from :class:`CudaEnvError`; where a
built-in exception means the same thing, the subclass inherits it too, so callers can catch
either (``except FileNotFoundError`` still works for a missing problem directory).
"""

from __future__ import annotations


class CudaEnvError(Exception):
    """Root of every error cudaenv raises on purpose."""


class SpecError(CudaEnvError, ValueError):
    """A problem spec, datapack record or config is malformed.

    The message names the file (or source), the task_id and the field where known.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        task_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.detail = message
        self.source = source
        self.task_id = task_id
        self.field = field
        where = ", ".join(
            f"{k}={v}" for k, v in (("file", source), ("task_id", task_id), ("field", field)) if v
        )
        super().__init__(f"{message} ({where})" if where else message)


class UnsafePathError(SpecError):
    """A path is absolute, escapes its root, or collides with a protected path."""


class IntegrityError(SpecError):
    """A datapack line does not match the hash recorded in its metadata."""


class ProblemNotFoundError(CudaEnvError, KeyError):
    """No problem with the requested task_id exists in the suite."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "problem not found"


class SourceNotFoundError(CudaEnvError, FileNotFoundError):
    """A suite source (directory, archive, hub repo) does not exist or cannot be read."""


class SandboxError(CudaEnvError, RuntimeError):
    """A sandbox failed for infrastructure reasons (not the agent's fault)."""


class WorkerError(SandboxError):
    """A worker process holding episodes (``ProcessEnv``) died or could not start: its
    episodes are lost, never the agent's fault."""


class SandboxPathError(SandboxError, PermissionError):
    """A sandbox path resolves outside the workspace."""


class SandboxClosedError(SandboxError):
    """An operation was attempted on a closed sandbox."""


class SandboxTimeoutError(SandboxError, TimeoutError):
    """A sandbox lifecycle operation (not an agent command) timed out."""


class IsolationUnavailableError(SandboxError):
    """No bubblewrap works here and rlimits-only isolation was not asked for explicitly."""


class GradingError(CudaEnvError, RuntimeError):
    """Grading could not be carried out (infrastructure fault, never a verdict)."""


class OutDirError(CudaEnvError, OSError):
    """A results directory cannot be used: not a directory, unwritable, or full."""


class OutDirBusyError(OutDirError):
    """Another live process holds the results directory (two runs would do every episode twice)."""


class ToolError(CudaEnvError, ValueError):
    """An agent action names an unknown tool or carries bad arguments."""


class ModeError(CudaEnvError, ValueError):
    """A mode was asked of a problem that cannot support it (e.g. optimize without benchmark)."""


class AgentError(CudaEnvError, RuntimeError):
    """The agent failed: its model's output or its own setup (a request the model server
    refused as malformed, a CLI that is not installed). Scored as the agent's failure."""


class InfrastructureError(CudaEnvError, RuntimeError):
    """Something other than the agent failed; the episode is not scored and is run again on
    resume (:mod:`cudaenv.faults` says which errors are which)."""


class ModelServerError(InfrastructureError):
    """The model server or the model gateway failed: unreachable, timed out, or 5xx / 429 after
    the client's retries, or gone mid-episode. Never the model's failure."""


class MissingExtraError(CudaEnvError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"{module!r} is not installed; install it with: pip install 'cudaenv[{extra}]'"
        )


class TrajectoryPrefixError(CudaEnvError, ValueError):
    """A trajectory cannot become one training sample: a turn's prompt does not extend the
    previous turn's prompt and completion (the history was rewritten, or the chat template
    renders a past reply differently), or its token data is missing."""
