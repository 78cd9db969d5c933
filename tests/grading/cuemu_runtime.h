// The CUDA runtime calls the cuda-runtime problems' runners and solutions make, on top of the
// CPU emulator (tests/families/cuemu), for the tests only (test_split_runtime_emulated.py).
//
// Everything is synchronous, as in cuemu: a stream is a tag, an asynchronous copy a memcpy,
// pinned and managed memory plain host memory (managed allocations are remembered, so that
// cudaPointerGetAttributes tells them apart). The machine has two devices (EMULATED_DEVICES,
// whose properties the tests give the checker's stand-in device query); invalid ordinals and
// arguments fail the way the runtime documents, and the failure is the pending error.
// Functions are templates with a defaulted parameter so that a later stand-in of the same name
// in cuemu's own cuda_runtime.h wins overload resolution instead of clashing.
#pragma once
#include <cuda_runtime.h>

#include <cstring>
#include <set>

enum {
    cudaErrorInvalidDevice = 101,  // cuemu's cuda_runtime.h has the others
};

// cuemu's warpSize is a macro, which would rename cudaDeviceProp::warpSize: a constant does
// the kernels' job and leaves the member alone.
#undef warpSize
constexpr int warpSize = 32;

#define cudaStreamNonBlocking 0x01
#define cudaHostAllocMapped 0x02

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major;
    int minor;
    int multiProcessorCount;
    int maxThreadsPerMultiProcessor;
    int l2CacheSize;
};

enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock,
    cudaDevAttrMaxBlockDimX,
    cudaDevAttrMaxBlockDimY,
    cudaDevAttrMaxBlockDimZ,
    cudaDevAttrMaxGridDimX,
    cudaDevAttrMaxGridDimY,
    cudaDevAttrMaxGridDimZ,
    cudaDevAttrMaxSharedMemoryPerBlock,
    cudaDevAttrMaxSharedMemoryPerBlockOptin,
    cudaDevAttrWarpSize,
    cudaDevAttrMultiProcessorCount,
    cudaDevAttrMaxThreadsPerMultiProcessor,
    cudaDevAttrComputeCapabilityMajor,
    cudaDevAttrComputeCapabilityMinor,
    cudaDevAttrL2CacheSize,
    cudaDevAttrManagedMemory,
    cudaDevAttrConcurrentManagedAccess,
};

enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void* devicePointer;
    void* hostPointer;
};

namespace cuemu_rt {

// name, cc, SMs, threads per SM, shared per block (default, opt-in), global memory, L2
inline const cudaDeviceProp& device(int d)
{
    static const cudaDeviceProp table[2] = {
        {"Emulated GPU Zero", 85899345920ull, 49152, 232448, 32, 1024, {1024, 1024, 64},
         {2147483647, 65535, 65535}, 9, 0, 132, 2048, 52428800},
        {"Emulated GPU One", 42949672960ull, 49152, 166912, 32, 1024, {1024, 1024, 64},
         {2147483647, 65535, 65535}, 8, 0, 108, 2048, 41943040},
    };
    return table[d];
}
constexpr int kDevices = 2;

struct State {
    int current = 0;
    std::set<const void*> managed, pinned;
};
inline State& state()
{
    static State s;
    return s;
}

inline cudaError_t fail(cudaError_t e)
{
    cuemu::rt.last_error = e;  // the pending error, as the runtime records a failed call's
    return e;
}

inline bool valid(int d) { return d >= 0 && d < kDevices; }

}  // namespace cuemu_rt

template <class = void>
cudaError_t cudaGetDeviceCount(int* count)
{
    *count = cuemu_rt::kDevices;
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaSetDevice(int d)
{
    if (!cuemu_rt::valid(d)) return cuemu_rt::fail(cudaErrorInvalidDevice);
    cuemu_rt::state().current = d;
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaGetDevice(int* d)
{
    *d = cuemu_rt::state().current;
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d)
{
    if (!cuemu_rt::valid(d)) return cuemu_rt::fail(cudaErrorInvalidDevice);
    *p = cuemu_rt::device(d);
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int d)
{
    if (!cuemu_rt::valid(d)) return cuemu_rt::fail(cudaErrorInvalidDevice);
    const cudaDeviceProp& p = cuemu_rt::device(d);
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
        case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
        case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
        case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
        case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
        case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
        case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
        case cudaDevAttrWarpSize: *value = p.warpSize; break;
        case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
        case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
        case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
        case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
        case cudaDevAttrManagedMemory: *value = 1; break;
        case cudaDevAttrConcurrentManagedAccess: *value = 1; break;
        default: return cuemu_rt::fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

// Streams: tags; all work is already done when it is issued.
template <class = void>
cudaError_t cudaStreamCreate(cudaStream_t* s)
{
    static char tags[1 << 16];
    static size_t next = 0;
    *s = reinterpret_cast<cudaStream_t>(&tags[next++ % sizeof tags]);
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned)
{
    return cudaStreamCreate(s);
}
template <class = void>
cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaStreamDestroy(cudaStream_t)
{
    return cudaSuccess;
}

// Pinned and managed memory: host memory, remembered for cudaPointerGetAttributes (cudaFree
// forgets it: the macro below routes every later cudaFree through release).
namespace cuemu_rt {
inline cudaError_t host_memory(void** p, size_t bytes, std::set<const void*>& kind)
{
    *p = malloc(bytes ? bytes : 1);
    if (!*p) return fail(cudaErrorMemoryAllocation);
    kind.insert(*p);
    return cudaSuccess;
}
inline cudaError_t release(void* p)
{
    state().managed.erase(p);
    state().pinned.erase(p);
    return (::cudaFree)(p);
}
}  // namespace cuemu_rt
#define cudaFree(p) cuemu_rt::release(p)

template <class T>
cudaError_t cudaMallocHost(T** p, size_t bytes)
{
    return cuemu_rt::host_memory(reinterpret_cast<void**>(p), bytes, cuemu_rt::state().pinned);
}
template <class = void>
cudaError_t cudaFreeHost(void* p)
{
    return cuemu_rt::release(p);
}
template <class T>
cudaError_t cudaMallocManaged(T** p, size_t bytes, unsigned = 1)
{
    return cuemu_rt::host_memory(reinterpret_cast<void**>(p), bytes, cuemu_rt::state().managed);
}
template <class = void>
cudaError_t cudaMemPrefetchAsync(const void*, size_t, int, cudaStream_t = nullptr)
{
    return cudaSuccess;
}
template <class = void>
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p)
{
    const cuemu_rt::State& s = cuemu_rt::state();
    std::memset(attr, 0, sizeof *attr);
    attr->type = s.managed.count(p) ? cudaMemoryTypeManaged
                 : s.pinned.count(p) ? cudaMemoryTypeHost
                                     : cudaMemoryTypeUnregistered;
    return cudaSuccess;
}
