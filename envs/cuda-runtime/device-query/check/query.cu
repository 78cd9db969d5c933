// device-query's trusted device query: built and run in the checker's sandbox (never with
// solution code), it prints what the runtime reports for every device, one line each:
//   devices <count>
//   <index> x<the name's bytes in hex> <cc_major> <cc_minor> <sm_count> <warp_size> <max_threads_per_block>
//           <max_threads_per_sm> <shared_mem_per_block> <shared_mem_per_block_optin>
//           <total_global_mem> <l2_cache_bytes>
#include <cstdio>
#include <cuda_runtime.h>

static int fail(const char* what, cudaError_t e)
{
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main()
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return fail("cudaGetDeviceCount", e);
    std::printf("devices %d\n", count);
    const cudaDeviceAttr attrs[] = {
        cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
        cudaDevAttrMultiProcessorCount,    cudaDevAttrWarpSize,
        cudaDevAttrMaxThreadsPerBlock,     cudaDevAttrMaxThreadsPerMultiProcessor,
        cudaDevAttrMaxSharedMemoryPerBlock, cudaDevAttrMaxSharedMemoryPerBlockOptin,
    };
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp p;
        if ((e = cudaGetDeviceProperties(&p, d)) != cudaSuccess) return fail("cudaGetDeviceProperties", e);
        std::printf("%d x", d);  // x, then the name's bytes in hex (the name may be empty)
        for (const char* c = p.name; *c; ++c) std::printf("%02x", (unsigned char)*c);
        for (cudaDeviceAttr a : attrs) {
            int v = 0;
            if ((e = cudaDeviceGetAttribute(&v, a, d)) != cudaSuccess) return fail("cudaDeviceGetAttribute", e);
            std::printf(" %d", v);
        }
        int l2 = 0;
        if ((e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, d)) != cudaSuccess)
            return fail("cudaDeviceGetAttribute", e);
        std::printf(" %llu %d\n", (unsigned long long)p.totalGlobalMem, l2);
    }
    return 0;
}
