#pragma once

// d_values: device array of n ints in arbitrary order (any int value, duplicates allowed).
// Returns the number of distinct values among them (0 for n == 0). d_values must not be
// modified.
int count_distinct(const int* d_values, int n);
