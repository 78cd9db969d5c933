"""Question datapacks: a ``.tar.gz`` of ``metadata.json``, ``questions.jsonl`` (one question row
per line, its answers left out) and ``answers.jsonl`` (``task_id``, ``expected``,
``accepted``), so the rows can go to a model or a dataset viewer and the answers stay with the
grader. ``metadata.json`` holds the MD5 of every question line (with its newline), checked on
read, and the per-kind counts and chance levels. The archive is byte-identical for the same
questions (sorted members, zero timestamps).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaenv.errors import SpecError
from cudaenv.questions.model import HIDDEN_FIELDS, Question, kind_counts

FORMAT = "cudaenv-questions/1"
QUESTIONS = "questions.jsonl"
ANSWERS = "answers.jsonl"
METADATA = "metadata.json"


def _line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n"


def write_questions(questions: Iterable[Question], path: str | Path, *, source: str = "",
                    description: str | None = None) -> Path:  # fmt: skip
    """Write ``questions`` to ``path`` (a ``.tar.gz``)."""
    items = list(questions)
    rows = [_line(q.row()) for q in items]
    answers = [_line(q.answers()) for q in items]
    meta = {
        "format": FORMAT,
        "source": source,
        "description": description or "CUDA reasoning questions (cudaenv.questions)",
        "total_count": len(items),
        "by_kind": kind_counts(items),
        "task_id_hashes": {
            q.task_id: hashlib.md5(r.encode()).hexdigest() for q, r in zip(items, rows, strict=True)
        },
    }
    members = {METADATA: json.dumps(meta, indent=1, sort_keys=True) + "\n", QUESTIONS: "".join(rows),
               ANSWERS: "".join(answers)}  # fmt: skip
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = members[name].encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return out


def is_question_datapack(path: str | Path) -> bool:
    """Whether ``path`` is a tar archive holding ``questions.jsonl``."""
    try:
        with tarfile.open(path, "r:*") as tar:
            return QUESTIONS in tar.getnames()
    except (tarfile.TarError, OSError):
        return False


def read_questions(path: str | Path) -> list[Question]:
    """The questions of a datapack, answers joined back; a SpecError for a line whose MD5
    does not match, a question without its answer, or a row that carries an answer."""
    with tarfile.open(path, "r:*") as tar:
        files = {}
        for name in (METADATA, QUESTIONS, ANSWERS):
            member = tar.extractfile(name) if name in tar.getnames() else None
            if member is None:
                raise SpecError(f"{path}: the datapack has no {name}", field=name)
            files[name] = member.read().decode()
    meta = json.loads(files[METADATA])
    if meta.get("format") != FORMAT:
        raise SpecError(f"{path}: not a {FORMAT} datapack", field="format")
    hashes = meta.get("task_id_hashes", {})
    answers = {a["task_id"]: a for a in map(json.loads, files[ANSWERS].splitlines(keepends=True))}
    out = []
    for n, line in enumerate(files[QUESTIONS].splitlines(keepends=True), 1):
        row = json.loads(line)
        tid = row.get("task_id")
        if hashes.get(tid) != hashlib.md5(line.encode()).hexdigest():
            raise SpecError(f"{path}: line {n} ({tid}) does not match its MD5", task_id=tid)
        if leaked := sorted(HIDDEN_FIELDS & set(row)):
            raise SpecError(f"{path}: line {n} carries {leaked}", task_id=tid)
        if tid not in answers:
            raise SpecError(f"{path}: no answer for {tid}", task_id=tid)
        out.append(Question.model_validate({**row, "expected": answers[tid]["expected"],
                                            "accepted": answers[tid].get("accepted", [])}))  # fmt: skip
    return out


__all__ = [
    "ANSWERS",
    "FORMAT",
    "QUESTIONS",
    "is_question_datapack",
    "read_questions",
    "write_questions",
]
