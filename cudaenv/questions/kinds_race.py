"""The ``race`` kind: a reference kernel, or the same kernel with one block barrier removed;
can its outputs differ from run to run, and after which line is a barrier missing?

Truth by construction. Positives are barriers that separate shared-memory writes from reads
of other threads: the C++ families' own "sync" mutants where the mutant is exactly the
reference without one ``__syncthreads();`` line, and, for the Python renderings, each
``cuda.syncthreads()`` that has shared-array writes before it and reads after it in the same
block of statements. Negatives are the references themselves. The C++ items are marked
unverified until ``compute-sanitizer --tool racecheck`` on a GPU has agreed
(``scripts/questions_gpu.py``); racecheck cannot run on the simulator.
"""

from __future__ import annotations

import difflib
import random
import re

from cudaenv.questions import checked, text
from cudaenv.questions.adapter import Rendered, Variant, draw_params, render
from cudaenv.questions.model import Question

_CPP_BARRIER = re.compile(r"^\s*__syncthreads\(\);\s*(//.*)?$")
_PY_BARRIER = re.compile(r"^\s*cuda\.syncthreads\(\)\s*(#.*)?$")
_SHARED = re.compile(r"^\s*(\w+)\s*=\s*cuda\.shared\.array\(", re.M)


def eligible(family: str) -> bool:
    return True


def _gap(reference: str, mutant: str) -> int | None:
    """The 0-based index of the one barrier line ``mutant`` lacks, else None."""
    a, b = reference.split("\n"), mutant.split("\n")
    ops = [
        op
        for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if len(ops) != 1 or ops[0][0] != "delete" or ops[0][2] - ops[0][1] != 1:
        return None
    return ops[0][1] if _CPP_BARRIER.match(a[ops[0][1]]) else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def py_barriers(source: str) -> list[int]:
    """0-based lines of ``cuda.syncthreads()`` with a shared-array write before it and a read
    after it within its own block of statements (same indentation, no dedent between)."""
    lines = source.split("\n")
    shared = set(_SHARED.findall(source))
    out = []
    for i, line in enumerate(lines):
        if not _PY_BARRIER.match(line):
            continue
        ind = _indent(line)

        def region(step: int, i: int = i, ind: int = ind) -> list[str]:
            got, j = [], i + step
            while 0 <= j < len(lines):
                s = lines[j]
                if (s.strip() and _indent(s) < ind) or (s.strip() and _PY_BARRIER.match(s)):
                    break
                got.append(s)
                j += step
            return got

        before, after = region(-1), region(1)
        wrote = any(re.search(rf"\b{n}\[[^\]]*\]\s*=(?!=)", s) for n in shared for s in before)
        reads = any(re.search(rf"\b{n}\[", s.split("=", 1)[-1]) for n in shared for s in after)
        if wrote and reads:
            out.append(i)
    return out


def _question(r: Rendered, source: str, race: bool, line: int | None, name: str) -> Question:
    n_lines = source.rstrip("\n").count("\n") + 1
    body = (
        f"Here is `{r.solution_path}`:\n\n{text.listing(source, r.language, numbered=True)}\n\n"
        "Launched as its host code launches it, can the values it writes differ between two runs "
        "with the same input on a GPU because threads of a block read or overwrite shared memory "
        "that other threads of the block have not finished with (for some input)? If so, right "
        "after which line must a block-wide barrier be added?"
    )
    if r.language == "cuda_python":
        verified, how = (
            True,
            "by construction: a barrier between shared writes and reads removed (or none)",
        )
    elif checked.race_confirmed(r.family, name):
        verified, how = (
            True,
            "by construction; racecheck on a GPU agreed (scripts/questions_gpu.py)",
        )
    else:
        verified, how = False, "by construction; unverified until racecheck on a GPU agrees"
    expected = {"race": race, "line": line}
    accepted = [{"race": True, "line": line + 1}] if race and line is not None else []
    return Question(
        task_id="",
        kind="race",
        question=body,
        answer_format="race",
        format_text='a JSON object with two keys: "race" (true or false) and "line" (that line number, or null when there is no race).',
        expected=expected,
        accepted=accepted,
        chance=round(0.5 * 2 / n_lines, 6) if race else 0.5,
        family=r.family,
        language=r.language,
        variant=name,
        verified=verified,
        verification=how,
        metadata={"source_task_id": r.task_id, "params": r.params},
    )


def _positive(r: Rendered, rng: random.Random) -> tuple[str, int, str] | None:
    """(source without one barrier, the 1-based line after which it was, a name)."""
    ref = r.reference.source
    if r.language == "cuda_cpp":
        options: list[tuple[Variant, int]] = []
        for v in r.mutants():
            gap = _gap(ref, v.source) if v.kind == "sync" else None
            if gap is not None:
                options.append((v, gap))
        if not options:
            return None
        v, gap = rng.choice(options)
        return v.source, gap, v.name
    barriers = py_barriers(ref)
    if not barriers:
        return None
    i = rng.choice(barriers)
    lines = ref.split("\n")
    return "\n".join(lines[:i] + lines[i + 1 :]), i, f"no-barrier@{i + 1}"


def make_race(family: str, rng: random.Random) -> Question | None:
    r = render(family, draw_params(family, rng))
    positive = _positive(r, rng)
    if positive is None:
        return None
    if rng.random() < 0.4:
        return _question(r, r.reference.source, False, None, "reference")
    source, after, name = positive
    return _question(r, source, True, after, name)


__all__ = ["eligible", "make_race", "py_barriers"]
