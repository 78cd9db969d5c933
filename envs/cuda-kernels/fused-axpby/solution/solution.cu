#include <cstdint>
#include <cuda_runtime.h>
#include "axpby.h"

// Vectorised body: float4 loads/stores on the 16-byte aligned middle part of the arrays.
__global__ void axpby_vec4(int n4, float alpha, const float4* __restrict__ x,
                           float beta, const float4* __restrict__ y, float4* __restrict__ z) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 a = x[i];
        float4 b = y[i];
        float4 r;
        r.x = fmaf(alpha, a.x, beta * b.x);
        r.y = fmaf(alpha, a.y, beta * b.y);
        r.z = fmaf(alpha, a.z, beta * b.z);
        r.w = fmaf(alpha, a.w, beta * b.w);
        z[i] = r;
    }
}

__global__ void axpby_scalar(int n, float alpha, const float* __restrict__ x,
                             float beta, const float* __restrict__ y, float* __restrict__ z) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        z[i] = fmaf(alpha, x[i], beta * y[i]);
}

static int grid_for(long long work, int block) {
    long long g = (work + block - 1) / block;
    if (g > 65535LL * 8) g = 65535LL * 8;
    if (g < 1) g = 1;
    return (int)g;
}

void axpby(int n, float alpha, const float* x, float beta, const float* y, float* z) {
    if (n <= 0) return;
    const int block = 256;
    uintptr_t ax = reinterpret_cast<uintptr_t>(x) & 15u;
    uintptr_t ay = reinterpret_cast<uintptr_t>(y) & 15u;
    uintptr_t az = reinterpret_cast<uintptr_t>(z) & 15u;
    if (ax == ay && ax == az) {
        // All three share the same misalignment: peel a scalar head, then float4 body.
        int head = (int)(((16u - ax) & 15u) / 4u);
        if (head > n) head = n;
        if (head > 0) axpby_scalar<<<1, 32>>>(head, alpha, x, beta, y, z);
        int rest = n - head;
        int n4 = rest / 4;
        if (n4 > 0)
            axpby_vec4<<<grid_for(n4, block), block>>>(
                n4, alpha, reinterpret_cast<const float4*>(x + head), beta,
                reinterpret_cast<const float4*>(y + head), reinterpret_cast<float4*>(z + head));
        int tail = rest - n4 * 4;
        if (tail > 0) {
            int off = head + n4 * 4;
            axpby_scalar<<<1, 32>>>(tail, alpha, x + off, beta, y + off, z + off);
        }
    } else {
        axpby_scalar<<<grid_for(n, block), block>>>(n, alpha, x, beta, y, z);
    }
}
