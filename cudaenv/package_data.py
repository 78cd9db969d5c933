"""Locate data shipped with the package (``envs/``, ``agents/``).

In a wheel they live under ``cudaenv/_data/``; in a source checkout (editable install)
they sit at the repository root beside the package.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(name: str) -> Path:
    """Directory of a shipped data folder; raises FileNotFoundError if absent."""
    packaged = Path(str(resources.files("cudaenv"))) / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"cudaenv data folder {name!r} not found (broken install?)")
