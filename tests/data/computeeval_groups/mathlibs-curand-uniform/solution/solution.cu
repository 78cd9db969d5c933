#include "fill_uniform.h"

#include <cuda_runtime.h>
#include <curand.h>

void fill_uniform(float* d_out, size_t n, unsigned long long seed) {
    curandGenerator_t gen;
    if (curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS)
        return;
    curandSetPseudoRandomGeneratorSeed(gen, seed);
    curandGenerateUniform(gen, d_out, n);
    cudaDeviceSynchronize();
    curandDestroyGenerator(gen);
}
