"""Which C++ truths a real GPU has confirmed (``data/gpu_checked.json``).

Nothing here runs on a GPU: ``scripts/questions_gpu.py`` (a stage of ``scripts/gpu-check.sh``)
runs a sample of C++ exec-output kernels and the race items on one, compares them with the
stored answers, and writes what agreed into its output; a maintainer copies that file here.
Until a (family, mutant) pair is listed, its C++ mutant questions are marked unverified and
left out of a default question set (``unverified=1`` in the source string keeps them).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from cudaenv.questions.adapter import generator_version

PATH = Path(__file__).with_name("data") / "gpu_checked.json"


@functools.cache
def _load() -> dict[str, Any]:
    data = json.loads(PATH.read_text())
    if str(data.get("generator_version")) != generator_version():
        return {"mutants": [], "races": []}  # confirmed for other kernels: not these
    return data


def mutant_confirmed(family: str, name: str) -> bool:
    """Whether a GPU run matched the model of ``family``'s mutant ``name``."""
    return f"{family}/{name}" in set(_load().get("mutants", []))


def race_confirmed(family: str, name: str) -> bool:
    """Whether racecheck on a GPU reported the hazard of ``family``'s race item ``name``."""
    return f"{family}/{name}" in set(_load().get("races", []))


def record() -> dict[str, Any]:
    """The file's contents (for reports)."""
    return dict(_load())


__all__ = ["PATH", "mutant_confirmed", "race_confirmed", "record"]
