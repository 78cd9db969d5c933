#include "event_timing.h"
#include <cstdio>
#include <cstdlib>

#define SOL_CHECK(call)                                                              \
    do {                                                                             \
        cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

PhaseTimes time_two_phases(long long cycles_first, long long cycles_second)
{
    cudaStream_t stream;
    SOL_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaEvent_t ev[3];
    for (int i = 0; i < 3; ++i) SOL_CHECK(cudaEventCreate(&ev[i]));

    SOL_CHECK(cudaEventRecord(ev[0], stream));
    launch_busy_kernel(cycles_first, stream);
    SOL_CHECK(cudaEventRecord(ev[1], stream));
    launch_busy_kernel(cycles_second, stream);
    SOL_CHECK(cudaEventRecord(ev[2], stream));
    SOL_CHECK(cudaEventSynchronize(ev[2]));

    PhaseTimes t{};
    SOL_CHECK(cudaEventElapsedTime(&t.first_ms, ev[0], ev[1]));
    SOL_CHECK(cudaEventElapsedTime(&t.second_ms, ev[1], ev[2]));
    SOL_CHECK(cudaEventElapsedTime(&t.total_ms, ev[0], ev[2]));

    for (int i = 0; i < 3; ++i) SOL_CHECK(cudaEventDestroy(ev[i]));
    SOL_CHECK(cudaStreamDestroy(stream));
    return t;
}
