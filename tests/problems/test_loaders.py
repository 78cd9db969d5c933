from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cudaenv.cli import app
from cudaenv.errors import IntegrityError, ProblemNotFoundError, SourceNotFoundError, SpecError
from cudaenv.problems import load_suite
from cudaenv.problems.datapack import (
    read_problem_datapack,
    read_solution_datapack,
    write_problem_datapack,
    write_solution_datapack,
)
from cudaenv.problems.model import Problem, Solution, SourceFile
from tests.conftest import write_problem


def test_builtin_suite_loads_with_hidden_fields() -> None:
    suite = load_suite("builtin")
    assert len(suite) >= 3
    groups = {p.group for p in suite}
    assert "cuda-kernels" in groups
    for p in suite:
        assert p.solution is not None and p.solution.files, f"{p.task_id} has no reference"
        assert p.test_files, f"{p.task_id} has no tests"
        assert all(f.path.startswith("test/") for f in p.test_files)


def test_directory_loader_reads_all_parts(cpu_problem_dir: Path) -> None:
    suite = load_suite(cpu_problem_dir.parent)
    p = suite["cpu-add"]
    assert [f.path for f in p.context_files] == ["include/add.h"]
    assert [f.path for f in p.test_files] == ["test/test_main.cpp"]
    assert p.solution is not None and p.solution.files[0].path == "solution.cpp"
    assert p.baseline_solution is not None
    assert str(p.date) == "2026-11-01"


def test_malformed_yaml_names_file(tmp_path: Path) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    (d / "problem-spec.yaml").write_text("task_id: [unclosed\n")
    with pytest.raises(SpecError) as info:
        load_suite(tmp_path)
    assert "problem-spec.yaml" in str(info.value) and "YAML" in str(info.value)


def test_malformed_yaml_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    spec = d / "problem-spec.yaml"
    spec.write_text("task_id: bad\ngroup: g\nprompt: [unclosed\ntest_command: x\n")
    with pytest.raises(SpecError) as info:
        load_suite(tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and f"file={spec}" in msg and "at line 4" in msg, msg
    res = CliRunner().invoke(app, ["list", str(tmp_path)])  # the CLI prints that one line
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "at line 4" in res.output and "Traceback" not in res.output


def test_mistyped_field_in_spec(tmp_path: Path) -> None:
    write_problem(tmp_path, "typo", spec={"test_comand": "x"})
    with pytest.raises(SpecError) as info:
        load_suite(tmp_path)
    assert info.value.field == "test_comand" and info.value.task_id == "typo"


def test_missing_directory() -> None:
    with pytest.raises(SourceNotFoundError):
        load_suite("/nonexistent/suite")


def test_symlink_in_problem_dir_refused(tmp_path: Path) -> None:
    d = write_problem(tmp_path, "sym", files={"test/t.cu": "x"})
    (d / "context").mkdir()
    (d / "context" / "leak.h").symlink_to("/etc/passwd")
    with pytest.raises(SpecError, match="symlink"):
        load_suite(tmp_path)


def test_filters(tmp_path: Path) -> None:
    write_problem(
        tmp_path,
        "a",
        spec={
            "date": "2025-01-01",
            "group": "cccl",
            "metadata": {"difficulty": "hard", "tags": ["sort"]},
        },
    )
    write_problem(tmp_path, "b", spec={"date": "2026-06-01"})
    write_problem(
        tmp_path, "c", spec={"date": "2026-12-01", "metadata": {"tags": ["scan", "sort"]}}
    )
    s = load_suite(tmp_path)
    assert s.filter(groups=["cccl"]).ids == ["a"]
    assert s.filter(tags=["sort"]).ids == ["a", "c"]
    assert s.filter(difficulty="hard").ids == ["a"]
    assert s.filter(since="2026-01-01").ids == ["b", "c"]
    assert s.filter(since="2026-01-01", until="2026-07-01").ids == ["b"]
    assert s.filter(exclude=["b"]).ids == ["a", "c"]
    assert s.filter(include=["c", "a"]).ids == ["a", "c"]
    with pytest.raises(ProblemNotFoundError):
        s.filter(include=["zzz"])
    with pytest.raises(ProblemNotFoundError, match="did you mean"):
        s["bb"]


def test_datapack_round_trip_exact(tmp_path: Path, cpu_problem_dir: Path) -> None:
    suite = load_suite(cpu_problem_dir.parent)
    out = suite.to_datapack(tmp_path / "p.tar.gz", release="2026-1")
    back = load_suite(out)
    assert [p.model_dump() for p in back] == [p.model_dump() for p in suite]
    assert back["cpu-add"].solution == suite["cpu-add"].solution
    assert back["cpu-add"].content_hash() == suite["cpu-add"].content_hash()


def _pack(tmp: Path, lines: list[bytes], meta: dict, name: str = "p.tar.gz") -> Path:
    path = tmp / name
    with tarfile.open(path, "w:gz") as tar:
        for fname, data in (
            ("metadata.json", json.dumps(meta).encode()),
            ("problems.jsonl", b"".join(lines)),
        ):
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


COMPUTE_EVAL_RECORD = {
    "type": "cuda_cpp",
    "schema_version": 2,
    "task_id": "CUDA/900",
    "date": "2026-02-01",
    "prompt": "Write a kernel.",
    "metadata": {
        "difficulty": "medium",
        "tags": ["kernels"],
        "releases": ["2026-1"],
        "do_not_release": False,
        "source": "ours",
    },
    "group": "cuda-kernels",
    "context_files": [{"path": "include/k.h", "content": "void k();\n"}],
    "test_files": [{"path": "test/test_main.cu", "content": "int main(){}\n"}],
    "source_references": {"any": None, "all": ["__shfl_down_sync"]},
    "build_command": "nvcc -I include -o test.out solution.cu test/*.cu",
    "test_command": "./test.out",
    "benchmark_command": "./test.out --perf",
    "timing_mode": {
        "type": "region",
        "include": ["bench_region"],
        "exclude": None,
        "time_type": "kernel",
    },
    "min_cuda_toolkit": "12.0",
    "compute_capability": "8.0",
    "requires_datacenter_gpu": False,
    "timeout_seconds": 30.0,
    "base_image": "nvidia/cuda:13.0.0-devel-ubuntu24.04",
    "baseline_solution": {
        "schema_version": 1,
        "type": "file",
        "task_id": "CUDA/900",
        "files": [{"path": "solution.cu", "content": "void k(){}\n"}],
    },
}


def test_compute_eval_datapack_every_field_intact(tmp_path: Path) -> None:
    line = (json.dumps(COMPUTE_EVAL_RECORD) + "\n").encode()
    meta = {
        "release": "2026-1",
        "total_count": 1,
        "created_at": "2026-02-02T00:00:00",
        "description": "d",
        "task_id_hashes": {"CUDA/900": hashlib.md5(line).hexdigest()},
    }
    p = load_suite(_pack(tmp_path, [line], meta))["CUDA/900"]
    rec = p.to_record()
    for key, value in COMPUTE_EVAL_RECORD.items():
        if key == "metadata":
            for mk, mv in value.items():
                assert rec["metadata"][mk] == mv, mk
        elif key == "baseline_solution":
            assert rec[key]["files"] == value["files"]
        else:
            assert rec[key] == value, key


def test_hash_mismatch_names_task(tmp_path: Path) -> None:
    line = (json.dumps(COMPUTE_EVAL_RECORD) + "\n").encode()
    meta = {"release": "2026-1", "total_count": 1, "task_id_hashes": {"CUDA/900": "0" * 32}}
    with pytest.raises(IntegrityError) as info:
        load_suite(_pack(tmp_path, [line], meta))
    assert info.value.task_id == "CUDA/900"


def test_hash_missing_and_count_mismatch(tmp_path: Path) -> None:
    line = (json.dumps(COMPUTE_EVAL_RECORD) + "\n").encode()
    with pytest.raises(IntegrityError, match="no hash"):
        read_problem_datapack(
            _pack(tmp_path, [line], {"release": "x", "total_count": 1, "task_id_hashes": {}})
        )
    good = {
        "release": "x",
        "total_count": 2,
        "task_id_hashes": {"CUDA/900": hashlib.md5(line).hexdigest()},
    }
    with pytest.raises(IntegrityError, match=r"total_count|2 problems"):
        read_problem_datapack(_pack(tmp_path, [line], good, "q.tar.gz"))


def test_unreadable_archive(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(SpecError, match="unreadable"):
        load_suite(bad)


def test_bad_json_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="line 1"):
        read_problem_datapack(_pack(tmp_path, [b"{nope\n"], {"release": "x"}), verify=False)


def test_solutions_datapack_round_trip(tmp_path: Path) -> None:
    sols = [
        Solution(task_id="a", files=[SourceFile(path="solution.cu", content="x")]),
        Solution(task_id="b", files=[SourceFile(path="s.py", content="y")]),
    ]
    path = write_solution_datapack(sols, tmp_path / "s.tar.gz")
    assert read_solution_datapack(path) == sols


text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prompts=st.lists(text.filter(lambda s: s.strip()), min_size=1, max_size=4),
    content=text,
    refs=st.none()
    | st.lists(st.from_regex(r"[a-z_:]{1,12}", fullmatch=True), min_size=1, max_size=3),
)
def test_datapack_round_trip_property(tmp_path_factory, prompts, content, refs) -> None:
    problems = [
        Problem.model_validate(
            {
                "task_id": f"T/{i}",
                "type": "cuda_cpp",
                "group": "g",
                "prompt": pr,
                "test_command": "./t",
                "test_files": [{"path": "test/t.cu", "content": content}],
                "source_references": refs,
                "solution": {
                    "task_id": f"T/{i}",
                    "files": [{"path": "solution.cu", "content": content + pr}],
                },
            }
        )
        for i, pr in enumerate(prompts)
    ]
    path = write_problem_datapack(problems, tmp_path_factory.mktemp("dp") / "p.tar.gz")
    back = read_problem_datapack(path)
    assert [p.model_dump() for p in back] == [p.model_dump() for p in problems]
    assert [p.solution for p in back] == [p.solution for p in problems]


def test_hub_source_offline_from_cache(
    tmp_path: Path, cpu_problem_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Build a real hub cache layout offline and load hf://org/name@rev through it."""
    from huggingface_hub import constants

    suite = load_suite(cpu_problem_dir.parent)
    cache = tmp_path / "hub"
    repo = cache / "datasets--ours--cuda-suite"
    commit = "a" * 40
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    suite.to_datapack(snap / "problems.tar.gz")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    loaded = load_suite("hf://ours/cuda-suite")
    assert loaded.ids == ["cpu-add"]
    pinned = load_suite(f"hf://ours/cuda-suite@{commit}/problems.tar.gz")
    assert pinned.ids == ["cpu-add"]
    with pytest.raises(SourceNotFoundError, match="cache"):
        load_suite("hf://ours/other-suite")


def test_a_groups_shared_test_files_reach_each_problem(tmp_path: Path) -> None:
    """``<group>/_shared/test/`` files are every problem's own hidden tests there (one copy on
    disk), a problem's own file of the same path wins, and a datapack embeds them."""
    group = tmp_path / "group"
    for tid in ("p-one", "p-two"):
        write_problem(group, tid, files={"test/main.cpp": f"// {tid}\n", "solution/s.cpp": ""})
    (group / "p-two" / "test" / "helper.h").write_text("// p-two's own\n")
    (group / "_shared" / "test").mkdir(parents=True)
    (group / "_shared" / "test" / "helper.h").write_text("// shared\n")
    suite = load_suite(str(group))
    assert [p.task_id for p in suite] == ["p-one", "p-two"]  # _shared is no problem
    tests = {p.task_id: {f.path: f.content for f in p.test_files} for p in suite}
    assert tests["p-one"] == {"test/helper.h": "// shared\n", "test/main.cpp": "// p-one\n"}
    assert [f.path for f in suite["p-one"].test_files] == ["test/helper.h", "test/main.cpp"]
    assert tests["p-two"]["test/helper.h"] == "// p-two's own\n"
    pack = tmp_path / "pack.tar.gz"
    suite.to_datapack(pack)
    packed = {f.path: f.content for f in load_suite(str(pack))["p-one"].test_files}
    assert packed["test/helper.h"] == "// shared\n"
