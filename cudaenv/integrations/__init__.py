"""Adapters for RL trainers, each an optional extra that imports its framework lazily.

- :mod:`cudaenv.integrations.trl`: TRL's ``GRPOTrainer(environment_factory=...)``
  (``pip install 'cudaenv[trl]'``).

Import the submodule you need; this package imports none of them.
"""

__all__: list[str] = []
