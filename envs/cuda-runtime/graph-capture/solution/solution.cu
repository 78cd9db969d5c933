#include "graph_relax.h"
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

__global__ void smooth_kernel(const float* __restrict__ x, float* __restrict__ tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int l = i > 0 ? i - 1 : 0;
        int r = i < n - 1 ? i + 1 : n - 1;
        tmp[i] = 0.25f * x[l] + 0.5f * x[i] + 0.25f * x[r];
    }
}

__global__ void relax_kernel(float* __restrict__ x, const float* __restrict__ tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.99f * tmp[i] + 0.01f;
}

static void enqueue(float* d_x, float* d_tmp, int n, int iters, cudaStream_t stream)
{
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    for (int it = 0; it < iters; ++it) {
        smooth_kernel<<<blocks, threads, 0, stream>>>(d_x, d_tmp, n);
        relax_kernel<<<blocks, threads, 0, stream>>>(d_x, d_tmp, n);
    }
}

// Captures `iters` iterations into a graph and launches it `times` times.
static void run_graph(float* d_x, float* d_tmp, int n, int iters, int times, cudaStream_t stream)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    SOL_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue(d_x, d_tmp, n, iters, stream);
    SOL_CHECK(cudaStreamEndCapture(stream, &graph));
    SOL_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int t = 0; t < times; ++t) SOL_CHECK(cudaGraphLaunch(exec, stream));
    SOL_CHECK(cudaGraphExecDestroy(exec));
    SOL_CHECK(cudaGraphDestroy(graph));
}

void relax_iterations(float* d_x, float* d_tmp, int n, int iters, cudaStream_t stream)
{
    if (n <= 0 || iters <= 0) return;
    const int kBatch = 50;  // iterations per captured graph
    int batch = iters < kBatch ? iters : kBatch;
    run_graph(d_x, d_tmp, n, batch, iters / batch, stream);
    int rest = iters % batch;
    if (rest > 0) run_graph(d_x, d_tmp, n, rest, 1, stream);
}
