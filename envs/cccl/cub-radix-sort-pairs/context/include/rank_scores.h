#pragma once

// Device arrays of n elements each. Writes the (score, id) pairs sorted by score in
// descending order into d_scores_out / d_ids_out; pairs with equal scores keep their input
// order (stable). Scores are finite floats, never -0.0 or NaN. Inputs must not be modified.
// Work goes to the default stream; the function may return before it finishes.
void rank_scores(const float* d_scores, const int* d_ids, float* d_scores_out, int* d_ids_out, int n);
