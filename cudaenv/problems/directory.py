"""Load problems from authoring directories (``problem-spec.yaml`` + context/test/check/solution/baseline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cudaenv.errors import SourceNotFoundError, SpecError
from cudaenv.problems.discovery import find_marked_dirs
from cudaenv.problems.model import Problem, Solution, SourceFile
from cudaenv.problems.shared_libs import with_shared_libraries
from cudaenv.problems.validation import problem_from_dict

SPEC_NAME = "problem-spec.yaml"
# A folder beside a group's problems whose ``test/`` files every problem there gets as its own
# (one copy on disk of a helper such as the cuda_python harnesses' ``pychild.py``); a problem's
# own file of the same path wins. Loaded problems embed the files, so datapacks and exports
# stay self-contained. The split harness's libraries come from the package's own
# ``envs/_shared/`` (:mod:`cudaenv.problems.shared_libs`), for problems that name them.
SHARED_DIR = "_shared"


def _read_tree(root: Path, prefix: str = "") -> list[SourceFile]:
    """Every regular file under ``root`` as a SourceFile; symlinks are refused (they could leak)."""
    if not root.is_dir():
        return []
    files: list[SourceFile] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise SpecError(f"symlink {path} not allowed in a problem directory", source=str(path))
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SpecError(f"{path} is not UTF-8 text", source=str(path)) from exc
        files.append(SourceFile(path=prefix + rel, content=text))
    return files


def _read_solution(root: Path, task_id: str) -> Solution | None:
    """A solution directory holds plain files, or a single ``.patch`` file."""
    files = _read_tree(root)
    if not files:
        return None
    if len(files) == 1 and files[0].path.endswith(".patch"):
        return Solution(task_id=task_id, type="patch", patch=files[0].content)
    return Solution(task_id=task_id, files=files)


def load_problem_dir(directory: str | Path) -> Problem:
    """Read one problem directory; errors name the spec file, task_id and field."""
    directory = Path(directory)
    spec_path = directory / SPEC_NAME
    if not spec_path.is_file():
        raise SourceNotFoundError(f"no {SPEC_NAME} in {directory}")
    try:
        spec: Any = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SpecError(_yaml_problem(exc), source=str(spec_path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read spec: {exc}", source=str(spec_path)) from exc
    if not isinstance(spec, dict):
        raise SpecError("spec must be a YAML mapping", source=str(spec_path))
    task_id = spec.get("task_id") if isinstance(spec.get("task_id"), str) else None
    for field in ("context_files", "test_files", "check_files", "baseline_solution", "solution"):
        if field in spec:
            raise SpecError(
                f"{field} comes from the problem's folders, not the spec",
                source=str(spec_path),
                task_id=task_id,
                field=field,
            )
    data = dict(spec)
    data["context_files"] = _read_tree(directory / "context")
    checker = data.get("checker")
    command = checker.get("command") if isinstance(checker, dict) else None
    data["test_files"], data["check_files"] = with_shared_libraries(
        _test_files(directory),
        _read_tree(directory / "check", prefix="check/"),
        [data.get("test_command"), data.get("benchmark_command"), command],
    )
    if task_id is not None:
        data["solution"] = _read_solution(directory / "solution", task_id)
        data["baseline_solution"] = _read_solution(directory / "baseline", task_id)
    return problem_from_dict(data, source=str(spec_path))


def _test_files(directory: Path) -> list[SourceFile]:
    """The problem's ``test/`` files plus the group's shared ones it does not replace."""
    own = _read_tree(directory / "test", prefix="test/")
    paths = {f.path for f in own}
    shared = _read_tree(directory.parent / SHARED_DIR / "test", prefix="test/")
    return sorted([*own, *(f for f in shared if f.path not in paths)], key=lambda f: f.path)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line with the line and column where it broke."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"malformed YAML{where}: {' '.join(str(problem).split())}"


def find_problem_dirs(root: str | Path) -> list[Path]:
    """Every directory under ``root`` (inclusive) holding a problem spec, sorted."""
    return find_marked_dirs(root, SPEC_NAME)


def write_problem_dir(root: str | Path, spec: dict[str, Any], files: dict[str, str]) -> Path:
    """Write an authoring directory ``root/<task_id>``: the spec plus files by relative path
    (``context/...``, ``test/...``, ``check/...``, ``solution/...``, ``baseline/...``). For tools and tests
    that build problems on the fly; the result loads with :func:`load_problem_dir`."""
    directory = Path(root) / str(spec["task_id"])
    directory.mkdir(parents=True)
    (directory / SPEC_NAME).write_text(yaml.safe_dump(spec, sort_keys=False))
    for rel, content in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return directory


def load_problem_tree(root: str | Path) -> list[Problem]:
    """Load every problem found recursively under ``root``."""
    return [load_problem_dir(d) for d in find_problem_dirs(root)]


__all__ = [
    "SPEC_NAME",
    "find_problem_dirs",
    "load_problem_dir",
    "load_problem_tree",
    "write_problem_dir",
]
