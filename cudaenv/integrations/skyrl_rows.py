"""What both SkyRL envs (problems and questions) read from SkyRL's inputs: ``env_config`` as a
plain dict and a dataset row's fields (top level, then ``extra_info``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cudaenv.errors import SpecError


def plain(config: Any) -> dict[str, Any]:
    """``env_config`` (an omegaconf DictConfig, a dict or None) as a plain dict."""
    if config is None:
        return {}
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(config):
            config = OmegaConf.to_container(config, resolve=True)
    except ImportError:  # pragma: no cover - skyrl-gym depends on omegaconf
        pass
    if not isinstance(config, Mapping):
        raise SpecError(
            f"env_config must be a mapping, got {type(config).__name__}", field="env_config"
        )
    return dict(config)


def row_value(extras: Mapping[str, Any], key: str) -> Any:
    """A row field: top level first, then ``extra_info`` (SkyRL's usual nesting)."""
    if extras.get(key) is not None:
        return extras[key]
    info = extras.get("extra_info")
    return info.get(key) if isinstance(info, Mapping) else None


__all__ = ["plain", "row_value"]
