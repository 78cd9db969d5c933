"""Models of how one warp's memory request is served: shared-memory bank conflicts and the
32-byte sectors of a global load or store.

Shared memory (compute capability 5.0 and later, the 4-byte mode every current GPU uses): 32
banks, successive 4-byte words in successive banks. Lanes reading the same word share it (a
broadcast); lanes reading different words of one bank are serialised. The request takes as
many passes as the most distinct words any one bank holds: "n-way". Global memory: a warp's
request touches every 32-byte sector that any byte any active lane reads or writes lies in;
the count of distinct sectors is what the memory system moves.

>>> bank_ways([4 * 1 * t for t in range(32)])   # stride 1
1
>>> bank_ways([4 * 32 * t for t in range(32)])  # stride 32: one bank
32
>>> sectors([4 * t for t in range(32)], 4)      # 128 aligned bytes
4
"""

from __future__ import annotations

from collections.abc import Iterable

BANKS = 32
WORD_BYTES = 4
SECTOR_BYTES = 32
WARP = 32


def bank_ways(addresses: Iterable[int | None], access_bytes: int = 4) -> int:
    """The n-way conflict of one warp's shared-memory request of ``access_bytes`` (4) per
    lane at the given byte addresses (None: an inactive lane); 1 means no conflict."""
    if access_bytes != WORD_BYTES:
        raise ValueError("the bank model covers 4-byte accesses")
    words_by_bank: dict[int, set[int]] = {}
    for a in addresses:
        if a is None:
            continue
        if a % WORD_BYTES:
            raise ValueError(f"address {a} is not 4-byte aligned")
        word = a // WORD_BYTES
        words_by_bank.setdefault(word % BANKS, set()).add(word)
    return max((len(w) for w in words_by_bank.values()), default=1)


def sectors(addresses: Iterable[int | None], access_bytes: int) -> int:
    """The distinct 32-byte sectors one warp's global request touches (``access_bytes`` per
    lane from each byte address; None: an inactive lane)."""
    touched: set[int] = set()
    for a in addresses:
        if a is None:
            continue
        if a % access_bytes:
            raise ValueError(f"address {a} is not aligned to {access_bytes} bytes")
        touched.update(range(a // SECTOR_BYTES, (a + access_bytes - 1) // SECTOR_BYTES + 1))
    return len(touched)


def lanes(block_x: int, warp: int = 0) -> list[tuple[int, int]]:
    """(threadIdx.x, threadIdx.y) of the 32 lanes of warp ``warp`` of a block ``block_x`` wide
    (threads are numbered x fastest, then y: a warp may span several rows of the block)."""
    first = warp * WARP
    return [((first + i) % block_x, (first + i) // block_x) for i in range(WARP)]


__all__ = ["BANKS", "SECTOR_BYTES", "WARP", "bank_ways", "lanes", "sectors"]
