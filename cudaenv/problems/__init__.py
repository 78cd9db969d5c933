"""Problems: the model, and loaders for directories, datapacks, the hub and the bundled suite."""

from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem, Solution, SourceFile, SourceReferences
from cudaenv.problems.suite import Suite

__all__ = ["Problem", "Solution", "SourceFile", "SourceReferences", "Suite", "load_suite"]
