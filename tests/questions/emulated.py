"""Run a C++ question's call on the CPU: the question's kernel (reference or mutant) built
with the CUDA emulator of ``tests/families/cuemu`` and the driver of
:mod:`cudaenv.questions.driver`; the printout compared with the stored answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cudaenv.questions import adapter, driver
from cudaenv.questions.kinds_code import case_from_record
from cudaenv.questions.model import Question
from tests.families.cuemu import emulate


def source_of(q: Question) -> tuple[adapter.Rendered, str, dict[str, str]]:
    """(the rendered problem, the kernel source the question shows, the include files)."""
    r = adapter.render(q.family or "", q.metadata["params"])
    return r, r.variant(q.variant).source, r.headers


def run_emulated(q: Question, workdir: Path) -> np.ndarray:
    """The values the question's call leaves in its output, on the emulator."""
    r, source, headers = source_of(q)
    case = case_from_record(q.metadata["case"])
    files = {**headers, "solution.cu": source, "main.cu": driver.main_source(r, case, r.header)}
    binary = emulate.build(files, workdir, sources=["solution.cu", "main.cu"])
    run = emulate.run(binary)
    assert run.rc == 0, run.output[-2000:]
    return np.array(driver.parse_output(run.output))
