"""``load_suite(source)``: the one entry point for every problem source."""

from __future__ import annotations

import functools
from pathlib import Path

from cudaenv.errors import SourceNotFoundError
from cudaenv.package_data import data_path
from cudaenv.problems.suite import Suite

BUILTIN = "builtin"
GENERATED = "generated"  # the families' default set; "generated:seed=S,count=N" another draw
QUESTIONS = "questions"  # reasoning questions (cudaenv.questions): "questions:seed=S,count=N"


@functools.cache
def _generated(text: str) -> Suite:
    from cudaenv.families.generate import from_source

    return Suite(from_source(text), source=text)


@functools.cache
def _builtin() -> Suite:
    from cudaenv.problems.directory import load_problem_tree

    return Suite(load_problem_tree(data_path("envs")), source=BUILTIN)


def load_suite(source: str | Path = BUILTIN) -> Suite:  # or a QuestionSuite (questions:...)
    """Load problems from ``"builtin"``, a directory tree, a ``.tar.gz`` datapack, ``hf://...``,
    a tree of Harbor task directories (``task.toml``), a ``.jsonl`` of repository tasks, or
    ``"generated"`` (the problem families' default set, made on first use; options select
    another draw: ``"generated:seed=7,count=200,families=reduce-axis+py-reduce-axis"``).
    ``"questions[:seed=S,count=N,kinds=a+b]"`` and question datapacks give a
    :class:`~cudaenv.questions.suite.QuestionSuite` instead (:mod:`cudaenv.questions`).

    >>> suite = load_suite("builtin")
    >>> len(suite.filter(groups=["cuda-kernels"])) > 0
    True
    """
    if isinstance(source, Suite):
        return source
    if not isinstance(source, str | Path):
        from cudaenv.questions.suite import QuestionSuite

        if isinstance(source, QuestionSuite):
            return source  # type: ignore[return-value]
    text = str(source)
    if text == QUESTIONS or text.startswith(QUESTIONS + ":"):
        from cudaenv.questions.source import load_questions

        return load_questions(text)  # type: ignore[return-value]
    if text == BUILTIN:
        return _builtin()
    if text == GENERATED or text.startswith(GENERATED + ":"):
        return _generated(text)
    if text.startswith("hf://"):
        from cudaenv.problems.datapack import read_problem_datapack
        from cudaenv.problems.hub import download_datapack

        return Suite(read_problem_datapack(download_datapack(text)), source=text)
    path = Path(text).expanduser()
    if not path.exists():
        raise SourceNotFoundError(f"problem source {text!r} does not exist")
    if path.is_file() and path.suffix == ".jsonl":
        from cudaenv.problems.swe_tasks import read_repo_tasks

        return Suite(read_repo_tasks(path), source=text)
    if path.is_file():
        from cudaenv.problems.datapack import read_problem_datapack
        from cudaenv.questions.source import is_question_source, load_questions

        if is_question_source(text):
            return load_questions(text)  # type: ignore[return-value]

        return Suite(read_problem_datapack(path), source=text)
    from cudaenv.problems.harbor_tasks import find_task_dirs, load_task_dir

    task_dirs = find_task_dirs(path)
    if task_dirs:  # Harbor tasks (an exported task embeds a problem-spec.yaml in its tests/)
        return Suite([load_task_dir(d) for d in task_dirs], source=text)
    from cudaenv.problems.directory import load_problem_tree

    problems = load_problem_tree(path)
    if not problems:
        raise SourceNotFoundError(f"no problem-spec.yaml or task.toml found under {text!r}")
    return Suite(problems, source=text)
