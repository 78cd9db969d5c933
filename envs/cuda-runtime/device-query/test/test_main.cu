// Hidden harness for device-query.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include "device_summary.h"

static char g_token[160];

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "CUDA error: %s -> %s (%s:%d)\n", #call,                 \
                    cudaGetErrorString(err_), __FILE__, __LINE__);                   \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static bool g_ok = true;

template <typename T>
static void expect_eq(const char* field, int dev, T got, T want)
{
    if (got != want) {
        fprintf(stderr, "device %d: %s = %lld, expected %lld\n", dev, field, (long long)got, (long long)want);
        g_ok = false;
    }
}

static bool after_call(const char* label, int current_before)
{
    bool ok = true;
    cudaError_t pending = cudaGetLastError();
    if (pending != cudaSuccess) {
        fprintf(stderr, "[%s] error left pending: %s\n", label, cudaGetErrorString(pending));
        ok = false;
    }
    int cur = -1;
    CHECK(cudaGetDevice(&cur));
    if (cur != current_before) {
        fprintf(stderr, "[%s] current device changed from %d to %d\n", label, current_before, cur);
        ok = false;
    }
    return ok;
}

static void check_valid(int dev, int current)
{
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, dev));
    int sm = 0, warp = 0, mtpb = 0, mtpsm = 0, smem = 0, optin = 0, l2 = 0, major = 0, minor = 0;
    CHECK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev));
    CHECK(cudaDeviceGetAttribute(&mtpb, cudaDevAttrMaxThreadsPerBlock, dev));
    CHECK(cudaDeviceGetAttribute(&mtpsm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, dev));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));

    DeviceSummary s;
    memset(&s, 0x5A, sizeof s);
    int rc = query_device(dev, &s);
    char label[32];
    snprintf(label, sizeof label, "device %d", dev);
    if (!after_call(label, current)) g_ok = false;
    if (rc != 0) {
        fprintf(stderr, "query_device(%d) returned %d, expected 0\n", dev, rc);
        g_ok = false;
        return;
    }
    if (memchr(s.name, '\0', sizeof s.name) == nullptr || strcmp(s.name, p.name) != 0) {
        fprintf(stderr, "device %d: name mismatch (expected \"%s\")\n", dev, p.name);
        g_ok = false;
    }
    expect_eq("cc_major", dev, s.cc_major, major);
    expect_eq("cc_minor", dev, s.cc_minor, minor);
    expect_eq("sm_count", dev, s.sm_count, sm);
    expect_eq("warp_size", dev, s.warp_size, warp);
    expect_eq("max_threads_per_block", dev, s.max_threads_per_block, mtpb);
    expect_eq("max_threads_per_sm", dev, s.max_threads_per_sm, mtpsm);
    expect_eq("shared_mem_per_block", dev, s.shared_mem_per_block, (size_t)smem);
    expect_eq("shared_mem_per_block_optin", dev, s.shared_mem_per_block_optin, (size_t)optin);
    expect_eq("total_global_mem", dev, s.total_global_mem, p.totalGlobalMem);
    expect_eq("l2_cache_bytes", dev, s.l2_cache_bytes, l2);
    expect_eq("max_resident_warps", dev, s.max_resident_warps, sm * mtpsm / warp);
}

static void check_invalid(int dev, bool null_out, int current)
{
    DeviceSummary s;
    memset(&s, 0x5A, sizeof s);
    DeviceSummary untouched;
    memset(&untouched, 0x5A, sizeof untouched);
    int rc = query_device(dev, null_out ? nullptr : &s);
    char label[64];
    snprintf(label, sizeof label, "device %d%s", dev, null_out ? ", out = nullptr" : "");
    if (!after_call(label, current)) g_ok = false;
    if (rc != -1) {
        fprintf(stderr, "[%s] returned %d, expected -1\n", label, rc);
        g_ok = false;
    }
    if (memcmp(&s, &untouched, sizeof s) != 0) {
        fprintf(stderr, "[%s] *out was modified on failure\n", label);
        g_ok = false;
    }
}

int main()
{
    const char* tok = getenv("CUDAENV_COMPLETION_TOKEN");
    snprintf(g_token, sizeof g_token, "%s", tok ? tok : "");
    unsetenv("CUDAENV_COMPLETION_TOKEN");

    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    if (count < 1) { fprintf(stderr, "no CUDA device\n"); return 1; }
    // Make the last device current so that a solution switching devices is noticed.
    int current = count - 1;
    CHECK(cudaSetDevice(current));
    CHECK(cudaFree(nullptr));

    for (int d = 0; d < count; ++d) check_valid(d, current);
    check_invalid(-1, false, current);
    check_invalid(count, false, current);
    check_invalid(count + 7, false, current);
    check_invalid(-1000, false, current);
    check_invalid(0, true, current);
    check_valid(0, current);  // still works after the failures

    if (!g_ok) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("all checks passed\n");
    printf("CUDAENV_COMPLETE %s\n", g_token);
    return 0;
}
