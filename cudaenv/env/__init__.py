"""The Gymnasium environment, its tools and registration (``CudaEnv`` loads on first use)."""

from __future__ import annotations

from typing import Any

from cudaenv.env.registration import SUITE_ID, env_id, make, make_suite, register_suite

__all__ = ["SUITE_ID", "CudaEnv", "SuiteEnv", "env_id", "make", "make_suite", "register_suite"]


def __getattr__(name: str) -> Any:
    if name == "CudaEnv":
        from cudaenv.env.core import CudaEnv

        return CudaEnv
    if name == "SuiteEnv":
        from cudaenv.env.suite import SuiteEnv

        return SuiteEnv
    raise AttributeError(name)
