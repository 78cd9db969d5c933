"""The run manifest, ``run.json``: what an evaluation run was, stored beside its results.

A run directory's samples are only comparable with each other if they came from the same
agent, model, sampling, limits, mode, sandbox, cudaenv and problem contents. ``eval`` writes
the manifest before its first episode; a rerun on the same directory (a resume) builds the
manifest it would write and compares: any difference in a compared field refuses the resume
with one line naming it, before anything is appended. ``--force`` resumes anyway and the
override is recorded in ``history``, so the mix stays visible.

Compared: ``cudaenv_version``, ``agent``, ``model``, ``sampling``, ``max_turns``,
``max_steps``, ``mode``, ``sandbox``, ``repair_from`` and, for every task both runs select,
its content hash. Not compared (a resume may change them): ``base_url`` (a server moved),
``source`` (the same contents at another path), ``attempts`` and the selection (a resume may
add samples or problems), ``prices``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cudaenv.agents.sampling import Sampling
from cudaenv.errors import OutDirError, SpecError

if TYPE_CHECKING:
    from cudaenv.problems.model import Problem

__all__ = [
    "COMPARED",
    "MANIFEST_NAME",
    "ManifestMismatchError",
    "ResumeRecord",
    "RunManifest",
    "build_manifest",
    "check_resume",
    "differences",
    "read_manifest",
    "write_manifest",
]

MANIFEST_NAME = "run.json"
COMPARED = (
    "cudaenv_version",
    "agent",
    "model",
    "sampling",
    "max_turns",
    "max_steps",
    "mode",
    "sandbox",
    "repair_from",
)


class ManifestMismatchError(SpecError):
    """A resume asked for settings other than the stored run's (``--force`` overrides)."""


class ResumeRecord(BaseModel):
    """One later run on the directory: when, by which cudaenv, and what ``--force`` let
    through (empty: the settings matched)."""

    model_config = ConfigDict(extra="forbid")

    at: str
    cudaenv_version: str
    forced: bool = False
    differences: list[str] = Field(default_factory=list)


class RunManifest(BaseModel):
    """``run.json``: the settings every sample of the directory was produced with."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    cudaenv_version: str
    created_at: str = ""
    agent: str
    model: str | None = None
    base_url: str | None = None
    sampling: Sampling | None = Field(None, description="None: the agent calls no model")
    max_turns: int | None = None
    max_steps: int
    mode: str
    source: str
    problems: dict[str, str] = Field(
        default_factory=dict, description="task_id -> the problem's content hash (sha256)"
    )
    sandbox: dict[str, Any] = Field(default_factory=dict, description="backend and options")
    repair_from: str | None = Field(None, description="the run whose failures are repaired")
    since: str | None = None
    until: str | None = None
    history: list[ResumeRecord] = Field(default_factory=list)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _show(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=False)
    return (
        json.dumps(value, sort_keys=True, default=str) if isinstance(value, dict) else repr(value)
    )


def differences(stored: RunManifest, new: RunManifest) -> list[str]:
    """What differs between two manifests, one phrase per difference (compared fields
    first, then the problems both select whose contents changed).

    >>> a = RunManifest(cudaenv_version="1", agent="openai", model="m1", max_steps=5,
    ...                 mode="solve", source="builtin", problems={"t": "aa"})
    >>> differences(a, a.model_copy(update={"model": "m2", "problems": {"t": "bb"}}))
    ["model: 'm1' stored, 'm2' now", 'problem t: its content changed (sha256 aa stored, bb now)']
    """
    out = []
    for name in COMPARED:
        old, cur = getattr(stored, name), getattr(new, name)
        if old != cur:
            out.append(f"{name}: {_show(old)} stored, {_show(cur)} now")
    for task_id in sorted(set(stored.problems) & set(new.problems)):
        old, cur = stored.problems[task_id], new.problems[task_id]
        if old != cur:
            out.append(
                f"problem {task_id}: its content changed (sha256 {old[:12]} stored, {cur[:12]} now)"
            )
    return out


def read_manifest(directory: Path) -> RunManifest | None:
    """The directory's manifest, None if it has none; a SpecError if it is unreadable."""
    path = directory / MANIFEST_NAME
    if not path.exists():
        return None
    try:
        return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError) as exc:
        raise SpecError(f"{path} is not a cudaenv run manifest: {exc}".splitlines()[0]) from None


def write_manifest(directory: Path, manifest: RunManifest) -> Path:
    """Write ``run.json`` atomically (a unique temp file, then rename)."""
    path = directory / MANIFEST_NAME
    tmp = directory / f".{MANIFEST_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutDirError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def check_resume(
    directory: Path, new: RunManifest, *, has_results: bool, force: bool = False
) -> RunManifest:
    """The manifest to write before this run's first episode, or ManifestMismatchError.

    A directory without results gets ``new``. With results, the stored manifest must match
    ``new`` in every compared field (or ``force``): the stored one is kept, with the union
    of the problems and this run appended to ``history``. Results without a manifest (an
    older cudaenv wrote them) cannot be checked and need ``force`` too.
    """
    stored = read_manifest(directory)
    if not has_results:
        return new.model_copy(update={"created_at": new.created_at or now()})
    if stored is None:
        if not force:
            raise ManifestMismatchError(
                f"{directory} holds results but no {MANIFEST_NAME} to check this run's settings "
                "against; use another --out, or pass --force to resume it with these settings"
            )
        record = ResumeRecord(
            at=now(),
            cudaenv_version=new.cudaenv_version,
            forced=True,
            differences=[f"no {MANIFEST_NAME}: results of unknown settings kept"],
        )
        return new.model_copy(update={"created_at": now(), "history": [record]})
    found = differences(stored, new)
    if found and not force:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ManifestMismatchError(
            f"{directory} holds a run with other settings: {found[0]}{more}; rerun with the "
            "stored settings, use another --out, or pass --force to resume anyway"
        )
    record = ResumeRecord(
        at=now(), cudaenv_version=new.cudaenv_version, forced=bool(found), differences=found
    )
    return stored.model_copy(
        update={
            "problems": {**stored.problems, **new.problems},
            "history": [*stored.history, record],
        }
    )


def build_manifest(
    agent: str,
    agent_obj: Any,
    sampling: Sampling | None,
    env_options: Mapping[str, Any],
    problems: Iterable[Problem],
    window: tuple[str | None, str | None] = (None, None),
    repair_from: Path | None = None,
) -> RunManifest:
    """The manifest of a run of ``agent`` (its resolved object supplies its own defaults:
    model, base URL, turn limit) with these env options over ``problems``; the sandbox's
    options resolved with their defaults."""
    from cudaenv import __version__
    from cudaenv.sandbox import sandbox_options

    box = sandbox_options(env_options["sandbox"], env_options.get("sandbox_options"))
    return RunManifest(
        cudaenv_version=__version__,
        agent=agent,
        model=getattr(agent_obj, "model", None),
        base_url=getattr(agent_obj, "base_url", None),
        sampling=sampling,
        max_turns=getattr(agent_obj, "max_turns", None),
        max_steps=env_options["max_steps"],
        mode=env_options["mode"],
        source=env_options["source"],
        problems={p.task_id: p.content_hash() for p in problems},
        sandbox=box.model_dump(mode="json"),
        repair_from=os.path.abspath(repair_from) if repair_from is not None else None,
        since=window[0],
        until=window[1],
    )
