"""Shared pieces of the generated cuda_python (numba-cuda) problems: the prompt's closing
paragraph (the runner adapter is :mod:`cudaenv.families.runners`' and the expected values are
the checker's, :mod:`cudaenv.families.refs`)."""

from __future__ import annotations


def closing(function: str) -> str:
    return (
        f"Put `{function}` in `solution.py` (in the workspace root), written with numba-cuda "
        "(`from numba import cuda`): the work must run on the GPU in `@cuda.jit` kernels. No "
        "NumPy computation on the data on the host, and no CuPy. Either all array arguments "
        "are host NumPy arrays or all are CUDA device arrays (e.g. from `numba.cuda.to_device`"
        "); for host arrays the result must be in `out` when the function returns, for device "
        "arrays you may return before the kernels finish, with all work on the default stream."
    )


__all__ = ["closing"]
