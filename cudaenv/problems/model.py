"""The Problem model: every field of the ComputeEval problem spec, plus our hidden fields.

Datapack records name the language ``type``; authoring specs (``problem-spec.yaml``) name it
``problem_type``. Both are accepted. Unknown top-level fields are rejected (a typo must not
silently change grading); unknown ``metadata`` keys are kept.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date as Date
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from cudaenv.problems.paths import check_relative_path, check_unique
from cudaenv.problems.policy import STRICT, GradingPolicy, coerce_policy, policy_record
from cudaenv.problems.python_runtimes import needs_real_gpu
from cudaenv.problems.repo_model import RepoSpec

#: "repository": a whole repository at a base commit, solved by a diff (``repository``)
ProblemType = Literal["cuda_cpp", "cuda_python", "repository"]
#: what an episode asks for: write it, make the baseline faster, or fix the broken files
#: ("answer" is the question env's one mode, cudaenv.questions: not a mode of a Problem)
Mode = Literal["solve", "optimize", "repair", "answer"]
MODES: tuple[Mode, ...] = ("solve", "optimize", "repair")
PROBLEM_SCHEMA_VERSION = 2
SOLUTION_SCHEMA_VERSION = 1


class SourceFile(BaseModel):
    """One file: a relative POSIX path and its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    content: str

    @field_validator("path")
    @classmethod
    def _safe_path(cls, v: str) -> str:
        return check_relative_path(v)


def _check_file_list(files: list[SourceFile], field: str) -> list[SourceFile]:
    check_unique((f.path for f in files), field=field)
    return files


class ProcessTiming(BaseModel):
    """Wall clock of the whole benchmark process, measured by the grader."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["process"] = "process"


class KernelsTiming(BaseModel):
    """Sum of GPU kernel durations whose names match include and not exclude (globs)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["kernels"] = "kernels"
    include: list[str] | None = None
    exclude: list[str] | None = None


class RegionTiming(BaseModel):
    """Time inside NVTX ranges whose names match; kernel time or wall clock of the range."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["region"] = "region"
    include: list[str] | None = None
    exclude: list[str] | None = None
    time_type: Literal["kernel", "wall_clock"] = "kernel"


class GpuTiming(BaseModel):
    """All kernel time plus all memory copy time."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["gpu"] = "gpu"


class CustomTiming(BaseModel):
    """Self-reported ``COMPUTE_EVAL_TIME_MS: <ms>``; honoured only when the problem opts in."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["custom"] = "custom"


TimingMode = Annotated[
    ProcessTiming | KernelsTiming | RegionTiming | GpuTiming | CustomTiming,
    Field(discriminator="type"),
]


class SourceReferences(BaseModel):
    """APIs a solution must use: every name in ``all`` and at least one of ``any``."""

    model_config = ConfigDict(extra="forbid")
    all: list[str] | None = None
    any: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"all": [data], "any": None}
        if isinstance(data, list):
            return {"all": data, "any": None}
        return data

    @model_validator(mode="after")
    def _not_empty(self) -> SourceReferences:
        if self.all is None and self.any is None:
            raise ValueError("source_references needs at least one of 'all' or 'any'")
        return self


#: metadata.precision: the floating-point precision a problem fixes, or any
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "any")


class Metadata(BaseModel):
    """Free-form problem metadata; the known keys are typed, the rest are kept as they are."""

    model_config = ConfigDict(extra="allow")
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    releases: list[str] = Field(default_factory=list)
    do_not_release: bool = False

    @model_validator(mode="after")
    def _name_lists_are_lists(self) -> Metadata:
        # kept as extra keys (not typed fields) so records without them serialise unchanged;
        # allowed_symbols: undefined host symbols a C/C++ solution may reference beyond the
        # fixed allow-list (cudaenv.grading.symbol_allowlist)
        for key in ("forbidden_references", "allowed_symbols"):
            value = getattr(self, key, None)
            if value is not None and not (
                isinstance(value, list) and all(isinstance(v, str) and v for v in value)
            ):
                raise ValueError(f"{key} must be a list of non-empty strings")
        # precision: what solutions must compute in (cudaenv.grading.device_code); a typo
        # must not turn the rule off
        precision = getattr(self, "precision", None)
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
        return self


class Solution(BaseModel):
    """A solution record as in a ComputeEval solutions datapack (``type: file``)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = SOLUTION_SCHEMA_VERSION
    type: Literal["file", "patch"] = "file"
    task_id: str
    files: list[SourceFile] = Field(default_factory=list)
    patch: str | None = None

    @field_validator("files")
    @classmethod
    def _unique(cls, v: list[SourceFile]) -> list[SourceFile]:
        return _check_file_list(v, "files")

    @model_validator(mode="after")
    def _patch_has_text(self) -> Solution:
        if self.type == "patch" and not self.patch:
            raise ValueError("a 'patch' solution needs a non-empty 'patch' field")
        return self


class CheckerSpec(BaseModel):
    """The trusted checker of a split harness (see ``docs/AUTHORING.md``).

    It runs in a sandbox of its own, where no solution file is ever written: ``command`` plus
    ``gen``/``verify`` and their arguments draws each run's inputs and decides on the outputs
    the solution's runner wrote. ``build_command`` (optional) builds checker helpers once per
    grading in that sandbox; ``needs_gpu`` says the checker itself needs the GPU (rare).
    """

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1)
    build_command: str | None = None
    needs_gpu: bool = False


class Problem(BaseModel):
    """One CUDA programming problem.

    ``solution`` (the reference) is hidden from agents and never written to ``problems.jsonl``;
    ``baseline_solution`` is the known-good slower solution used as the speedup denominator.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    task_id: str = Field(min_length=1)
    problem_type: ProblemType = Field(alias="type")
    schema_version: int = PROBLEM_SCHEMA_VERSION
    date: Date | None = None
    group: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    metadata: Metadata = Field(default_factory=Metadata)
    context_files: list[SourceFile] = Field(default_factory=list)
    test_files: list[SourceFile] = Field(default_factory=list)
    source_references: SourceReferences | None = None
    build_command: str | None = None
    test_command: str = Field(min_length=1)
    benchmark_command: str | None = None
    timing_mode: TimingMode = Field(default_factory=ProcessTiming)
    min_cuda_toolkit: str | None = None
    compute_capability: str | None = "8.0"
    requires_datacenter_gpu: bool = False
    timeout_seconds: float | None = Field(default=None, gt=0)
    base_image: str | None = None
    arch_list: list[str] | None = None
    baseline_solution: Solution | None = None
    solution: Solution | None = Field(default=None, exclude=True)
    allow_context_override: bool = False
    # Harbor / repository tasks: the test command writes a reward file (workspace-relative)
    # and the test passes only if it exits 0 and the file says reward >= 1
    reward_file: str | None = None
    # repository tasks (problem_type "repository"): the repository, test patch and checks
    repository: RepoSpec | None = None
    # split harnesses: the trusted checker and its files (never in the agent's sandbox nor the
    # solution's grading workspace); ``checker`` precedes ``check_files`` so that the latter's
    # validator sees it
    checker: CheckerSpec | None = None
    check_files: list[SourceFile] = Field(default_factory=list, validate_default=True)
    # which checks grade this problem's solutions (cudaenv.problems.policy): a preset's name
    # or a policy spelled out; records omit the default (strict)
    grading_policy: GradingPolicy = STRICT

    _content_hash: str | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _accept_both_type_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and "problem_type" in data and "type" not in data:
            data = dict(data)
            data["type"] = data.pop("problem_type")
        if isinstance(data, dict) and isinstance(data.get("timing_mode"), str):
            data = dict(data)
            data["timing_mode"] = {"type": data["timing_mode"]}
        return data

    @field_validator("grading_policy", mode="before")
    @classmethod
    def _policy_by_name(cls, v: Any) -> Any:
        return coerce_policy(v)

    @field_serializer("grading_policy")
    def _policy_as_record(self, v: GradingPolicy) -> str | dict[str, Any]:
        return policy_record(v)

    @field_validator("reward_file")
    @classmethod
    def _safe_reward_file(cls, v: str | None) -> str | None:
        return None if v is None else check_relative_path(v, field="reward_file")

    @field_validator("context_files")
    @classmethod
    def _ctx_unique(cls, v: list[SourceFile]) -> list[SourceFile]:
        return _check_file_list(v, "context_files")

    @field_validator("test_files")
    @classmethod
    def _test_unique(cls, v: list[SourceFile]) -> list[SourceFile]:
        return _check_file_list(v, "test_files")

    @field_validator("check_files")
    @classmethod
    def _check_files(cls, v: list[SourceFile], info: ValidationInfo) -> list[SourceFile]:
        _check_file_list(v, "check_files")
        if "checker" not in info.data:  # the checker itself failed validation
            return v
        if info.data["checker"] is not None and not v:
            raise ValueError("a problem with a checker needs its check_files")
        if info.data["checker"] is None and v:
            raise ValueError("check_files need a checker (how to run them)")
        return v

    @model_validator(mode="after")
    def _no_collisions(self) -> Problem:
        tests = {f.path for f in self.test_files}
        overlap = tests & {f.path for f in self.context_files}
        if overlap:
            raise ValueError(f"context_files and test_files share {sorted(overlap)}")
        checks = {f.path for f in self.check_files}
        if clash := checks & (tests | {f.path for f in self.context_files}):
            raise ValueError(f"check_files share {sorted(clash)} with the workspace's files")
        for name, sol in (
            ("solution", self.solution),
            ("baseline_solution", self.baseline_solution),
        ):
            if sol is None:
                continue
            clash = tests & {f.path for f in sol.files}
            if clash:
                raise ValueError(f"{name} file(s) {sorted(clash)} collide with test_files")
        if (self.problem_type == "repository") != (self.repository is not None):
            raise ValueError("a repository problem needs 'repository', and only it has one")
        return self

    @property
    def needs_gpu(self) -> bool:
        """cuda_cpp tests need a GPU unless ``metadata.requires_gpu`` is false (CPU-only
        fixtures); cuda_python tests fall back to numba-cuda's simulator, unless they import a
        runtime that has none (cuTile, torch: :mod:`cudaenv.problems.python_runtimes`)."""
        if self.problem_type == "cuda_python":
            files = (*self.test_files, *self.context_files)
            return needs_real_gpu((f.path, f.content) for f in files)
        return bool(getattr(self.metadata, "requires_gpu", True))

    @property
    def forbidden_references(self) -> list[str]:
        """What a solution may not use (``metadata.forbidden_references``): API names,
        ``X::`` namespaces, ``X*`` identifier prefixes, ``<X`` include prefixes, or
        ``libraries`` for every GPU library (kernel problems' "write the kernels yourself")."""
        return list(getattr(self.metadata, "forbidden_references", None) or [])

    @property
    def cpu_only(self) -> bool:
        """A cuda_cpp problem whose tests need no GPU (``metadata.requires_gpu: false``): its
        benchmark, in a timing mode the grader's clock takes, runs on the CPU too."""
        return self.problem_type != "cuda_python" and not self.needs_gpu

    @property
    def has_benchmark(self) -> bool:
        return bool(self.benchmark_command)

    @property
    def split(self) -> bool:
        """A split harness: a trusted checker decides on the outputs the runner writes."""
        return self.checker is not None

    @property
    def policy_in_force(self) -> GradingPolicy:
        """The grading policy the grader applies: a split harness's runner decides nothing,
        so the checks that only guarded the completion token warn there."""
        return self.grading_policy.for_split_harness() if self.split else self.grading_policy

    @property
    def protected_paths(self) -> frozenset[str]:
        """Paths a solution may never replace in the grading workspace."""
        paths = {f.path for f in (*self.test_files, *self.check_files)}
        if not self.allow_context_override:
            paths |= {f.path for f in self.context_files}
        return frozenset(paths)

    def to_record(self) -> dict[str, Any]:
        """The ComputeEval datapack record (``type``, normalised source_references)."""
        optional = {"allow_context_override", "reward_file", "repository", "checker", "check_files"}
        data = self.model_dump(mode="json", by_alias=True, exclude={*optional, "grading_policy"})
        # our extensions appear only where used, so other problems' records stay as they were
        for name in sorted(optional):
            if getattr(self, name):
                data[name] = self.model_dump(mode="json", include={name})[name]
        if self.grading_policy != STRICT:  # the default is left out: strict records unchanged
            data["grading_policy"] = policy_record(self.grading_policy)
        return data

    def content_hash(self) -> str:
        """SHA-256 over everything that decides grading, the reference included (cache key)."""
        if self._content_hash is None:
            payload = self.to_record()
            payload["solution"] = self.solution.model_dump(mode="json") if self.solution else None
            blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
            self._content_hash = hashlib.sha256(blob).hexdigest()
        return self._content_hash
