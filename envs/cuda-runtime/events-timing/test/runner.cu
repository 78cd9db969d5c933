// events-timing's runner: provides launch_busy_kernel, calls the solution's time_two_phases
// on the checker's phase lengths and writes out what it saw: the times returned, the launches
// the solution made, whether both kernels had finished when it returned, the host's wall time
// of the call and the error left pending. It is built with the solution and decides nothing:
// check/check.py, in a sandbox of its own, draws the phase lengths and judges.
#include <chrono>
#include <cstdint>
#include <vector>
#include "cudaenv_runner.h"
#include "event_timing.h"

using cudaenv::Case;

// ---- the busy kernel provided to the solution: every launch is logged ----
constexpr int kMaxLaunches = 16;
struct LaunchRecord {
    long long cycles;
    cudaStream_t stream;
};
static LaunchRecord g_log[kMaxLaunches];
static int g_launches = 0;               // calls of launch_busy_kernel (logged up to 16)
static volatile int* g_done = nullptr;   // mapped pinned flags, one per launch
static int* g_done_device = nullptr;

__global__ void busy_kernel(long long cycles, int* done_flag)
{
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
    __threadfence_system();
    *(volatile int*)done_flag = 1;
}

void launch_busy_kernel(long long cycles, cudaStream_t stream)
{
    const int k = g_launches++;
    if (k >= kMaxLaunches) return;  // the checker fails a call that launched more than two
    g_log[k] = {cycles, stream};
    busy_kernel<<<1, 1, 0, stream>>>(cycles, g_done_device + k);
}

// Once per run: the SM clock (kHz), the mapped flags, and a warm-up that lets clocks ramp up.
static double clock_khz()
{
    static const double khz = [] {
        int rate = 0;
        cudaenv::check(cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, 0), "clock rate");
        if (rate <= 0) throw cudaenv::CaseError("the device reports no clock rate");
        int* flags = nullptr;
        cudaenv::check(cudaHostAlloc(&flags, kMaxLaunches * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
        g_done = flags;
        cudaenv::check(cudaHostGetDevicePointer(&g_done_device, flags, 0), "cudaHostGetDevicePointer");
        busy_kernel<<<1, 1>>>((long long)(rate * 200.0), g_done_device);  // about 200 ms
        cudaenv::sync("warm-up");
        return (double)rate;
    }();
    return khz;
}

// One call: the phases last ms_first and ms_second milliseconds at the peak clock.
static void test_case(Case& c)
{
    const double khz = clock_khz();
    const long long c1 = (long long)(c.scalar<double>("ms_first") * khz);
    const long long c2 = (long long)(c.scalar<double>("ms_second") * khz);
    for (int i = 0; i < kMaxLaunches; ++i) g_done[i] = 0;
    g_launches = 0;
    PhaseTimes t;
    double host_ms;
    int32_t done[2];
    {
        cudaenv::Call call;  // the busy kernels run in it
        const auto t0 = std::chrono::steady_clock::now();
        t = time_two_phases(c1, c2);
        const auto t1 = std::chrono::steady_clock::now();
        done[0] = g_done[0];  // read before any synchronisation of ours
        done[1] = g_done[1];
        host_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    }
    const cudaError_t pending = cudaGetLastError();
    cudaenv::check(cudaDeviceSynchronize(), "after the call");
    const int logged = g_launches < kMaxLaunches ? g_launches : kMaxLaunches;
    std::vector<int64_t> cycles;
    for (int k = 0; k < logged; ++k) cycles.push_back(g_log[k].cycles);
    const bool same_stream = logged >= 2 && g_log[0].stream == g_log[1].stream;
    c.output_scalar("clock_khz", khz);
    c.output("asked_cycles", std::vector<int64_t>{c1, c2});
    c.output_scalar("launches", (int32_t)g_launches);
    c.output("launched_cycles", cycles);
    c.output_scalar("same_stream", (int32_t)same_stream);
    c.output("done", done, 2);
    c.output("times_ms", std::vector<float>{t.first_ms, t.second_ms, t.total_ms});
    c.output_scalar("host_ms", host_ms);
    c.output_scalar("pending", (int32_t)pending);
}

int main(int argc, char** argv)
{
    cudaSetDevice(0);  // an error here shows in the first case
    return cudaenv::run(argc, argv, test_case);
}
