"""CLI commands that grade: ``grade`` and ``validate`` (registered on the main app)."""

from __future__ import annotations

from cudaenv.cli import app  # noqa: F401
