#include "scale_rtc.h"

#include <string>

#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

static const char* kSource = R"(
extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
)";

int scale_rtc(float a, const float* d_x, float* d_y, int n) {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, kSource, "scale.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        return 1;
    std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
    const char* opts[] = {arch.c_str()};
    if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
        nvrtcDestroyProgram(&prog);
        return 2;
    }
    size_t ptx_size = 0;
    nvrtcGetPTXSize(prog, &ptx_size);
    std::string ptx(ptx_size, '\0');
    nvrtcGetPTX(prog, &ptx[0]);
    nvrtcDestroyProgram(&prog);

    cudaFree(nullptr);  // the runtime makes the primary context current
    CUmodule module;
    CUfunction kernel;
    if (cuModuleLoadData(&module, ptx.c_str()) != CUDA_SUCCESS) return 3;
    if (cuModuleGetFunction(&kernel, module, "scale") != CUDA_SUCCESS) return 4;
    CUdeviceptr x = (CUdeviceptr)d_x, y = (CUdeviceptr)d_y;
    void* args[] = {&a, &x, &y, &n};
    unsigned blocks = (unsigned)((n + 255) / 256);
    CUresult launched = cuLaunchKernel(kernel, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
    cuCtxSynchronize();
    cuModuleUnload(module);
    return launched == CUDA_SUCCESS ? 0 : 5;
}
