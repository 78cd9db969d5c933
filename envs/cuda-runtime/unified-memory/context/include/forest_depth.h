#pragma once

// `parent` is an ordinary host array of n ints describing a forest: node i is a root when
// parent[i] == i, otherwise parent[i] (in [0, n)) is its parent, and following parent links
// from any node reaches a root (there are no other cycles).
//
// Returns a buffer allocated with cudaMallocManaged holding n ints, where element i is the
// depth of node i: the number of parent links from i to its root (roots have depth 0).
// The buffer must be readable on the host as soon as the function returns; the caller
// releases it with cudaFree. For n == 0 return nullptr.
int* forest_depths(const int* parent, int n);
