"""Read and write ComputeEval-format datapacks (``.tar.gz`` with metadata.json + *.jsonl).

Unlike the upstream reader we verify the per-task MD5 recorded in ``metadata.json``
(taken over the JSONL line including its newline), so a tampered or truncated pack is an
error naming the task instead of a silently different benchmark.

Grading policy (:mod:`cudaenv.problems.policy`): a record's ``grading_policy`` wins; else the
pack's ``metadata.json`` ``grading_policy``; else the pack is ComputeEval's own and its problems
are graded by the ``computeeval`` policy. Our writer records ``strict`` in ``metadata.json`` and
the policy of every problem that differs in its record (the upstream reader ignores both).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cudaenv.errors import IntegrityError, SourceNotFoundError, SpecError
from cudaenv.problems.model import Problem, Solution
from cudaenv.problems.policy import DATAPACK_DEFAULT, STRICT
from cudaenv.problems.validation import problem_from_dict, solution_from_dict

PROBLEMS_FILE = "problems.jsonl"
SOLUTIONS_FILE = "solutions.jsonl"
METADATA_FILE = "metadata.json"
# our extension: the reference solutions travel in the same archive, hashed like problems
REFERENCE_FILE = "reference_solutions.jsonl"


def _md5(line: bytes) -> str:
    return hashlib.md5(line).hexdigest()


def _read_members(path: Path) -> dict[str, bytes]:
    if not path.is_file():
        raise SourceNotFoundError(f"datapack {path} does not exist")
    try:
        with tarfile.open(path, "r:gz") as tar:
            out: dict[str, bytes] = {}
            for member in tar.getmembers():
                if not member.isfile():
                    continue
                name = member.name.removeprefix("./")
                if name in (METADATA_FILE, PROBLEMS_FILE, SOLUTIONS_FILE, REFERENCE_FILE):
                    fh = tar.extractfile(member)
                    if fh is not None:
                        out[name] = fh.read()
            return out
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SpecError(f"unreadable datapack archive: {exc}", source=str(path)) from exc


def _lines(blob: bytes) -> list[bytes]:
    """Non-blank lines, each with its trailing newline (as hashed)."""
    return [ln for ln in io.BytesIO(blob).readlines() if ln.strip()]


def _parse_line(line: bytes, source: str, lineno: int) -> dict[str, Any]:
    try:
        data = json.loads(line.decode("utf-8"), strict=False)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"line {lineno} is not valid JSON: {exc}", source=source) from exc
    if not isinstance(data, dict):
        raise SpecError(f"line {lineno} is not a JSON object", source=source)
    return data


def _metadata(members: dict[str, bytes], source: str) -> dict[str, Any]:
    if METADATA_FILE not in members:
        raise SpecError(f"missing {METADATA_FILE}", source=source)
    try:
        meta = json.loads(members[METADATA_FILE])
    except json.JSONDecodeError as exc:
        raise SpecError(f"{METADATA_FILE} is not valid JSON: {exc}", source=source) from exc
    if not isinstance(meta, dict):
        raise SpecError(f"{METADATA_FILE} must be an object", source=source)
    return meta


def _verify(task_id: str, line: bytes, hashes: dict[str, str], source: str, field: str) -> None:
    expected = hashes.get(task_id)
    if expected is None:
        raise IntegrityError(
            "no hash recorded for this task", source=source, task_id=task_id, field=field
        )
    if _md5(line) != expected:
        raise IntegrityError(
            "MD5 of the problem line does not match metadata.json",
            source=source,
            task_id=task_id,
            field=field,
        )


def read_problem_datapack(path: str | Path, *, verify: bool = True) -> list[Problem]:
    """Problems of a datapack, reference solutions attached when the pack carries them."""
    path = Path(path)
    source = str(path)
    members = _read_members(path)
    meta = _metadata(members, source)
    if PROBLEMS_FILE not in members:
        raise SpecError(f"missing {PROBLEMS_FILE}", source=source)
    hashes = meta.get("task_id_hashes") or {}
    policy = meta.get("grading_policy", DATAPACK_DEFAULT)
    problems: list[Problem] = []
    for lineno, line in enumerate(_lines(members[PROBLEMS_FILE]), start=1):
        data = _parse_line(line, f"{source}:{PROBLEMS_FILE}", lineno)
        task_id = data.get("task_id")
        if verify and isinstance(task_id, str):
            _verify(task_id, line, hashes, source, "task_id_hashes")
        data.setdefault("grading_policy", policy)
        problems.append(problem_from_dict(data, source=f"{source}:{PROBLEMS_FILE}:{lineno}"))
    if REFERENCE_FILE in members:
        ref_hashes = meta.get("reference_hashes") or {}
        refs = {}
        for lineno, line in enumerate(_lines(members[REFERENCE_FILE]), start=1):
            sol = solution_from_dict(
                _parse_line(line, source, lineno), source=f"{source}:{REFERENCE_FILE}:{lineno}"
            )
            if verify:
                _verify(sol.task_id, line, ref_hashes, source, "reference_hashes")
            refs[sol.task_id] = sol
        problems = [p.model_copy(update={"solution": refs.get(p.task_id)}) for p in problems]
    _check_unique_ids(problems, source)
    if verify and meta.get("total_count") not in (None, len(problems)):
        raise IntegrityError(
            f"metadata.json says {meta.get('total_count')} problems, archive holds {len(problems)}",
            source=source,
            field="total_count",
        )
    return problems


def read_solution_datapack(
    path: str | Path, *, rejected: list[SpecError] | None = None
) -> list[Solution]:
    """Solutions of a ComputeEval solutions datapack (``solutions.jsonl``).

    A malformed line raises :class:`SpecError`, unless ``rejected`` is given: then the line's
    error (naming the line number) is appended there and the good lines are still returned,
    so one bad line does not throw away a pack of good samples.
    """
    path = Path(path)
    source = str(path)
    members = _read_members(path)
    _metadata(members, source)
    if SOLUTIONS_FILE not in members:
        raise SpecError(f"missing {SOLUTIONS_FILE}", source=source)
    out = []
    for n, line in enumerate(io.BytesIO(members[SOLUTIONS_FILE]).readlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{SOLUTIONS_FILE}:{n}"
        try:
            out.append(solution_from_dict(_parse_line(line, where, n), source=where))
        except SpecError as exc:
            if rejected is None:
                raise
            rejected.append(exc)
    return out


def _check_unique_ids(problems: Iterable[Problem], source: str) -> None:
    seen: set[str] = set()
    for p in problems:
        if p.task_id in seen:
            raise SpecError("duplicate task_id", source=source, task_id=p.task_id, field="task_id")
        seen.add(p.task_id)


def _dump_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _add(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name=name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_problem_datapack(
    problems: Iterable[Problem],
    path: str | Path,
    *,
    release: str = "internal",
    description: str | None = None,
    include_references: bool = True,
) -> Path:
    """Write ``problems`` as a datapack the upstream reader and ours both accept."""
    path = Path(path)
    problems = list(problems)
    _check_unique_ids(problems, str(path))
    lines = [_dump_line(p.to_record()) for p in problems]
    meta: dict[str, Any] = {
        "release": release,
        "total_count": len(problems),
        "created_at": datetime.now(UTC).isoformat(),
        "description": description,
        "task_id_hashes": {p.task_id: _md5(ln) for p, ln in zip(problems, lines, strict=True)},
        # records leave the default out (Problem.to_record): say what it is
        "grading_policy": STRICT.name,
    }
    refs = [p.solution for p in problems if p.solution is not None] if include_references else []
    ref_lines = [_dump_line(s.model_dump(mode="json", exclude_none=True)) for s in refs]
    if refs:
        meta["reference_hashes"] = {
            s.task_id: _md5(ln) for s, ln in zip(refs, ref_lines, strict=True)
        }
    now = datetime.now(UTC).timestamp()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        _add(tar, METADATA_FILE, json.dumps(meta, indent=2).encode(), now)
        _add(tar, PROBLEMS_FILE, b"".join(lines), now)
        if ref_lines:
            _add(tar, REFERENCE_FILE, b"".join(ref_lines), now)
    tmp.replace(path)
    return path


def write_solution_datapack(
    solutions: Iterable[Solution], path: str | Path, *, release: str = "internal"
) -> Path:
    """Write a ComputeEval solutions datapack."""
    path = Path(path)
    sols = list(solutions)
    meta = {
        "release": release,
        "total_count": len(sols),
        "created_at": datetime.now(UTC).isoformat(),
    }
    now = datetime.now(UTC).timestamp()
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, METADATA_FILE, json.dumps(meta, indent=2).encode(), now)
        _add(
            tar,
            SOLUTIONS_FILE,
            b"".join(_dump_line(s.model_dump(mode="json", exclude_none=True)) for s in sols),
            now,
        )
    return path
