"""The ``launch`` kind: a reference's host code and the sizes of one call; how many thread
blocks, threads, kernel launches, idle threads or bytes of static shared memory per block.

Truth: the closed forms of :mod:`cudaenv.questions.launches`, checked against the code's own
launches (the simulator for Python, a recording runtime stub for C++) in the tests.
"""

from __future__ import annotations

import math
import random

from cudaenv.questions import text
from cudaenv.questions.adapter import Rendered, draw_params, render
from cudaenv.questions.cases import PY_TYPES, dtype_of
from cudaenv.questions.launches import PLANS, Plan, plan
from cudaenv.questions.model import Question

SIZES = (1, 3, 7, 32, 33, 100, 257, 1000, 1024, 4099, 20000, 70001)
MAX_ELEMENTS = 4_000_000  # the shapes stay small enough to run on the simulator

QUESTIONS = {
    "blocks": "How many thread blocks does this call launch in all (summed over every kernel launch)?",
    "threads": "How many threads does this call launch in all (summed over every kernel launch)?",
    "launches": "How many kernel launches does this call make?",
    "idle": "How many of the threads it launches write no element of the output?",
    "shared": "How many bytes of static shared memory does each block of its `{kernel}` kernel use?",
}


def eligible(family: str) -> bool:
    return family in PLANS


def sizes_for(r: Rendered, rng: random.Random) -> dict[str, int] | None:
    """Interface sizes for a launch question (the names ``launches.plan`` reads)."""
    p = r.params
    base = r.base
    for _ in range(20):
        pick = lambda: rng.choice(SIZES)  # noqa: E731
        if base in ("elementwise", "rownorm", "stencil") and (base != "stencil" or p["dim"] == 2):
            s = {"rows": pick(), "cols": pick()}
        elif base == "stencil":
            s = {"n": pick() * rng.choice((1, 3, 64))}
        elif base == "reduce-axis":
            s = {"rows": pick(), "cols": pick()}
            if p["axis"] == "mid":
                s["batch"] = rng.choice((1, 2, 5, 17, 64))
            if p.get("pitched"):
                s["ld"] = s["cols"] + rng.choice((1, 7, 32))
        elif base == "scan":
            s = (
                {"n": pick() * rng.choice((1, 5, 64))}
                if p["layout"] == "1d"
                else {"rows": pick(), "cols": pick()}
            )
        elif base == "permute":
            s = {f"d{i}": rng.choice((1, 3, 17, 32, 33, 64, 100)) for i in range(len(p["perm"]))}
        elif base == "matmul":
            s = {"M": pick(), "N": pick(), "K": rng.choice((1, 16, 100))}
        else:
            s = {"n": pick() * rng.choice((1, 4, 32)), "rows": rng.choice((1, 100, 4096))}
        if math.prod(v for k, v in s.items() if k != "ld") <= MAX_ELEMENTS:
            return s
    return None


def py_shapes(r: Rendered, s: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """The shape of every array argument of a Python interface for sizes ``s``."""
    p, base = r.params, r.base
    names = [q.name for q in r.interface.params]
    if base == "permute":
        x = tuple(s[f"d{i}"] for i in range(len(p["perm"])))
        return {"x": x, names[-1]: tuple(x[q] for q in p["perm"])}
    if base == "reduce-axis":
        x = (s["batch"], s["rows"], s["cols"]) if p["axis"] == "mid" else (s["rows"], s["cols"])
        out = {"row": (s["rows"],), "col": (s["cols"],), "mid": (s.get("batch", 1), s["cols"])}[
            p["axis"]
        ]
        return {"x": x, names[-1]: out}
    full = (s["n"],) if "n" in s else (s["rows"], s["cols"])
    shapes = {}
    for i, name in enumerate(names):
        b = p.get("bcast", [])[i] if base == "elementwise" and i < len(p["bcast"]) else "full"
        if (base == "rownorm" and name in ("gamma", "beta")) or b == "row":
            shapes[name] = (s["cols"],)
        else:
            shapes[name] = (s["rows"], 1) if b == "col" else full
    return shapes


def call_description(r: Rendered, s: dict[str, int]) -> tuple[str, str]:
    """(the sentence describing the call, the call expression)."""
    if r.language == "cuda_cpp":
        args = [f"d_{q.name}" if q.pointer else str(s[q.name]) for q in r.interface.params]
        expr = f"{r.interface.function}({', '.join(args)})"
        return f"The host calls `{expr};` (every pointer a device buffer of the right size).", expr
    shapes = py_shapes(r, s)
    parts = [
        f"`{n}` of shape {tuple(shapes[n])} ({dtype_of(r, n) if n in shapes else PY_TYPES[r.params['dtype']]})"
        for n in shapes
    ]
    expr = f"{r.interface.function}({', '.join(shapes)})"
    return f"It is called as `{expr}` with device arrays " + ", ".join(parts) + ".", expr


def _quantity(pl: Plan, rng: random.Random, base: str, params: dict) -> str | None:
    options = ["blocks", "threads"]
    if pl.idle is not None:
        options.append("idle")
    if pl.launches[0].shared_bytes is not None:
        options.append("shared")
    if len(pl.launches) > 1 or (base == "reduce-axis" and params["axis"] != "row"):
        options.append("launches")
    return rng.choice(options)


def make_launch(family: str, rng: random.Random) -> Question | None:
    r = render(family, draw_params(family, rng))
    s = sizes_for(r, rng)
    if s is None:
        return None
    pl = plan(family, r.params, s)
    if not pl.launches:
        return None
    what = _quantity(pl, rng, r.base, r.params)
    value = {"blocks": pl.blocks, "threads": pl.threads, "launches": len(pl.launches),
             "idle": pl.idle, "shared": pl.launches[0].shared_bytes}[what]  # fmt: skip
    kernel = pl.launches[0].kernel.split("<")[0]
    sentence, expr = call_description(r, s)
    body = (
        f"Here is `{r.solution_path}`:\n\n{text.listing(r.reference.source, r.language)}\n\n"
        f"{sentence}\n\n{QUESTIONS[what].format(kernel=kernel)}"
    )
    how = ("closed form from the host code; the simulator records the launches" if r.language == "cuda_python"
           else "closed form from the host code; a recording CUDA runtime stub and ptxas check it")  # fmt: skip
    return Question(
        task_id="",
        kind="launch",
        question=body,
        answer_format="integer",
        format_text="an integer.",
        expected=int(value),  # type: ignore[arg-type]
        echo=[expr],
        chance=1 / 3 if what == "launches" else 0.0,
        family=family,
        language=r.language,
        verified=True,
        verification=how,
        metadata={"source_task_id": r.task_id, "params": r.params, "sizes": s, "quantity": what},
    )


__all__ = ["call_description", "eligible", "make_launch", "py_shapes", "sizes_for"]
