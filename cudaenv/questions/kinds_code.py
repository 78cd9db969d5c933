"""The kinds that run a family's code in the head: ``exec-output`` (a kernel, a call, what it
writes), ``test-output`` (a problem statement, a call, what a correct solution writes) and
``bug-locate`` (a wrong solution: which outputs are wrong, or which line).

Truths: the family's host reference semantics (:mod:`cudaenv.questions.semantics`) and, for
mutants, their models (:mod:`cudaenv.questions.mutants`). A Python question is verified by
the numba-cuda simulator (the tests and ``bench/questions_check.py`` run the family's own
kernels); a C++ mutant's output is unverified until a GPU has confirmed its model
(:mod:`cudaenv.questions.checked`).
"""

from __future__ import annotations

import difflib
import random

import numpy as np

from cudaenv.questions import checked, mutants, semantics, text
from cudaenv.questions.adapter import Rendered, Variant, draw_params, render
from cudaenv.questions.cases import Case, draw_case, has_cases
from cudaenv.questions.model import Question

_DRAWS = 12  # parameter sets and inputs tried before a family gives up on one question


def eligible(family: str) -> bool:
    from cudaenv.questions.adapter import base_name

    return has_cases(base_name(family))


def _drawn(family: str, rng: random.Random) -> tuple[Rendered, Case, np.ndarray] | None:
    for _ in range(_DRAWS):
        r = render(family, draw_params(family, rng))
        case = draw_case(r, rng)
        if case is None:
            continue
        try:
            return r, case, semantics.expected(r, case)
        except semantics.NotExact:
            continue
    return None


def _truth(r: Rendered, variant: Variant) -> tuple[bool, str]:
    """(verified, how) for an output computed for ``variant`` of ``r``."""
    if variant.name == "reference":
        if r.language == "cuda_python":
            return (
                True,
                "host reference semantics; the numba-cuda simulator runs the family's reference",
            )
        return True, "host reference semantics (the family's reference passes its harness on a GPU)"
    if r.language == "cuda_python":
        return True, "mutant model; the numba-cuda simulator runs the family's mutant"
    if checked.mutant_confirmed(r.family, variant.name):
        return True, "mutant model, confirmed on a GPU (scripts/questions_gpu.py)"
    return False, "mutant model; unverified until scripts/questions_gpu.py compares it on a GPU"


def _mutant(
    r: Rendered, case: Case, want: np.ndarray, rng: random.Random
) -> tuple[Variant, np.ndarray] | None:
    """A modelled mutant that writes something else than the reference for ``case``."""
    options = [v for v in r.mutants() if mutants.modelled(r.family, v.name)]
    rng.shuffle(options)
    for v in options:
        got = mutants.mutant_output(r, v, case)
        if got is not None and not np.array_equal(got, want, equal_nan=True):
            return v, got
    return None


def case_record(r: Rendered, case: Case) -> dict[str, object]:
    """The call as data (question metadata): what a checker needs to run it again."""
    return {
        "function": r.interface.function,
        "args": [p.name for p in r.interface.params],
        "arrays": {k: text.to_json(v) for k, v in case.arrays.items()},
        "dtypes": {k: str(v.dtype) for k, v in case.arrays.items()},
        "shapes": {k: list(v.shape) for k, v in case.arrays.items()},
        "scalars": dict(case.scalars),
        "output": case.output,
    }


def case_from_record(record: dict) -> Case:  # type: ignore[type-arg]
    """The Case a :func:`case_record` describes."""
    arrays = {
        k: np.array(v, dtype=record["dtypes"][k]).reshape(record["shapes"][k])
        for k, v in record["arrays"].items()
    }
    return Case(arrays, dict(record["scalars"]), record["output"])


def _echo(r: Rendered, case: Case) -> list[str]:
    return [text.call_expression(r, case), f"{r.interface.function}("]


def _source_name(r: Rendered) -> str:
    return r.solution_path


def make_exec_output(family: str, rng: random.Random) -> Question | None:
    drawn = _drawn(family, rng)
    if drawn is None:
        return None
    r, case, want = drawn
    variant, out = r.reference, want
    if rng.random() < 0.5:
        picked = _mutant(r, case, want, rng)
        if picked is None:
            return None
        variant, out = picked
    verified, how = _truth(r, variant)
    body = (
        f"Here is `{_source_name(r)}`:\n\n{text.listing(variant.source, r.language)}\n\n"
        f"It is called like this:\n\n{text.call_text(r, case)}\n\n"
        f"What does `{case.output}` hold after the call?"
    )
    return Question(
        task_id="",
        kind="exec-output",
        question=body,
        answer_format="array",
        format_text=text.array_format(r, case, out),
        expected=text.to_json(out),
        echo=_echo(r, case),
        chance=0.0,
        family=family,
        language=r.language,
        variant=variant.name,
        verified=verified,
        verification=how,
        metadata={"source_task_id": r.task_id, "params": r.params, "case": case_record(r, case)},
    )


def make_test_output(family: str, rng: random.Random) -> Question | None:
    drawn = _drawn(family, rng)
    if drawn is None:
        return None
    r, case, want = drawn
    verified, how = _truth(r, r.reference)
    body = (
        f"A CUDA programmer was given this task:\n\n<task>\n{r.prompt.strip()}\n</task>\n\n"
        f"A correct solution is called like this:\n\n{text.call_text(r, case)}\n\n"
        f"What must `{case.output}` hold after the call?"
    )
    return Question(
        task_id="",
        kind="test-output",
        question=body,
        answer_format="array",
        format_text=text.array_format(r, case, want),
        expected=text.to_json(want),
        echo=_echo(r, case),
        chance=0.0,
        family=family,
        language=r.language,
        verified=verified,
        verification=how,
        metadata={"source_task_id": r.task_id, "params": r.params, "case": case_record(r, case)},
    )


def changed_lines(reference: str, mutant: str) -> list[int]:
    """1-based lines of ``mutant`` that differ from ``reference``; where the mutant only lacks
    lines, the lines on either side of the gap. Pure comment lines count only when nothing
    else changed."""
    a, b = reference.split("\n"), mutant.split("\n")
    lines: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            lines.update(k for k in (j1, j1 + 1) if 1 <= k <= len(b) and b[k - 1].strip())
    code = {k for k in lines if not b[k - 1].lstrip().startswith(("#", "//"))}
    return sorted(code or lines)


def _task(r: Rendered) -> str:
    return f"A CUDA programmer was given this task:\n\n<task>\n{r.prompt.strip()}\n</task>\n\n"


def _bug_line(r: Rendered, rng: random.Random) -> Question | None:
    """Which line of a mutant is wrong (by construction: its diff from the reference)."""
    options = [v for v in r.mutants() if v.name != "reference"]
    if not options:
        return None
    variant = rng.choice(options)
    lines = changed_lines(r.reference.source, variant.source)
    if not lines:
        return None
    n_lines = variant.source.rstrip("\n").count("\n") + 1
    body = _task(r) + (
        f"Their `{_source_name(r)}` does not do what the task asks:\n\n"
        f"{text.listing(variant.source, r.language, numbered=True)}\n\n"
        "Which line is wrong?"
    )
    return Question(
        task_id="",
        kind="bug-locate",
        question=body,
        answer_format="integer",
        format_text="an integer: the number of a wrong line in the listing above.",
        expected=lines[0],
        accepted=lines[1:],
        chance=round(len(lines) / n_lines, 6),
        family=r.family,
        language=r.language,
        variant=variant.name,
        verified=True,
        verification="by construction: the lines where the family's mutant differs from its reference",
        metadata={"source_task_id": r.task_id, "params": r.params, "form": "line"},
    )


def _bug_indices(family: str, rng: random.Random) -> Question | None:
    """Which output elements a mutant gets wrong for one call (its model against the
    reference semantics)."""
    drawn = _drawn(family, rng)
    if drawn is None:
        return None
    r, case, want = drawn
    picked = _mutant(r, case, want, rng)
    if picked is None:
        return None
    variant, got = picked
    wrong = np.flatnonzero((got != want).reshape(-1))
    verified, how = _truth(r, variant)
    body = _task(r) + (
        f"Their `{_source_name(r)}` is:\n\n{text.listing(variant.source, r.language)}\n\n"
        f"It is called like this:\n\n{text.call_text(r, case)}\n\n"
        f"After the call, which elements of `{case.output}` differ from what the task asks for? "
        f"Count elements by their flat (row-major) index, from 0."
    )
    return Question(
        task_id="",
        kind="bug-locate",
        question=body,
        answer_format="indices",
        format_text="a JSON array of the flat indices of the wrong elements, in any order ([] if none).",
        expected=[int(i) for i in wrong],
        echo=_echo(r, case),
        chance=round(0.5**want.size, 12),
        family=family,
        language=r.language,
        variant=variant.name,
        verified=verified,
        verification=how,
        metadata={"source_task_id": r.task_id, "params": r.params, "form": "indices",
                  "case": case_record(r, case)},
    )  # fmt: skip


def make_bug_locate(family: str, rng: random.Random) -> Question | None:
    """A line question (any family), or an indices question (families with exact cases)."""
    if rng.random() < 0.5 or not eligible(family):
        return _bug_line(render(family, draw_params(family, rng)), rng)
    return _bug_indices(family, rng)


__all__ = [
    "case_from_record",
    "case_record",
    "changed_lines",
    "eligible",
    "make_bug_locate",
    "make_exec_output",
    "make_test_output",
]
