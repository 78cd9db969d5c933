"""The text of observations: the declared charset, mapping into it, clipping to its length."""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING

from cudaenv.sandbox.base import cap_output

if TYPE_CHECKING:
    from gymnasium import spaces

MAX_OBS_CHARS = 200_000
_EXTRA = (
    "\n\t\r\ufffd"
    + "".join(chr(c) for c in range(0xA0, 0x250))
    + (
        "\u2500\u2502\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u253c\u2550\u2551\u2554\u2557\u255a\u255d\u2501\u2503\u250f\u2513\u2517\u251b\u2192\u2190\u2191\u2193\u2022\u2026\u2013\u2014\u2018\u2019\u201c\u201d\u2713\u2717\u00d7\u00f7\u2264\u2265\u2260\u00b1\u00b5\u00b0"  # box drawing, arrows, dashes, quotes, marks
    )
)
# a sorted string, not a set: gymnasium indexes characters by their order, and set order
# differs between processes (AsyncVectorEnv's shared memory would decode garbage)
CHARSET = "".join(sorted({chr(c) for c in range(32, 127)} | set(_EXTRA)))
_CHARSET_SET = frozenset(CHARSET)


def to_charset(text: str) -> str:
    """Map characters outside the declared charset to U+FFFD, so obs stay in the space."""
    if all(ch in _CHARSET_SET for ch in text):
        return text
    return "".join(ch if ch in _CHARSET_SET else "\ufffd" for ch in text)


def clip(text: str, limit: int = MAX_OBS_CHARS) -> str:
    """Keep the head and tail of an over-long observation, saying how much was cut.

    The rule is the sandbox's (:func:`cudaenv.sandbox.base.cap_output`), so a command's
    output and an observation are cut alike: ``limit`` counts UTF-8 bytes, and a cut text
    holds at most ``limit`` of them plus the one-line marker (so at most that many characters).
    """
    if len(text) <= limit // 4:  # no text this short can exceed ``limit`` bytes
        return text
    data = text.encode("utf-8", errors="replace")
    return text if len(data) <= limit else cap_output(data, limit)[0]


@functools.cache
def _text_prototype(max_length: int, min_length: int, cls: type | None) -> spaces.Text:
    from gymnasium import spaces

    kind = cls or spaces.Text
    return kind(max_length=max_length, min_length=min_length, charset=CHARSET)


def text_space(max_length: int, min_length: int, cls: type | None = None) -> spaces.Text:
    """A Text space over CHARSET (of class ``cls``, a ``spaces.Text`` subclass): a copy of
    one prototype (building its character tables takes ~1 ms, paid by every env made on an
    event loop) with its own, unseeded RNG."""
    space = copy.copy(_text_prototype(max_length, min_length, cls))
    space._np_random = None
    return space
