#include "distinct_count.h"
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/unique.h>
#include <thrust/execution_policy.h>

int count_distinct(const int* d_values, int n)
{
    if (n <= 0) return 0;
    // Sort a private copy (the input is read-only), then count the runs of equal values.
    thrust::device_vector<int> keys(d_values, d_values + n);
    thrust::sort(thrust::device, keys.begin(), keys.end());
    return (int)thrust::unique_count(thrust::device, keys.begin(), keys.end());
}
