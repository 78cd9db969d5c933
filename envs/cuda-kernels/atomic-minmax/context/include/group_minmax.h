#pragma once

// Per-group minimum and maximum of integer values ("group by key, then min/max").
//
// keys, vals: DEVICE arrays of n ints, n >= 0; every key is in [0, num_groups).
// gmin, gmax: DEVICE arrays of num_groups ints, 1 <= num_groups <= 2^22. Their contents on
// entry are garbage. On return (after the caller synchronizes), for every group g:
//   gmin[g] = min { vals[i] : keys[i] == g }, or INT_MAX if no element has key g
//   gmax[g] = max { vals[i] : keys[i] == g }, or INT_MIN if no element has key g
// Work is issued on the default stream; the caller synchronizes.
void group_minmax(const int* keys, const int* vals, int n, int num_groups, int* gmin, int* gmax);
