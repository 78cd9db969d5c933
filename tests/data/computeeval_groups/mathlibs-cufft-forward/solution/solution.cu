#include "fft_forward.h"

#include <cuda_runtime.h>

void fft_forward(cufftComplex* d_data, int n) {
    cufftHandle plan;
    if (cufftPlan1d(&plan, n, CUFFT_C2C, 1) != CUFFT_SUCCESS) return;
    cufftExecC2C(plan, d_data, d_data, CUFFT_FORWARD);
    cudaDeviceSynchronize();
    cufftDestroy(plan);
}
