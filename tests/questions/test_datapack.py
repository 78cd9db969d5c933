"""Exporting questions: a byte-identical datapack whose question rows carry no answers, read
back equal through ``load_suite``; tampering is caught; ``cudaenv questions`` writes it."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.errors import SpecError
from cudaenv.problems.loader import load_suite
from cudaenv.questions import QuestionSuite, generate_questions
from cudaenv.questions.datapack import ANSWERS, QUESTIONS, read_questions, write_questions

QS = generate_questions(count=24, seed=13)


def _members(path: Path) -> dict[str, str]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_rows_without_answers_read_back_equal_and_byte_identical(tmp_path: Path) -> None:
    a = write_questions(QS, tmp_path / "a.tar.gz")
    b = write_questions(generate_questions(count=24, seed=13), tmp_path / "b.tar.gz")
    assert a.read_bytes() == b.read_bytes()
    files = _members(a)
    rows = [json.loads(line) for line in files[QUESTIONS].splitlines()]
    assert len(rows) == 24 and all("expected" not in r and "accepted" not in r for r in rows)
    answers = [json.loads(line) for line in files[ANSWERS].splitlines()]
    assert [x["expected"] for x in answers] == [q.expected for q in QS]
    meta = json.loads(files["metadata.json"])
    assert meta["total_count"] == 24 and set(meta["by_kind"]) == {q.kind for q in QS}
    back = load_suite(str(a))
    assert isinstance(back, QuestionSuite) and list(back) == QS


def test_infinite_answers_survive_the_round_trip(tmp_path: Path) -> None:
    scans = generate_questions(
        count=30, seed=3, kinds=["test-output"], families=["scan", "py-scan"]
    )
    q = next(q for q in scans if any(v in (float("inf"), float("-inf")) for v in _flat(q.expected)))
    (back,) = read_questions(write_questions([q], tmp_path / "inf.tar.gz"))
    assert back == q and QuestionSuite([back]).by_kind()["test-output"]["count"] == 1


def _flat(v: object) -> list[object]:
    return [x for item in v for x in _flat(item)] if isinstance(v, list) else [v]


def _rewrite(src: Path, dst: Path, edit: dict[str, str]) -> Path:
    files = {**_members(src), **edit}
    with tarfile.open(dst, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dst


def test_tampered_rows_and_leaked_answers_are_refused(tmp_path: Path) -> None:
    good = write_questions(QS, tmp_path / "q.tar.gz")
    rows = _members(good)[QUESTIONS].splitlines(keepends=True)
    changed = rows[0].replace('"question": "', '"question": "Hint: ', 1)
    bad = _rewrite(good, tmp_path / "bad.tar.gz", {QUESTIONS: "".join([changed, *rows[1:]])})
    with pytest.raises(SpecError, match="MD5"):
        read_questions(bad)
    missing = _rewrite(good, tmp_path / "missing.tar.gz", {ANSWERS: ""})
    with pytest.raises(SpecError, match="no answer"):
        read_questions(missing)


def test_the_questions_command_exports_and_reports_chance(tmp_path: Path) -> None:
    out = tmp_path / "qs.tar.gz"
    res = CliRunner().invoke(
        app, ["questions", "questions:seed=13,count=24", "--out", str(out)], terminal_width=200
    )
    assert res.exit_code == 0, res.output
    assert "chance" in res.output and "race" in res.output and out.exists()
    res = CliRunner().invoke(app, ["questions", "builtin"], terminal_width=200)
    assert res.exit_code == 2 and "not questions" in res.output
