"""The split-harness fields of a problem (``checker``, ``check_files``): validation naming the
field, the authoring ``check/`` folder, the shared libraries the loader adds, the datapack
record and its hash, and that check files never reach a workspace the solution sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.errors import SpecError
from cudaenv.grading.workspace import assemble
from cudaenv.problems import load_suite
from cudaenv.problems.datapack import read_problem_datapack, write_problem_datapack
from cudaenv.problems.directory import load_problem_dir
from cudaenv.problems.shared_libs import shared_libraries
from cudaenv.problems.validation import problem_from_dict
from tests.conftest import write_problem

BASE = {"task_id": "t", "type": "cuda_cpp", "group": "g", "prompt": "p", "test_command": "./a"}
CHECK = {"path": "check/check.py", "content": "import cudaenv_check\n"}


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"checker": {"command": "python check/check.py"}}, "check_files", "needs its check_files"),
        ({"check_files": [CHECK]}, "check_files", "need a checker"),
        ({"checker": {"command": ""}, "check_files": [CHECK]}, "checker.command", "at least 1"),
        ({"checker": {"command": "x", "cmd": 1}, "check_files": [CHECK]}, "checker.cmd", "Extra"),
        ({"checker": {"command": "x"}, "check_files": [CHECK, CHECK]}, "check_files", "duplicate"),
        (
            {"checker": {"command": "x"}, "check_files": [{"path": "../c.py", "content": ""}]},
            "check_files.0.path",
            "..",
        ),
    ],
)
def test_bad_split_fields_are_errors_naming_the_field(
    extra: dict, field: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message) as info:
        problem_from_dict({**BASE, **extra})
    assert info.value.field == field


def _split_dir(tmp_path: Path) -> Path:
    return write_problem(
        tmp_path / "suite",
        "split-one",
        spec={"checker": {"command": "python check/check.py", "build_command": "true"}},
        files={
            "test/runner.cu": '#include "cudaenv_runner.h"\nint main() {}\n',
            "check/check.py": "from cudaenv_check import main\n",
            "solution/solution.cu": "int x;\n",
        },
    )


def test_a_check_folder_loads_with_the_shared_libraries_it_names(tmp_path: Path) -> None:
    p = load_problem_dir(_split_dir(tmp_path))
    assert p.split and p.checker is not None and p.checker.build_command == "true"
    assert [f.path for f in p.check_files] == ["check/check.py", "check/cudaenv_check.py"]
    assert [f.path for f in p.test_files] == ["test/cudaenv_runner.h", "test/runner.cu"]
    libs = {f.path: f.content for side in shared_libraries().values() for f in side}
    assert {f.path: f.content for f in p.check_files}["check/cudaenv_check.py"] == libs[
        "check/cudaenv_check.py"
    ]
    # a library nobody names is not added (the Python runner here)
    assert "test/cudaenv_pyrunner.py" not in {f.path for f in p.test_files}


def test_check_files_are_protected_and_never_in_the_solutions_workspace(tmp_path: Path) -> None:
    p = load_problem_dir(_split_dir(tmp_path))
    assert {"check/check.py", "check/cudaenv_check.py"} <= p.protected_paths
    files = assemble(p, {"solution.cu": "int x;\n", "check/check.py": "print('pass')\n"})
    assert "check/check.py" in files.dropped
    assert not any(f.path.startswith("check/") for f in files.all)


def test_a_spec_may_not_list_check_files(tmp_path: Path) -> None:
    d = _split_dir(tmp_path)
    spec = d / "problem-spec.yaml"
    spec.write_text(spec.read_text() + "check_files: []\n")
    with pytest.raises(SpecError) as info:
        load_problem_dir(d)
    assert info.value.field == "check_files"


def test_the_record_round_trips_and_its_hash_covers_the_checker(tmp_path: Path) -> None:
    p = load_problem_dir(_split_dir(tmp_path))
    record = p.to_record()
    assert record["checker"]["command"] == "python check/check.py"
    assert [f["path"] for f in record["check_files"]] == [f.path for f in p.check_files]
    pack = write_problem_datapack([p], tmp_path / "pack.tar.gz")
    (back,) = read_problem_datapack(pack)
    assert back.check_files == p.check_files and back.checker == p.checker
    assert back.content_hash() == p.content_hash()
    other = {**record, "check_files": [{**record["check_files"][0], "content": "# other\n"}]}
    changed = problem_from_dict(
        {**other, "check_files": other["check_files"] + record["check_files"][1:]}
    )
    assert changed.content_hash() != p.content_hash()
    plain = problem_from_dict(BASE).to_record()
    assert "checker" not in plain and "check_files" not in plain  # others' records unchanged


def test_the_bundled_examples_are_split() -> None:
    suite = load_suite("builtin")
    for task_id, runner in (("fused-axpby", "test/runner.cpp"), ("py-vector-add", "test/run.py")):
        p = suite[task_id]
        assert p.split and runner in {f.path for f in p.test_files}
        assert "check/cudaenv_check.py" in {f.path for f in p.check_files}
        assert not any(
            "CUDAENV_COMPLETION_TOKEN" in f.content for f in p.test_files if "pychild" not in f.path
        )


def test_a_runner_is_a_cpp_unless_it_has_kernels_of_its_own() -> None:
    """nvcc hands a .cpp to the host compiler alone (no device passes): every bundled runner
    without a kernel of its own is one, and its build command compiles it."""
    kinds: dict[str, int] = {}
    for p in load_suite("builtin"):
        if p.problem_type != "cuda_cpp":
            continue
        (runner,) = (f for f in p.test_files if f.path.startswith("test/runner."))
        has_kernels = "__global__" in runner.content or "<<<" in runner.content
        want = "test/runner.cu" if has_kernels else "test/runner.cpp"
        assert runner.path == want, p.task_id
        assert ("test/*.cu" if has_kernels else "test/*.cpp") in p.build_command, p.task_id
        kinds[want] = kinds.get(want, 0) + 1
    assert kinds == {"test/runner.cpp": 30, "test/runner.cu": 2}
