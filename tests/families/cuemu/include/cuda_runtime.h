// cuemu stand-in for the CUDA runtime API: device memory is host memory.
#pragma once
#include "../cuemu.h"

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidConfiguration = 9 };
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
typedef struct cuemu_stream* cudaStream_t;

inline cudaError_t cudaMalloc(void** p, size_t n) {
    *p = malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc((void**)p, n); }
inline cudaError_t cudaFree(void* p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
    if (n) memmove(d, s, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k,
                                   cudaStream_t = nullptr) {
    return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
    if (n) memset(p, v, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) {
    return cudaMemset(p, v, n);
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() {
    cudaError_t e = cuemu::rt.last_error;
    cuemu::rt.last_error = 0;
    return e;
}
inline cudaError_t cudaPeekAtLastError() { return cuemu::rt.last_error; }
inline const char* cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error"
           : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
                                                : "cuemu error";
}
