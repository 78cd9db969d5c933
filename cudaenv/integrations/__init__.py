"""Adapters for RL trainers (TRL, SkyRL, verifiers); each imports its framework lazily and is an optional extra."""
