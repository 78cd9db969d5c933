#include "device_summary.h"
#include <cuda_runtime.h>
#include <cstring>

int query_device(int device, DeviceSummary* out)
{
    if (out == nullptr) return -1;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    if (device < 0 || device >= count) return -1;

    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }

    DeviceSummary s;
    memset(&s, 0, sizeof s);
    strncpy(s.name, prop.name, sizeof s.name - 1);
    s.cc_major = prop.major;
    s.cc_minor = prop.minor;
    s.sm_count = prop.multiProcessorCount;
    s.warp_size = prop.warpSize;
    s.max_threads_per_block = prop.maxThreadsPerBlock;
    s.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    s.shared_mem_per_block = prop.sharedMemPerBlock;
    s.shared_mem_per_block_optin = prop.sharedMemPerBlockOptin;
    s.total_global_mem = prop.totalGlobalMem;
    s.l2_cache_bytes = l2;
    s.max_resident_warps = s.sm_count * s.max_threads_per_sm / s.warp_size;
    *out = s;
    return 0;
}
