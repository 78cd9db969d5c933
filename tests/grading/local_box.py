"""A real local sandbox behind hooks, for tests that watch what the grader does to its boxes."""

from __future__ import annotations

from collections.abc import Mapping

from cudaenv.sandbox.base import ExecResult, Sandbox
from cudaenv.sandbox.local import LocalSandbox


class LocalBox(Sandbox):
    """Every call goes to a real :class:`LocalSandbox`; a test overrides the hooks ``before``,
    ``after`` (which may replace the result) and ``killed`` instead of each method. Only what
    the :class:`Sandbox` contract requires is forwarded (``stray_processes`` is not)."""

    def __init__(self) -> None:
        self.inner = LocalSandbox()
        self.isolation = self.inner.isolation

    def before(self, command: str, env: Mapping[str, str]) -> None:
        """Called before each command runs."""

    def after(self, command: str, env: Mapping[str, str], res: ExecResult) -> ExecResult:
        """Called after each command ran; what it returns is the command's result."""
        return res

    def killed(self) -> None:
        """Called after each ``kill_processes``."""

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        self.before(command, env or {})
        res = self.inner.exec(command, timeout=timeout, env=env, cwd=cwd)
        return self.after(command, env or {}, res)

    def kill_processes(self) -> None:
        self.inner.kill_processes()
        self.killed()

    def write_file(self, path: str, data: str | bytes) -> None:
        self.inner.write_file(path, data)

    def read_file(self, path: str) -> bytes:
        return self.inner.read_file(path)

    def list_files(self) -> list[str]:
        return self.inner.list_files()

    def close(self) -> None:
        self.inner.close()
