#include "checked_launch.h"

// Every thread of the (possibly 3-D) launch gets a unique linear id; a grid-stride loop
// covers all n elements whatever the launch shape.
__global__ void axpy_any_shape(float a, const float* __restrict__ x, float* __restrict__ y, int n)
{
    size_t block_threads = (size_t)blockDim.x * blockDim.y * blockDim.z;
    size_t block_id = ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    size_t local = ((size_t)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    size_t total = block_threads * gridDim.x * gridDim.y * gridDim.z;
    for (size_t i = block_id * block_threads + local; i < (size_t)n; i += total) {
        y[i] = a * x[i] + y[i];
    }
}

static LaunchStatus classify_config_error(dim3 grid, dim3 block)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
        return LAUNCH_EMPTY_CONFIG;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return LAUNCH_OTHER_ERROR;
    int max_threads = 0, bx = 0, by = 0, bz = 0, gx = 0, gy = 0, gz = 0;
    if (cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerBlock, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bx, cudaDevAttrMaxBlockDimX, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&by, cudaDevAttrMaxBlockDimY, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bz, cudaDevAttrMaxBlockDimZ, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&gx, cudaDevAttrMaxGridDimX, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&gy, cudaDevAttrMaxGridDimY, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&gz, cudaDevAttrMaxGridDimZ, dev) != cudaSuccess) {
        cudaGetLastError();
        return LAUNCH_OTHER_ERROR;
    }
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (block.x > (unsigned)bx || block.y > (unsigned)by || block.z > (unsigned)bz ||
        threads > (unsigned long long)max_threads)
        return LAUNCH_BLOCK_TOO_LARGE;
    if (grid.x > (unsigned)gx || grid.y > (unsigned)gy || grid.z > (unsigned)gz)
        return LAUNCH_GRID_TOO_LARGE;
    return LAUNCH_OTHER_ERROR;
}

LaunchStatus checked_axpy(float a, const float* d_x, float* d_y, int n, dim3 grid, dim3 block)
{
    if (n > 0 && (d_x == nullptr || d_y == nullptr)) return LAUNCH_NULL_POINTER;

    // Drop any error left pending by earlier, unrelated work so it is not blamed on us.
    (void)cudaGetLastError();

    axpy_any_shape<<<grid, block>>>(a, d_x, d_y, n);
    cudaError_t err = cudaGetLastError();  // reads and clears the launch error
    if (err != cudaSuccess) return classify_config_error(grid, block);

    err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return LAUNCH_OTHER_ERROR;
    }
    return LAUNCH_OK;
}
