#include "moments.h"
#include <thrust/transform_reduce.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>

struct to_double {
    __host__ __device__ double operator()(float v) const { return (double)v; }
};

struct squared_deviation {
    double m;
    __host__ __device__ double operator()(float v) const
    {
        double d = (double)v - m;
        return d * d;
    }
};

void mean_and_variance(const float* d_x, int n, double* mean, double* variance)
{
    if (n <= 0) {
        *mean = 0.0;
        *variance = 0.0;
        return;
    }
    // Two passes: the deviations are taken from the exact-as-possible mean, which avoids the
    // cancellation of E[x^2] - E[x]^2 when the mean is large compared to the spread.
    double sum = thrust::transform_reduce(thrust::device, d_x, d_x + n, to_double{}, 0.0, thrust::plus<double>());
    double m = sum / n;
    double ss = thrust::transform_reduce(thrust::device, d_x, d_x + n, squared_deviation{m}, 0.0,
                                         thrust::plus<double>());
    *mean = m;
    *variance = ss / n;
}
