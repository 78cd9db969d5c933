// For the tests only: what a split runner (envs/_shared/test/cudaenv_runner.h) needs on cuemu
// (tests/families/cuemu) beyond its CUDA stand-in. The standard headers the runner library
// uses come first, then __CUDACC__, which turns on the library's CUDA half (device buffers,
// NVTX ranges), and the stream calls a runner makes.
#pragma once
#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <type_traits>
#include <vector>
#include <sys/stat.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#define __CUDACC__ 1

enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
// Kernels run to completion as they are launched: a stream is a name, and waits are no-ops.
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
    static int stream;
    *s = reinterpret_cast<cudaStream_t>(&stream);
    return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
