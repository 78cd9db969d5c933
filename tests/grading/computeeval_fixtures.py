"""Our per-group fixture problems (tests/data/computeeval_groups/, ComputeEval's authoring
layout) written as a ComputeEval problems datapack, so they load the way ComputeEval's own
releases do: ``metadata.json`` with an MD5 per line, ``problems.jsonl`` records of schema 2
whose known-good solution travels as ``baseline_solution``."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "computeeval_groups"
RECORD_KEYS = (
    "task_id", "date", "prompt", "metadata", "group", "source_references", "build_command",
    "test_command", "benchmark_command", "timing_mode", "min_cuda_toolkit",
    "compute_capability", "requires_datacenter_gpu", "timeout_seconds",
)  # fmt: skip


def _files(root: Path, prefix: str = "") -> list[dict[str, str]]:
    if not root.is_dir():
        return []
    return [
        {"path": prefix + f.relative_to(root).as_posix(), "content": f.read_text()}
        for f in sorted(root.rglob("*"))
        if f.is_file()
    ]


def record(task_dir: Path) -> dict:
    """The ComputeEval datapack record of one authoring directory."""
    spec = yaml.safe_load((task_dir / "problem-spec.yaml").read_text())
    rec = {"type": spec["problem_type"], "schema_version": 2}
    rec |= {key: spec.get(key) for key in RECORD_KEYS}
    rec["date"] = str(rec["date"])
    rec["requires_datacenter_gpu"] = bool(rec["requires_datacenter_gpu"])
    rec["context_files"] = _files(task_dir / "context")
    rec["test_files"] = _files(task_dir / "test", "test/")
    rec["baseline_solution"] = {
        "schema_version": 2,
        "type": "file",
        "task_id": spec["task_id"],
        "files": _files(task_dir / "solution"),
    }
    return rec


def task_dirs() -> list[Path]:
    return sorted(d for d in FIXTURES.iterdir() if (d / "problem-spec.yaml").exists())


def write_pack(path: Path, dirs: list[Path] | None = None) -> Path:
    """A problems datapack of ``dirs`` (default: every fixture) at ``path``."""
    lines = [
        (json.dumps(record(d), ensure_ascii=False) + "\n").encode() for d in dirs or task_dirs()
    ]
    ids = [json.loads(line)["task_id"] for line in lines]
    meta = {
        "release": "fixtures",
        "total_count": len(lines),
        "created_at": "2026-12-05T00:00:00",
        "description": "cudaenv's own per-group fixtures",
        "task_id_hashes": {
            tid: hashlib.md5(line).hexdigest() for tid, line in zip(ids, lines, strict=True)
        },
    }
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (
            ("metadata.json", json.dumps(meta).encode()),
            ("problems.jsonl", b"".join(lines)),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path
