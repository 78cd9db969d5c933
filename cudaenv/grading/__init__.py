"""Grading: stages, timing, caches, the Verdict and reward functions."""

from cudaenv.grading.grader import grade
from cudaenv.grading.verdict import StageResult, Verdict

__all__ = ["StageResult", "Verdict", "grade"]
