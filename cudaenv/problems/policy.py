"""Grading policies: which of the grader's checks a problem's solutions face, as data.

Why: one rule book cannot fit every source. Our own problems (the bundled suite, the generated
families) are graded by the strictest rules we have, because their harnesses and their
known-good solutions were written with those rules in mind. Problems imported from ComputeEval
are graded as ComputeEval grades them (its build and test commands, its reading of
``source_references``), plus only those checks of ours that fail none of ComputeEval's own
known-good solutions: a check that fails correct code teaches a policy to avoid correct code.
Repository (SWE-style) tasks are judged by their tests alone.

A policy is a field of the problem (``Problem.grading_policy``), never a branch on a group or
source name. Records and ``problem-spec.yaml`` name a preset (``grading_policy: computeeval``)
or spell one out (``{name, checks, source_references, python_modules, simulator}``). How a
loaded problem gets its policy: the record's own field; else its datapack's
``metadata.json`` ``grading_policy`` (our writer records ``strict`` there); else, for a datapack
that says nothing (ComputeEval's own releases), ``computeeval``; problem directories default to
``strict``; :meth:`cudaenv.problems.suite.Suite.with_grading_policy` (``cudaenv grade
--grading-policy``) overrides all of it.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: One check of the grader's, named as the policies list them (the exploit class it stops):
Check = Literal[
    # C/C++ source text, before the build (static_text_cpp, static_rules_cpp)
    "cpp_identifiers",  # forbidden identifiers: environment, processes, files, signals, jumps
    "cpp_text",  # forbidden text: CUDAENV_/COMPUTE_EVAL_ strings, /proc/, raw syscalls in asm
    "cpp_exit",  # exit-like calls whose status can be success (ends the test "passed")
    "cpp_preprocessor",  # token pasting, computed/hidden/outside includes, keyword macros
    "cpp_attributes",  # constructor/destructor/section attributes (code outside the harness)
    # Python source (static_python)
    "python_escapes",  # names, attributes, dunders, stores, evaluated strings and annotations
    "python_imports",  # imports only from the allowed modules (+ policy's, + problem's own)
    # what the compiler sees (static_cpp, symbols, device_code)
    "preprocessed",  # the C/C++ rules above on the preprocessed unit; asm labels, extname
    "symbols_denied",  # undefined references to forbidden functions, however spelled
    "symbols_allowlist",  # every undefined reference on the allow-list
    "symbols_shadowing",  # C-linkage definitions that replace libc / CUDA-runtime functions
    "init_sections",  # .init_array entries the toolchain did not generate
    "pre_main",  # initialisers that run the solution's own code before main
    "precision",  # device code narrower than the precision the problem fixes
    "compiler_outputs",  # solution files shaped like the compiler's kept outputs
]
ALL_CHECKS: frozenset[str] = frozenset(get_args(Check))
#: checks that only kept a solution from deciding a completion-token harness's verdict from
#: inside its process: ending the test "passed" early (exit spellings) or running its code
#: before main or after the harness (attributes, .init_array, initialisers). In a split
#: harness the runner decides nothing (an early exit leaves outputs missing; code before main
#: cannot read the inputs, the file and process rules still apply), so there they only warn.
#: What stays failing there enforces the problem's terms or guards the timing: identifiers and
#: text (files, processes, raw syscalls), the symbol allow-list and shadowing (a C-linkage
#: definition can interpose the profiler's or the runtime's functions), precision, includes.
TOKEN_GUARDS: frozenset[str] = frozenset(
    {"cpp_exit", "cpp_attributes", "init_sections", "pre_main"}
)
#: checks that need the toolchain stage (a compile of the solution's own sources)
TOOLCHAIN_CHECKS: frozenset[str] = frozenset(
    {"preprocessed", "symbols_denied", "symbols_allowlist", "symbols_shadowing",
     "init_sections", "pre_main", "precision", "compiler_outputs"}
)  # fmt: skip


class GradingPolicy(BaseModel):
    """Which checks a problem's solutions face and how its source references are read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="a preset's name, or the author's")
    checks: frozenset[Check] = Field(description="the grader's checks that apply")
    source_references: Literal["tokens", "subtree"] = Field(
        default="tokens",
        description="tokens: C/C++ code tokens (qualified names as written, or under a using "
        "directive) and Python names, in source files; subtree: ComputeEval's reading, the "
        "exact text of a whole syntax-tree node in any solution file a grammar parses",
    )
    python_modules: frozenset[str] = Field(
        default=frozenset(),
        description="top-level modules a Python solution may import beyond the fixed list",
    )
    warn: frozenset[Check] = Field(
        default=frozenset(),
        description="checks that run on the source text and only warn (their findings are "
        "in the static stage's output, never a failure); the toolchain pass skips them",
    )
    simulator: bool = Field(
        default=True,
        description="a cuda_python problem's tests may run on numba-cuda's simulator without "
        "a GPU; False: they need a GPU (without one they are not run)",
    )

    @field_validator("python_modules")
    @classmethod
    def _module_names(cls, v: frozenset[str]) -> frozenset[str]:
        bad = sorted(m for m in v if not m.isidentifier())
        if bad:
            raise ValueError(f"python_modules must be top-level module names; got {bad}")
        return v

    @property
    def toolchain(self) -> bool:
        """Whether the toolchain stage runs (some check needs what the compiler saw)."""
        return bool(self.checks & TOOLCHAIN_CHECKS)

    def has(self, check: str) -> bool:
        return check in self.checks

    def for_split_harness(self) -> GradingPolicy:
        """This policy for a split harness: the :data:`TOKEN_GUARDS` it has only warn."""
        moved = self.checks & TOKEN_GUARDS
        if not moved:
            return self
        return self.model_copy(update={"checks": self.checks - moved, "warn": self.warn | moved})


STRICT = GradingPolicy(name="strict", checks=ALL_CHECKS)
#: ComputeEval's own grading, plus the checks that fail none of its known-good baselines
#: (release 2026-1: the static checks on all 566, the toolchain checks on the 453 outside
#: cuDNN, whose frontend did not compile here in time; ``bench/bench_policy_checks.py`` on
#: ``bench/computeeval_corpus.py``'s packs measures it). Left out: the Python escape rules (written for numba harnesses that
#: run the solution in a child process; cuTile solutions name ``input``, call ``ct.load`` and
#: set attributes of autograd's ``ctx``). ``python_modules``: what its cuTile solutions import
#: beyond our fixed list (``cuda`` is cuda.tile's package; ``sys`` for ``sys.path``)
COMPUTEEVAL = GradingPolicy(
    name="computeeval",
    checks=ALL_CHECKS - {"python_escapes"},
    source_references="subtree",
    python_modules=frozenset({"cuda", "torch", "sys"}),
    simulator=False,
)
#: repository tasks: the task's own tests decide; no exploit rules on a repository's code
REPOSITORY = GradingPolicy(name="repository", checks=frozenset(), simulator=False)
PRESETS: dict[str, GradingPolicy] = {p.name: p for p in (STRICT, COMPUTEEVAL, REPOSITORY)}
#: what a datapack that names no policy is taken for: ComputeEval's own format and releases
DATAPACK_DEFAULT = "computeeval"


def policy_named(name: str) -> GradingPolicy:
    """The preset called ``name``; ValueError naming the presets when there is none."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown grading policy {name!r}; presets: {', '.join(sorted(PRESETS))}"
        ) from None


def coerce_policy(value: Any) -> Any:
    """A preset name becomes its policy; anything else is left for validation."""
    return policy_named(value) if isinstance(value, str) else value


def policy_record(policy: GradingPolicy) -> str | dict[str, Any]:
    """A preset as its name, any other policy spelled out (sorted, so records hash stably)."""
    if PRESETS.get(policy.name) == policy:
        return policy.name
    data = policy.model_dump(mode="json")
    data["checks"] = sorted(data["checks"])
    data["python_modules"] = sorted(data["python_modules"])
    if data["warn"]:
        data["warn"] = sorted(data["warn"])
    else:  # records without warnings read as they did before the field existed
        del data["warn"]
    return data
