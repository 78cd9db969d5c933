// cudaenv_cublas.h: what the cuBLAS problems' runners share (include after cudaenv_runner.h).
//
// Runner side, untrusted like the rest of the runner: a cuBLAS status that is not SUCCESS
// fails the case, one handle serves the whole run (as a caller would keep it), and the
// handle's settings are read back so the checker can tell whether the solution left them as
// the prompt asks (pointer mode, math mode, and whether the stream is still the default one).
#pragma once

#include <cstdint>
#include <vector>
#include <cublas_v2.h>
#include "cudaenv_runner.h"

namespace cudaenv {

inline void cublas_check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) throw CaseError("%s: cuBLAS status %d", what, (int)s);
}

// One handle for the whole run.
inline cublasHandle_t cublas_handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t made = nullptr;
        cublas_check(cublasCreate(&made), "cublasCreate");
        return made;
    }();
    return h;
}

// {pointer mode, math mode, 1 if the handle's stream is the default one}.
inline std::vector<int32_t> cublas_settings(cublasHandle_t h) {
    cublasPointerMode_t pointer;
    cublasMath_t math;
    cudaStream_t stream;
    cublas_check(cublasGetPointerMode(h, &pointer), "cublasGetPointerMode");
    cublas_check(cublasGetMathMode(h, &math), "cublasGetMathMode");
    cublas_check(cublasGetStream(h, &stream), "cublasGetStream");
    return {(int32_t)pointer, (int32_t)math, stream == nullptr ? 1 : 0};
}

}  // namespace cudaenv
