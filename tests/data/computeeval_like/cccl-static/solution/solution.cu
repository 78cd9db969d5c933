#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include "count.h"

#define CHECK_CUDA(call)                                                         \
    do {                                                                         \
        cudaError_t err = (call);                                                \
        if (err != cudaSuccess) {                                                \
            std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));   \
            std::exit(err);                                                      \
        }                                                                        \
    } while (0)

struct IsPositive {
    __host__ __device__ bool operator()(int x) const { return x > 0; }
};

// namespace-scope objects whose constructors the standard library and Thrust wrote
static const std::string kLabel = "count_positive";
static thrust::host_vector<int> g_staging;

int count_positive(const std::vector<int>& values) {
    g_staging.assign(values.begin(), values.end());
    thrust::device_vector<int> d = g_staging;
    int n = static_cast<int>(thrust::count_if(d.begin(), d.end(), IsPositive()));
    CHECK_CUDA(cudaDeviceSynchronize());
    std::cout << kLabel << ": " << n << std::endl;
    return n;
}
