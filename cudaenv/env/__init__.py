"""The Gymnasium environment, its tools and registration (``CudaEnv`` loads on first use)."""

from __future__ import annotations

from typing import Any

from cudaenv.env.registration import env_id, make, register_suite

__all__ = ["CudaEnv", "env_id", "make", "register_suite"]


def __getattr__(name: str) -> Any:
    if name == "CudaEnv":
        from cudaenv.env.core import CudaEnv

        return CudaEnv
    raise AttributeError(name)
