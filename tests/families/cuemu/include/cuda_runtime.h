// cuemu stand-in for the CUDA runtime API: device memory is host memory.
#pragma once
#include "../cuemu.h"

typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9
};
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
// __constant__ and __device__ variables are host variables: copies to them are memcpy
template <class T>
cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src, size_t n, size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
    if (offset + n > sizeof(T)) return cudaErrorInvalidValue;
    if (n) memmove(reinterpret_cast<char*>(&symbol) + offset, src, n);
    return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyToSymbolAsync(T& symbol, const void* src, size_t n, size_t offset = 0,
                                    cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                    cudaStream_t = nullptr) {
    return cudaMemcpyToSymbol(symbol, src, n, offset, kind);
}
// one small device; tests/grading/cuemu_runtime.h (CUEMU_RUNTIME_DEVICES) brings two full ones
#ifndef CUEMU_RUNTIME_DEVICES
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMultiProcessorCount = 16 };
inline cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    if (device != 0) return cudaErrorInvalidValue;
    *value = attr == cudaDevAttrMultiProcessorCount ? 4 : 1024;  // a small device: few blocks
    return cudaSuccess;
}
#endif
inline cudaError_t cudaGetLastError() {
    cudaError_t e = cuemu::rt.last_error;
    cuemu::rt.last_error = 0;
    return e;
}
inline cudaError_t cudaPeekAtLastError() { return cuemu::rt.last_error; }
inline const char* cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error"
           : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
           : e == cudaErrorInvalidValue         ? "invalid argument"
                                                : "cuemu error";
}
