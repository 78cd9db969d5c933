"""Helpers the problem provides."""


def blocks_for(n: int, tile: int) -> int:
    return (n + tile - 1) // tile
