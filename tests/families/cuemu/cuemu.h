// cuemu: runs the CUDA subset the generated problems use on the CPU, for the tests only.
//
// Each block's threads are fibers (a few lines of x86-64 context switching below) run one at
// a time until they reach a barrier (__syncthreads, or a warp-level one inside the shuffles),
// so barriers, shared memory (static storage: blocks run one after another), shuffles and
// atomics behave as on a GPU for race-free code. A kernel launch (rewritten by emulate.py from
// `k<<<grid, block>>>(args)`) runs the whole grid before it returns. Device memory is host
// memory; copies are memcpy. Launch configurations a GPU refuses are refused the same way.
#pragma once
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;

namespace cuemu {

extern "C" void cuemu_switch(void** save_sp, void* load_sp);
asm(R"(
.text
.weak cuemu_switch
.type cuemu_switch,@function
cuemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
)");

enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };
constexpr size_t kStack = 128 * 1024;

struct Fiber {
    void* sp = nullptr;
    char* stack = nullptr;
    dim3 tid;
    int linear = 0;
    State state = DONE;
};

struct Runtime {
    std::vector<Fiber> fibers;
    Fiber* cur = nullptr;
    void* sched_sp = nullptr;
    dim3 block_idx, block_dim, grid_dim;
    const std::function<void()>* body = nullptr;
    std::vector<uint64_t> lanes;  // shuffle slots, one per thread of the block
    std::vector<char> dyn_smem;   // the launch's dynamic shared memory (extern __shared__)
    int last_error = 0;
};
inline Runtime rt;

inline void yield_to_scheduler() { cuemu_switch(&rt.cur->sp, rt.sched_sp); }

[[noreturn]] inline void fiber_entry() {
    (*rt.body)();
    rt.cur->state = DONE;
    yield_to_scheduler();
    abort();
}

inline void start_fiber(Fiber& f) {
    if (!f.stack) f.stack = static_cast<char*>(malloc(kStack));
    uintptr_t top = (reinterpret_cast<uintptr_t>(f.stack) + kStack) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                                          // alignment pad
    *--sp = reinterpret_cast<void*>(&fiber_entry);            // "return address"
    for (int i = 0; i < 6; ++i) *--sp = nullptr;              // rbp rbx r12 r13 r14 r15
    f.sp = sp;
    f.state = RUNNABLE;
}

[[noreturn]] inline void die(const char* what) {
    fprintf(stderr, "cuemu: %s (block %u,%u,%u)\n", what, rt.block_idx.x, rt.block_idx.y,
            rt.block_idx.z);
    exit(86);
}

// Release a barrier once every live thread of its scope waits at it.
inline bool release_barriers() {
    bool any = false;
    std::vector<Fiber>& fs = rt.fibers;
    bool all_block = true, some_block = false;
    for (Fiber& f : fs) {
        if (f.state == DONE) continue;
        if (f.state == AT_BLOCK_BARRIER) some_block = true;
        else all_block = false;
    }
    if (some_block && all_block) {
        for (Fiber& f : fs)
            if (f.state == AT_BLOCK_BARRIER) f.state = RUNNABLE;
        return true;
    }
    for (size_t w = 0; w < fs.size(); w += 32) {
        bool all = true, some = false;
        for (size_t i = w; i < w + 32 && i < fs.size(); ++i) {
            if (fs[i].state == DONE) continue;
            if (fs[i].state == AT_WARP_BARRIER) some = true;
            else all = false;
        }
        if (some && all) {
            for (size_t i = w; i < w + 32 && i < fs.size(); ++i)
                if (fs[i].state == AT_WARP_BARRIER) fs[i].state = RUNNABLE;
            any = true;
        }
    }
    return any;
}

inline void run_block() {
    for (;;) {
        bool ran = false, live = false;
        for (Fiber& f : rt.fibers) {
            if (f.state == DONE) continue;
            live = true;
            if (f.state != RUNNABLE) continue;
            rt.cur = &f;
            cuemu_switch(&rt.sched_sp, f.sp);
            ran = true;
        }
        if (!live) return;
        if (!ran && !release_barriers()) die("deadlock: threads wait at different barriers");
        if (ran) release_barriers();
    }
}

inline void launch(dim3 grid, dim3 block, const std::function<void()>& body, size_t smem = 0) {
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 ||
        grid.z == 0 || grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u) {
        rt.last_error = 9;  // cudaErrorInvalidConfiguration
        return;
    }
    if (smem > 48 * 1024) {  // more needs cudaFuncSetAttribute on a GPU
        rt.last_error = 1;   // cudaErrorInvalidValue
        return;
    }
    rt.dyn_smem.assign(smem ? smem : 1, (char)0xA5);  // shared memory starts as garbage
    rt.block_dim = block;
    rt.grid_dim = grid;
    rt.body = &body;
    rt.fibers.resize(threads);
    rt.lanes.assign(threads, 0);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                rt.block_idx = dim3(bx, by, bz);
                int i = 0;
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx, ++i) {
                            rt.fibers[i].tid = dim3(tx, ty, tz);
                            rt.fibers[i].linear = i;
                            start_fiber(rt.fibers[i]);
                        }
                run_block();
            }
}

inline void block_barrier() {
    rt.cur->state = AT_BLOCK_BARRIER;
    yield_to_scheduler();
}
inline void warp_barrier() {
    rt.cur->state = AT_WARP_BARRIER;
    yield_to_scheduler();
}

// The predicate of every live lane of the caller's warp, as a bit mask.
inline unsigned ballot(bool pred) {
    const int me = rt.cur->linear, base = me & ~31;
    rt.lanes[me] = pred ? 1 : 0;
    warp_barrier();
    unsigned out = 0;
    for (int i = 0; i < 32 && base + i < (int)rt.lanes.size(); ++i)
        if (rt.fibers[base + i].state != DONE && rt.lanes[base + i]) out |= 1u << i;
    warp_barrier();
    return out;
}

template <class T> T shuffle(T v, int src_lane, bool in_range) {
    static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof(T));
    const int me = rt.cur->linear, base = me & ~31;
    rt.lanes[me] = bits;
    warp_barrier();
    T out = v;
    const int src = base + src_lane;
    if (in_range && src < (int)rt.lanes.size()) memcpy(&out, &rt.lanes[src], sizeof(T));
    warp_barrier();  // every lane has read before any slot is written again
    return out;
}

}  // namespace cuemu

#define threadIdx (cuemu::rt.cur->tid)
#define blockIdx (cuemu::rt.block_idx)
#define blockDim (cuemu::rt.block_dim)
#define gridDim (cuemu::rt.grid_dim)
#define warpSize 32
#define CUEMU_LAUNCH(kernel, grid, block, ...) \
    cuemu::launch(dim3(grid), dim3(block), [=]() { kernel(__VA_ARGS__); })
#define CUEMU_LAUNCH_SMEM(kernel, grid, block, smem, ...) \
    cuemu::launch(dim3(grid), dim3(block), [=]() { kernel(__VA_ARGS__); }, (size_t)(smem))

inline void __syncthreads() { cuemu::block_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { cuemu::warp_barrier(); }
inline void __threadfence() {}
inline void __threadfence_block() {}
template <class T> T __shfl_down_sync(unsigned, T v, int d, int w = 32) {
    const int lane = cuemu::rt.cur->linear & 31, seg = lane & ~(w - 1);
    return cuemu::shuffle(v, lane + d, lane + d < seg + w);
}
template <class T> T __shfl_up_sync(unsigned, T v, int d, int w = 32) {
    const int lane = cuemu::rt.cur->linear & 31, seg = lane & ~(w - 1);
    return cuemu::shuffle(v, lane - d, lane - d >= seg);
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m, int w = 32) {
    const int lane = cuemu::rt.cur->linear & 31, seg = lane & ~(w - 1);
    return cuemu::shuffle(v, lane ^ m, (lane ^ m) >= seg && (lane ^ m) < seg + w);
}
template <class T> T __shfl_sync(unsigned, T v, int src, int w = 32) {
    const int lane = cuemu::rt.cur->linear & 31, seg = lane & ~(w - 1);
    return cuemu::shuffle(v, seg + (src % w), true);
}
template <class T> T __ldg(const T* p) { return *p; }
inline unsigned __ballot_sync(unsigned, int pred) { return cuemu::ballot(pred != 0); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

// Atomics: fibers never interleave inside one, so plain read-modify-writes are atomic.
template <class T> T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <class T> T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <class T> T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <class T> T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <class T> T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }

using std::max;
using std::min;
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
