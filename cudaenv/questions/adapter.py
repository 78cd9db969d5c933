"""The question source's one window onto :mod:`cudaenv.families`.

Questions are built from what a family publishes: its parameter space (``draw``/``check``),
the problem it renders for a parameter set (the prompt, with the interface written in it, and
the reference solution file), the mutants it declares (name, kind, description, source) and
its reference semantics (the NumPy module its checkers run, one per family for both
renderings). Nothing else of a family is read, so when the families change shape this module
is the one to change; every other module of :mod:`cudaenv.questions` sees only what it gives.
"""

from __future__ import annotations

import functools
import json
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from cudaenv.errors import SpecError

Language = Literal["cuda_cpp", "cuda_python"]
Params = dict[str, Any]

#: the families by base name: C++ and Python renderings of one problem share a base
_PY = "py-"


@dataclass(frozen=True)
class Param:
    """One parameter of an interface: ``const float* x`` or ``int rows`` (C++), ``x`` (Python)."""

    name: str
    ctype: str = ""  # C++ element or scalar type ("float", "__half", "int"); "" in Python
    pointer: bool = False
    const: bool = False


@dataclass(frozen=True)
class Interface:
    """The function a problem asks for, as its prompt declares it."""

    function: str
    params: tuple[Param, ...]
    text: str  # the declaration as the prompt writes it

    def outputs(self) -> list[str]:
        """The arrays the function writes: C++ non-const pointers; Python: the last argument."""
        if any(p.ctype for p in self.params):
            return [p.name for p in self.params if p.pointer and not p.const]
        return [self.params[-1].name]

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


@dataclass(frozen=True)
class Variant:
    """The reference solution (``name == "reference"``) or one declared mutant of it."""

    name: str
    kind: str  # the family's mutant kind ("tail", "sync", ...); "reference"
    description: str  # never shown to the model
    source: str
    deterministic: bool = True


@dataclass(frozen=True)
class Rendered:
    """One problem of a family, as the questions use it."""

    family: str
    base: str  # the family without its language prefix ("reduce-axis" for py-reduce-axis)
    params: Params
    task_id: str
    language: Language
    prompt: str
    solution_path: str
    interface: Interface

    @property
    def reference(self) -> Variant:
        return _reference(self.family, _canon(self.params))

    @property
    def headers(self) -> dict[str, str]:
        """The problem's visible include files (``include/<name>.h``: the interface)."""
        return {f.path: f.content for f in _problem(self.family, _canon(self.params)).context_files}

    @property
    def header(self) -> str:
        """The interface header's include name (``#include "<header>"``)."""
        return next(p for p in self.headers if p.endswith(".h")).split("/", 1)[-1]

    def variant(self, name: str) -> Variant:
        """The reference (``"reference"``) or the declared mutant called ``name``."""
        if name == "reference":
            return self.reference
        return next(v for v in self.mutants() if v.name == name)

    def mutants(self) -> list[Variant]:
        return list(_mutants(self.family, _canon(self.params)))


def generator_version() -> str:
    """The families' generator version: a stored truth about a rendered source holds for it."""
    from cudaenv.families import GENERATOR_VERSION

    return GENERATOR_VERSION


def base_name(family: str) -> str:
    return family[len(_PY) :] if family.startswith(_PY) else family


def family_names() -> list[str]:
    from cudaenv.families import family_names as names

    return names()


def language_of(family: str) -> Language:
    from cudaenv.families import get_family

    return get_family(family).problem_type  # type: ignore[return-value]


def space(family: str) -> list[Params] | None:
    """The family's whole parameter space where it lists it (None: drawn, not listed)."""
    from cudaenv.families import get_family

    return get_family(family).space()


def draw_params(family: str, rng: random.Random) -> Params:
    """One parameter set of ``family`` drawn from ``rng`` (validated, canonical)."""
    from cudaenv.families import get_family

    fam = get_family(family)
    return fam.check(fam.draw(rng))


def render(family: str, params: Params) -> Rendered:
    """The problem ``family`` renders for ``params`` (cached: rendering is the costly part)."""
    return _render(family, _canon(params))


def _canon(params: Params) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=4096)
def _problem(family: str, canon: str) -> Any:
    from cudaenv.families import build_problem, get_family

    return build_problem(get_family(family), json.loads(canon))


@functools.lru_cache(maxsize=4096)
def _render(family: str, canon: str) -> Rendered:
    problem = _problem(family, canon)
    if problem.solution is None or len(problem.solution.files) != 1:
        raise SpecError(f"{problem.task_id}: expected one solution file", field="solution")
    language: Language = problem.problem_type
    return Rendered(
        family=family,
        base=base_name(family),
        params=json.loads(canon),
        task_id=problem.task_id,
        language=language,
        prompt=problem.prompt,
        solution_path=problem.solution.files[0].path,
        interface=parse_interface(problem.prompt, language),
    )


@functools.lru_cache(maxsize=4096)
def _reference(family: str, canon: str) -> Variant:
    problem = _problem(family, canon)
    return Variant(
        "reference", "reference", "the reference solution", problem.solution.files[0].content
    )


@functools.lru_cache(maxsize=1024)
def _mutants(family: str, canon: str) -> tuple[Variant, ...]:
    from cudaenv.families import get_family

    problem = _problem(family, canon)
    path = problem.solution.files[0].path
    out = []
    for m in get_family(family).mutants(json.loads(canon)):
        if set(m.files) != {path}:  # a mutant of another file layout: not a one-file question
            continue
        out.append(Variant(m.name, m.kind, m.description, m.files[path], m.deterministic))
    return tuple(out)


def reference_semantics(base: str) -> Any:
    """The family's reference semantics: the NumPy module every generated problem's checker
    runs (``cudaenv/families/refs/<family>.py``), one for both renderings of a family."""
    import importlib

    if base not in _REFS:
        raise SpecError(f"no reference semantics for {base!r}", field="family")
    return importlib.import_module(f"cudaenv.families.refs.{_REFS[base]}")


_REFS = {
    "reduce-axis": "reduce_axis",
    "elementwise": "elementwise",
    "rownorm": "rownorm",
    "permute": "permute",
    "stencil": "stencil",
    "scan": "scan",
    "matmul": "matmul",
    "indexing": "indexing",
}


def swapped_expression(tree: Any) -> Any:
    """The expression of the elementwise families' "operator" mutant (the root swapped)."""
    from cudaenv.families.expr import swap_root

    return swap_root(tree)


def swapped_reduce_op(op: str) -> str:
    """The operator the reduce families' "operator" mutant computes instead of ``op``."""
    from cudaenv.families.reduce_ops import OPS

    return OPS[op].swapped


def wrong_boundary(mode: str) -> str:
    """The boundary mode the stencil families' "boundary" mutant uses instead of ``mode``."""
    from cudaenv.families.stencil_ops import WRONG_BOUNDARY

    return WRONG_BOUNDARY[mode]


_BLOCK = re.compile(r"```(c\+\+|python)\n(.*?)\n```", re.S)
_CPP_DECL = re.compile(r"^\s*void\s+(\w+)\s*\((.*)\)\s*;\s*$", re.S)
_PY_DECL = re.compile(r"^\s*def\s+(\w+)\s*\(([^)]*)\)")
_CPP_PARAM = re.compile(r"^(const\s+)?([\w:]+)\s*(\*?)\s*(?:__restrict__\s+)?(\w+)$")


def parse_interface(prompt: str, language: Language) -> Interface:
    """The interface declared in the prompt's first code block (C++ ``void f(...);`` or
    Python ``def f(...)``); a SpecError when the prompt has none."""
    match = _BLOCK.search(prompt)
    if match is None:
        raise SpecError("the prompt declares no interface", field="prompt")
    text = match.group(2).strip()
    if language == "cuda_cpp":
        decl = _CPP_DECL.match(text)
        if decl is None:
            raise SpecError(f"not a C++ declaration: {text!r}", field="prompt")
        params = []
        for raw in decl.group(2).split(","):
            part = _CPP_PARAM.match(" ".join(raw.split()))
            if part is None:
                raise SpecError(f"unreadable parameter {raw!r} in {text!r}", field="prompt")
            const, ctype, star, name = part.groups()
            params.append(Param(name, ctype, bool(star), bool(const)))
        return Interface(decl.group(1), tuple(params), text)
    decl = _PY_DECL.match(text)
    if decl is None:
        raise SpecError(f"not a Python declaration: {text!r}", field="prompt")
    names = [n.strip() for n in decl.group(2).split(",") if n.strip()]
    return Interface(decl.group(1), tuple(Param(n) for n in names), text)


__all__ = [
    "Interface",
    "Language",
    "Param",
    "Params",
    "Rendered",
    "Variant",
    "base_name",
    "draw_params",
    "family_names",
    "generator_version",
    "language_of",
    "parse_interface",
    "reference_semantics",
    "render",
    "space",
    "swapped_expression",
    "swapped_reduce_op",
    "wrong_boundary",
]
