"""Run a C++ question's call on the CPU: the question's kernel (reference or mutant) built
with the CUDA emulator of ``tests/families/cuemu`` and the driver of
:mod:`cudaenv.questions.driver`; the printout compared with the stored answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cudaenv.families import build_problem, get_family
from cudaenv.questions import adapter, driver
from cudaenv.questions.kinds_code import case_from_record
from cudaenv.questions.model import Question
from tests.families.cuemu import emulate


def source_of(q: Question) -> tuple[adapter.Rendered, str, dict[str, str]]:
    """(the rendered problem, the kernel source the question shows, the include files)."""
    r = adapter.render(q.family, q.metadata["params"])
    variant = (
        r.reference
        if q.variant == "reference"
        else next(v for v in r.mutants() if v.name == q.variant)
    )
    problem = build_problem(get_family(q.family), r.params)
    return r, variant.source, {f.path: f.content for f in problem.context_files}


def run_emulated(q: Question, workdir: Path) -> np.ndarray:
    """The values the question's call leaves in its output, on the emulator."""
    r, source, headers = source_of(q)
    case = case_from_record(q.metadata["case"])
    header = next(p for p in headers if p.endswith(".h")).split("/", 1)[-1]
    files = {**headers, "solution.cu": source, "main.cu": driver.main_source(r, case, header)}
    binary = emulate.build(files, workdir, sources=["solution.cu", "main.cu"])
    run = emulate.run(binary)
    assert run.rc == 0, run.output[-2000:]
    return np.array(driver.parse_output(run.output))
