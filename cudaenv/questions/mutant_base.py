"""Helpers the mutant models share: the output as the call left it, a rendered problem with
some parameters replaced (the mutant's operator or boundary), values in the output's type."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from cudaenv.questions.adapter import Rendered
from cudaenv.questions.cases import Case, dtype_of


def initial(case: Case) -> np.ndarray:
    return case.arrays[case.output].copy()


def with_params(r: Rendered, case: Case, **params: object) -> Rendered:
    """``r`` with some parameters replaced (the mutant's operator, boundary, kind)."""
    return replace(r, params={**r.params, **params})


def typed(r: Rendered, case: Case, values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(dtype_of(r, case.output))


__all__ = ["initial", "typed", "with_params"]
