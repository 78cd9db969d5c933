import numpy as np
from numba import cuda, int32

BLOCK = (16, 16)


@cuda.jit
def _rgb_to_gray_rows_on_x(rgb, gray):
    # Deliberately naive mapping: threadIdx.x walks down the rows, so neighbouring threads
    # touch pixels a whole image row apart (uncoalesced loads and stores).
    row, col = cuda.grid(2)
    if row < gray.shape[0] and col < gray.shape[1]:
        r = int32(rgb[row, col, 0])
        g = int32(rgb[row, col, 1])
        b = int32(rgb[row, col, 2])
        gray[row, col] = (77 * r + 150 * g + 29 * b + 128) >> 8


def rgb_to_gray(rgb, gray):
    height, width = gray.shape
    if height == 0 or width == 0:
        return
    grid = ((height + BLOCK[0] - 1) // BLOCK[0], (width + BLOCK[1] - 1) // BLOCK[1])
    _rgb_to_gray_rows_on_x[grid, BLOCK](rgb, gray)
