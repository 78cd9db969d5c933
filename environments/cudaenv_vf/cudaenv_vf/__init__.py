"""The verifiers plugin module for taskset id ``cudaenv-vf``: verifiers imports the id as a
top-level module and takes the Taskset, Harness and Env its ``__all__`` exports. The code
lives in :mod:`cudaenv.integrations.verifiers`."""

from cudaenv.integrations.verifiers import (
    CudaHarness,
    CudaHarnessConfig,
    CudaTaskset,
    CudaTasksetConfig,
    CudaVfEnv,
    CudaVfEnvConfig,
    load_environment,
)

__all__ = [
    "CudaHarness",
    "CudaHarnessConfig",
    "CudaTaskset",
    "CudaTasksetConfig",
    "CudaVfEnv",
    "CudaVfEnvConfig",
    "load_environment",
]
