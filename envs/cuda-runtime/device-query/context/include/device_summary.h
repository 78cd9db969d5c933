#pragma once
#include <cstddef>

struct DeviceSummary {
    char name[256];                     // device name, NUL-terminated
    int cc_major;                       // compute capability, major
    int cc_minor;                       // compute capability, minor
    int sm_count;                       // number of streaming multiprocessors
    int warp_size;                      // threads per warp
    int max_threads_per_block;          // maximum threads in one block
    int max_threads_per_sm;             // maximum resident threads per multiprocessor
    size_t shared_mem_per_block;        // shared memory per block without opt-in, bytes
    size_t shared_mem_per_block_optin;  // shared memory per block with opt-in, bytes
    size_t total_global_mem;            // global memory, bytes
    int l2_cache_bytes;                 // L2 cache size, bytes
    int max_resident_warps;             // sm_count * max_threads_per_sm / warp_size
};

// Fills *out with the properties of CUDA device `device` and returns 0.
// Returns -1 without touching *out if `out` is null or `device` is not a valid device ordinal.
int query_device(int device, DeviceSummary* out);
