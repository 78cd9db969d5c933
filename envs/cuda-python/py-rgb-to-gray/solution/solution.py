import numpy as np
from numba import cuda, int32

BLOCK = (32, 8)  # x -> column (contiguous in memory), y -> row


@cuda.jit
def _rgb_to_gray_kernel(rgb, gray):
    col, row = cuda.grid(2)
    if row < gray.shape[0] and col < gray.shape[1]:
        r = int32(rgb[row, col, 0])
        g = int32(rgb[row, col, 1])
        b = int32(rgb[row, col, 2])
        gray[row, col] = (77 * r + 150 * g + 29 * b + 128) >> 8


def rgb_to_gray(rgb, gray):
    """gray = (77 R + 150 G + 29 B + 128) >> 8 for an (H, W, 3) uint8 image (host or device)."""
    height, width = gray.shape
    if height == 0 or width == 0:
        return
    grid = ((width + BLOCK[0] - 1) // BLOCK[0], (height + BLOCK[1] - 1) // BLOCK[1])
    _rgb_to_gray_kernel[grid, BLOCK](rgb, gray)
