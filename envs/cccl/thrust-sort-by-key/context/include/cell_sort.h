#pragma once

// d_cell and d_id are device arrays of n ints (0 <= d_cell[i] < 2^24, d_id arbitrary).
// Reorders both arrays in place so that d_cell is ascending; d_id[i] moves together with
// d_cell[i], and pairs with equal cell keep their original relative order (stable sort).
// All results must be in place when the function returns.
void sort_by_cell(int* d_cell, int* d_id, int n);
