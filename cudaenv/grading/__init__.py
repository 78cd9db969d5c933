"""Grading: stages, timing, caches, the Verdict and reward functions."""

from cudaenv.grading.grader import grade
from cudaenv.grading.request import Grader, GradeRequest, grade_here
from cudaenv.grading.verdict import StageResult, Verdict

__all__ = ["GradeRequest", "Grader", "StageResult", "Verdict", "grade", "grade_here"]
