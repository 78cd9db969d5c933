// device-query's runner: calls the solution's query_device for the checker's cases and writes
// out what each call returned and left behind (the summary, the error left pending, the
// current device, whether *out stayed untouched). It is built with the solution and decides
// nothing: check/check.py, in a sandbox of its own, compares with the device's properties as
// its own trusted program (check/query.cu) reads them.
#include <cstdint>
#include <cstring>
#include <vector>
#include "cudaenv_runner.h"
#include "device_summary.h"

using cudaenv::Case;

constexpr int kFields = 11;  // the summary's numeric fields, in the header's order

// Once per run: the device count, and the last device made current, so that a solution
// switching devices is noticed.
static int device_count()
{
    static const int count = [] {
        int n = 0;
        cudaenv::check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
        if (n < 1) throw cudaenv::CaseError("no CUDA device");
        cudaenv::check(cudaSetDevice(n - 1), "cudaSetDevice");
        cudaenv::check(cudaFree(nullptr), "cudaFree");
        return n;
    }();
    return count;
}

// Every call's observations, one row per call.
struct Calls {
    std::vector<int64_t> ordinal, fields;
    std::vector<int32_t> rc, pending, current, untouched;
    std::vector<uint8_t> names;
};

static void query(Calls& out, int device, bool null_out)
{
    DeviceSummary s, fresh;
    std::memset(&s, 0x5A, sizeof s);
    std::memset(&fresh, 0x5A, sizeof fresh);
    int rc;
    {
        cudaenv::Call call(false);  // a query of the runtime: no kernel to run
        rc = query_device(device, null_out ? nullptr : &s);
    }
    const cudaError_t pending = cudaGetLastError();
    int current = -1;
    cudaenv::check(cudaGetDevice(&current), "cudaGetDevice");
    out.ordinal.push_back(device);
    out.rc.push_back(rc);
    out.pending.push_back((int32_t)pending);
    out.current.push_back(current);
    out.untouched.push_back(std::memcmp(&s, &fresh, sizeof s) == 0);
    const uint8_t* name = reinterpret_cast<const uint8_t*>(s.name);
    out.names.insert(out.names.end(), name, name + sizeof s.name);
    const int64_t f[kFields] = {s.cc_major, s.cc_minor, s.sm_count, s.warp_size,
                                s.max_threads_per_block, s.max_threads_per_sm,
                                (int64_t)s.shared_mem_per_block, (int64_t)s.shared_mem_per_block_optin,
                                (int64_t)s.total_global_mem, s.l2_cache_bytes, s.max_resident_warps};
    out.fields.insert(out.fields.end(), f, f + kFields);
}

// A case: every device in turn (every_device), or one call on `ordinal` (plus the device
// count when relative), with out = nullptr when null_out.
static void test_case(Case& c)
{
    const int count = device_count();
    Calls out;
    if (c.scalar<int32_t>("every_device")) {
        for (int d = 0; d < count; ++d) query(out, d, false);
    } else {
        const int64_t ordinal = c.scalar<int64_t>("ordinal") + (c.scalar<int32_t>("relative") ? count : 0);
        query(out, (int)ordinal, c.scalar<int32_t>("null_out") != 0);
    }
    const int64_t calls = (int64_t)out.rc.size();
    c.output_scalar("count", (int32_t)count);
    c.output("ordinal", out.ordinal);
    c.output("rc", out.rc);
    c.output("pending", out.pending);
    c.output("current", out.current);
    c.output("untouched", out.untouched);
    c.output("name", out.names, {calls, (int64_t)sizeof(DeviceSummary::name)});
    c.output("fields", out.fields, {calls, kFields});
}

int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case); }
