"""Reading evaluation runs: statistics with intervals, the failure matrix, the Markdown report
and the paired comparison of two runs (``cudaenv report``, ``cudaenv compare``)."""

from __future__ import annotations

from cudaenv.evaluation.failures import COLUMNS, STAGES, failure_matrix, outcome
from cudaenv.evaluation.stats import Estimate, paired_difference, pass_at_k_interval

__all__ = [
    "COLUMNS",
    "STAGES",
    "Estimate",
    "failure_matrix",
    "outcome",
    "paired_difference",
    "pass_at_k_interval",
]
