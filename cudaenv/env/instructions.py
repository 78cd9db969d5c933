"""The instruction text an agent sees at reset (deterministic: no paths, no timings)."""

from __future__ import annotations

from cudaenv.env.tools import TOOL_DESCRIPTIONS
from cudaenv.grading.static_checks import describe_forbidden
from cudaenv.grading.verdict import Verdict
from cudaenv.problems.model import Mode, Problem

SYSTEM_PROMPT = (
    "You are an expert CUDA engineer working in a sandboxed workspace. Use the tools to "
    "inspect files, write code, build and run it. Call `submit` when your solution is ready; "
    "it is graded by hidden tests in a fresh copy of the workspace."
)


GRADING_RULES = (
    "Grading uses those files and the files they #include or import; other files you leave "
    "are ignored, and the visible files and tests are restored to their originals. The "
    "solution itself may not read the environment or files, start processes, use the "
    "network, or exit the program early (flagged as tampering); Python solutions may import "
    "only numerical modules (numpy, numba, math, ...)."
)


def solution_paths(problem: Problem) -> list[str]:
    sol = problem.solution or problem.baseline_solution
    return [f.path for f in sol.files] if sol else []


def task_text(
    problem: Problem,
    mode: Mode,
    visible_files: list[str],
    *,
    repair_verdict: Verdict | None = None,
) -> str:
    """The instruction without its list of env tools: what a driver that brings its own
    tools (a CLI agent, a gateway) shows its model."""
    if problem.repository is not None:  # a checkout, not a file listing
        from cudaenv.env.repo_workspace import task_text as repo_text

        return repo_text(problem, mode)
    parts = [
        f"# Task {problem.task_id} ({problem.group}, mode: {mode})",
        "",
        problem.prompt.strip(),
        "",
    ]
    # reward-file tasks (Harbor, repository tasks) are solved in place: their reference is a
    # script for the oracle, not a file the agent should write
    paths = solution_paths(problem) if problem.reward_file is None else []
    if paths:
        parts.append(f"Write your solution in: {', '.join(paths)}")
        parts.append(GRADING_RULES)
        if (rule := describe_forbidden(problem.forbidden_references)) is not None:
            parts.append(rule)
    parts.append(f"Build command: {problem.build_command or '(none)'}")
    if mode in ("optimize", "repair"):
        parts.append(f"Test command (hidden tests): {problem.test_command}")
    if mode == "optimize":
        parts += [
            f"Benchmark command: {problem.benchmark_command}",
            f"Timing: {problem.timing_mode.type}. The workspace starts from a correct but slow "
            "baseline; make it faster while keeping it correct. Reward grows with the speedup.",
        ]
    if mode == "repair" and repair_verdict is not None:
        parts += [
            "",
            "The workspace holds a solution that failed grading:",
            f"reason: {repair_verdict.reason}",
        ]
        for name, stage in repair_verdict.stages.items():
            if stage.status != "ok" and stage.output_tail:
                parts += [f"--- {name} output (tail) ---", stage.output_tail[-2000:]]
    listing = [f"  {p}" for p in visible_files] or ["  (none)"]
    parts += ["", "Files in the workspace:", *listing]
    return "\n".join(parts)


def with_tools(task: str) -> str:
    """The task text, then the env's tools: the instruction ``CudaEnv.reset`` returns."""
    tools = [f"  {name}: {desc}" for name, desc in TOOL_DESCRIPTIONS.items()]
    return "\n".join([task, "", "Tools:", *tools])


def instruction(
    problem: Problem,
    mode: Mode,
    visible_files: list[str],
    *,
    repair_verdict: Verdict | None = None,
) -> str:
    """:func:`task_text` followed by the env's tools."""
    return with_tools(task_text(problem, mode, visible_files, repair_verdict=repair_verdict))
