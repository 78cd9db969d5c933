"""The ``cudaenv`` command (console script ``cudaenv.cli:main``).

``app`` and ``main`` are built on first use (``cudaenv.cli.application``), so importing one
module of the package, e.g. ``cudaenv.cli.progress``, does not load every command.
Errors print one clear line and exit with code 2 (no traceback).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudaenv.cli.application import app, main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from cudaenv.cli import application

        return getattr(application, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
