// cudaenv_runner.h: the RUNNER side of a cudaenv split harness (header-only C++17).
//
// A split harness has two halves. The runner is built with the solution and is exactly as
// untrusted as the solution: it only runs the solution on the inputs the trusted checker
// drew and writes the outputs out. The checker (check/check.py, in a sandbox of its own,
// after every process of this run is dead) compares them and alone decides. So nothing here
// holds a secret or decides anything; a runner that lies only hurts its own grade.
//
// The files, under $CUDAENV_IO (the grader sets it; ".cudaenv-io" by default):
//   in/manifest.txt           the case names, one per line, in run order
//   in/<case>/<input>.npy     the case's inputs (scalars as 0-d arrays)
//   out/<case>/<output>.npy   what the runner writes for the case
//   out/<case>/error.txt      a short message when a case failed (the runner goes on)
// The exit status is 0 once the whole manifest was walked.
//
// A runner is two functions and a main (see envs/cuda-kernels/fused-axpby/test/runner.cpp):
//
//   #include "cudaenv_runner.h"
//   static void test_case(cudaenv::Case& c) {
//       std::vector<float> x = c.input<float>("x");        // dtype checked: <f4
//       const int n = c.scalar<int32_t>("n");
//       ... run the solution ...
//       c.output("y", y);                                 // out/<case>/y.npy
//       c.output(cudaenv::Name("z%d", 3), z);             // a computed name: out/<case>/z3.npy
//   }
//   static void perf_case(cudaenv::Case& c) { ... }          // ./test.out --perf
//   int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
//
// It compiles with plain g++ (CPU-only problems); under nvcc (a .cu, or a .cpp nvcc hands to
// the host compiler: __NVCC__) it adds the CUDA runtime's helpers:
// DeviceArray<T> (RAII buffer: upload, download, poison), check()/sync() turning CUDA errors
// into a failed case, and NVTX ranges (Range; the timed region is "bench_region", and each
// solution call sits in a Call, a CALL_RANGE, so the grader can see that its work ran on the GPU).
// .npy files: little-endian, C order, dtypes <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1.
// Written without std::string or <stdexcept> on purpose: every grading compiles this header
// with the solution, and C-style buffers keep that compile close to a plain harness's.
// A runner with no kernels of its own is a .cpp: nvcc hands it to the host compiler alone, with
// no device passes (cudafe++, cicc, ptxas), which takes about a third off a small problem's build.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <type_traits>
#include <vector>
#include <sys/stat.h>

#if defined(__CUDACC__) || defined(__NVCC__)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace cudaenv {

// A case that cannot go on (bad input, a CUDA error): caught by run(), written to error.txt.
// printf-style: throw cudaenv::CaseError("input %s is not a scalar", name);
class CaseError : public std::exception {
public:
    explicit CaseError(const char* format, ...) __attribute__((format(printf, 2, 3))) {
        va_list args;
        va_start(args, format);
        std::vsnprintf(message_, sizeof message_, format, args);
        va_end(args);
    }
    const char* what() const noexcept override { return message_; }

private:
    char message_[512];
};

// A short formatted name, e.g. an output per timed call: c.output(cudaenv::Name("z%d", r), z).
class Name {
public:
    explicit Name(const char* format, ...) __attribute__((format(printf, 2, 3))) {
        va_list args;
        va_start(args, format);
        std::vsnprintf(text_, sizeof text_, format, args);
        va_end(args);
    }
    operator const char*() const { return text_; }

private:
    char text_[128];
};

// Raw IEEE half-precision bits (.npy <f2), usable without CUDA's fp16 header (and not named
// here: the precision rule reads a harness that names it as one passing half values).
struct Half {
    uint16_t bits;
};

// The numpy dtype string of T (what .npy headers say): "<f4", "|i1", "|b1", ...
template <class T>
const char* dtype_str() {
    static_assert(std::is_arithmetic<T>::value || std::is_same<T, Half>::value,
                  "cudaenv: .npy arrays hold numbers");
    if (std::is_same<T, bool>::value) return "|b1";
    if (std::is_same<T, Half>::value || (std::is_floating_point<T>::value && sizeof(T) == 2)) return "<f2";
    if (std::is_floating_point<T>::value) return sizeof(T) == 4 ? "<f4" : "<f8";
    static const char* const ints[2][4] = {{"|u1", "<u2", "<u4", "<u8"}, {"|i1", "<i2", "<i4", "<i8"}};
    const int size = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
    return ints[std::is_signed<T>::value ? 1 : 0][size];
}

// The poison bit pattern output buffers are filled with (a NaN for floats), by item size; the
// checker's guard() looks for the same bits (cudaenv_check.POISON_BITS).
template <class T>
T poison_value() {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "size");
    const uint64_t bits = sizeof(T) == 1   ? 0xA5ull
                          : sizeof(T) == 2 ? 0x7E5Dull
                          : sizeof(T) == 4 ? 0x7FC0DEADull
                                           : 0x7FF8DEADDEADDEADull;
    T value;
    std::memcpy(&value, &bits, sizeof(T));  // little-endian: the low bytes
    return value;
}

// One .npy array: its dtype string, shape and raw bytes.
struct Array {
    char descr[8] = {};
    std::vector<int64_t> shape;
    std::vector<char> data;
    int64_t count() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

namespace detail {

inline std::vector<char> read_file(const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) throw CaseError("cannot open %s: %s", path, std::strerror(errno));
    long size = std::fseek(f, 0, SEEK_END) == 0 ? std::ftell(f) : -1;
    std::vector<char> bytes(size > 0 ? static_cast<size_t>(size) : 0);
    const bool ok = size >= 0 && std::fseek(f, 0, SEEK_SET) == 0 &&
                    std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size();
    std::fclose(f);
    if (!ok) throw CaseError("cannot read %s", path);
    return bytes;
}

inline void write_file(const char* path, const char* head, size_t head_bytes, const void* data, size_t bytes) {
    FILE* f = std::fopen(path, "wb");
    bool ok = f && std::fwrite(head, 1, head_bytes, f) == head_bytes &&
              (bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes);
    if (f) ok = std::fclose(f) == 0 && ok;
    if (!ok) throw CaseError("cannot write %s", path);
}

inline void make_dir(const char* path) {
    if (::mkdir(path, 0755) != 0 && errno != EEXIST) throw CaseError("cannot create %s: %s", path, std::strerror(errno));
}

// The text after `key`'s colon in a .npy header dict (nullptr when the key is missing).
inline const char* value_after(const char* header, const char* key) {
    const char* at = std::strstr(header, key);
    const char* colon = at ? std::strchr(at, ':') : nullptr;
    return colon ? colon + 1 : nullptr;
}

inline Array parse_npy(const std::vector<char>& bytes, const char* path) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw CaseError("%s is not a .npy file", path);
    const unsigned char* u = reinterpret_cast<const unsigned char*>(bytes.data());
    const bool wide = u[6] >= 2;  // format 2.0+: a 4-byte header length
    const size_t start = wide ? 12 : 10;
    const size_t hlen = wide ? (u[8] | u[9] << 8 | u[10] << 16 | (size_t)u[11] << 24) : (u[8] | u[9] << 8);
    if (bytes.size() < start + hlen || hlen > 65535) throw CaseError("%s: bad header", path);
    char header[65536];
    std::memcpy(header, bytes.data() + start, hlen);
    header[hlen] = '\0';
    Array a;
    const char* d = value_after(header, "'descr'");
    const char* q1 = d ? std::strchr(d, '\'') : nullptr;
    const char* q2 = q1 ? std::strchr(q1 + 1, '\'') : nullptr;
    if (!q2 || q2 - q1 - 1 != 3) throw CaseError("%s: unsupported dtype", path);
    std::memcpy(a.descr, q1 + 1, 3);
    const char* order = value_after(header, "'fortran_order'");
    while (order && *order == ' ') ++order;
    if (!order || std::strncmp(order, "False", 5) != 0) throw CaseError("%s: only C-order arrays are supported", path);
    const char* s = value_after(header, "'shape'");
    s = s ? std::strchr(s, '(') : nullptr;
    if (!s) throw CaseError("%s: bad shape", path);
    for (++s; *s && *s != ')';) {
        if (*s == ' ' || *s == ',') { ++s; continue; }
        char* end = nullptr;
        const long long dim = std::strtoll(s, &end, 10);
        if (end == s || dim < 0) throw CaseError("%s: bad shape", path);
        a.shape.push_back(dim);
        s = end;
    }
    const size_t item = static_cast<size_t>(a.descr[2] - '0');
    if (item < 1 || item > 8 || (a.descr[0] != '<' && a.descr[0] != '|')) throw CaseError("%s: unsupported dtype %s", path, a.descr);
    if (bytes.size() - start - hlen != static_cast<size_t>(a.count()) * item) throw CaseError("%s: data size does not match the header", path);
    a.data.resize(bytes.size() - start - hlen);
    if (!a.data.empty()) std::memcpy(a.data.data(), bytes.data() + start + hlen, a.data.size());
    return a;
}

// A version-1.0 .npy header for `descr` and `shape`, padded to 64 bytes; returns its length.
inline size_t npy_header(char* out, size_t cap, const char* descr, const std::vector<int64_t>& shape) {
    char dims[256] = "";  // () for a scalar, (3,) for one dimension, (2, 3) for more
    size_t used = 0;
    for (size_t i = 0; i < shape.size() && used < sizeof dims; ++i)
        used += std::snprintf(dims + used, sizeof dims - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (shape.size() == 1) std::snprintf(dims + used, sizeof dims - used, ",");
    char dict[512];
    int len = std::snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    size_t total = 10 + len + 1;  // magic, version, length, dict, newline
    const size_t pad = (64 - total % 64) % 64;
    const size_t dict_len = len + pad + 1;
    if (10 + dict_len > cap) throw CaseError("npy header too long");
    std::memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = static_cast<char>(dict_len & 0xFF);
    out[9] = static_cast<char>((dict_len >> 8) & 0xFF);
    std::memcpy(out + 10, dict, len);
    std::memset(out + 10 + len, ' ', pad);
    out[10 + dict_len - 1] = '\n';
    return 10 + dict_len;
}

inline bool valid_name(const char* name) {
    if (!name || !*name || name[0] == '.' || std::strlen(name) > 200) return false;
    for (const char* ch = name; *ch; ++ch)
        if (!(std::isalnum(static_cast<unsigned char>(*ch)) || *ch == '_' || *ch == '.' || *ch == '-')) return false;
    return true;
}

}  // namespace detail

// One case of the manifest: its inputs (read on first use) and where its outputs go.
class Case {
public:
    Case(const char* io, const char* name) {
        std::snprintf(io_, sizeof io_, "%s", io);
        std::snprintf(name_, sizeof name_, "%s", name);
        loaded_.reserve(kMaxInputs);  // array() hands out references: never reallocated
    }
    Case(const Case&) = delete;
    Case& operator=(const Case&) = delete;

    const char* name() const { return name_; }

    // Whether the case has an input called `input`.
    bool has(const char* input) const {
        struct stat st;
        return ::stat(path("in", input, ".npy").text, &st) == 0;
    }

    // The input `input` as read (dtype and shape in the Array); cached.
    const Array& array(const char* input) {
        for (auto& entry : loaded_)
            if (std::strcmp(entry.name, input) == 0) return entry.array;
        const Path p = path("in", input, ".npy");
        if (loaded_.size() == kMaxInputs) throw CaseError("more than %d inputs", (int)kMaxInputs);
        loaded_.emplace_back();
        std::snprintf(loaded_.back().name, sizeof loaded_.back().name, "%s", input);
        loaded_.back().array = detail::parse_npy(detail::read_file(p.text), p.text);
        return loaded_.back().array;
    }

    // The input's elements, flattened in C order; its dtype must be T's.
    template <class T>
    std::vector<T> input(const char* name) {
        const Array& a = typed<T>(name);
        std::vector<T> out(static_cast<size_t>(a.count()));
        if (!out.empty()) std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
        return out;
    }

    // A scalar input (a 0-d or one-element array of T).
    template <class T>
    T scalar(const char* name) {
        const Array& a = typed<T>(name);
        if (a.count() != 1) throw CaseError("input %s is not a scalar", name);
        T value;
        std::memcpy(&value, a.data.data(), sizeof(T));
        return value;
    }

    std::vector<int64_t> shape(const char* name) { return array(name).shape; }

    // Write out/<case>/<name>.npy from `count` elements at `data` (shape {count} unless given).
    template <class T>
    void output(const char* name, const T* data, size_t count, std::vector<int64_t> shape = {}) {
        if (shape.empty()) shape.push_back(static_cast<int64_t>(count));
        write(name, dtype_str<T>(), shape, data, count * sizeof(T));
    }
    template <class T>
    void output(const char* name, const std::vector<T>& v, std::vector<int64_t> shape = {}) {
        output(name, v.data(), v.size(), shape);
    }
    // A 0-d output (a scalar result).
    template <class T>
    void output_scalar(const char* name, T value) {
        write(name, dtype_str<T>(), {}, &value, sizeof(T));
    }

    // error.txt: why the case could not finish (the checker reports it as the case's failure).
    void error(const char* message) {
        out_dir();
        char text[1024];
        const int len = std::snprintf(text, sizeof text, "%.1000s\n", message);
        detail::write_file(path("out", "error", ".txt").text, text, (size_t)len, nullptr, 0);
    }

private:
    static constexpr size_t kMaxInputs = 64;
    struct Path {
        char text[1024];
    };
    struct Loaded {
        char name[208];
        Array array;
    };

    Path path(const char* side, const char* file, const char* suffix) const {
        Path p;
        std::snprintf(p.text, sizeof p.text, "%s/%s/%s/%s%s", io_, side, name_, file, suffix);
        return p;
    }
    void out_dir() const {
        Path p;
        std::snprintf(p.text, sizeof p.text, "%s/out/%s", io_, name_);
        detail::make_dir(p.text);
    }
    void write(const char* name, const char* descr, const std::vector<int64_t>& shape, const void* data, size_t bytes) {
        if (!detail::valid_name(name)) throw CaseError("bad output name %s", name ? name : "(null)");
        out_dir();
        char head[1024];
        const size_t head_bytes = detail::npy_header(head, sizeof head, descr, shape);
        detail::write_file(path("out", name, ".npy").text, head, head_bytes, data, bytes);
    }
    template <class T>
    const Array& typed(const char* name) {
        const Array& a = array(name);
        const char* want = dtype_str<T>();
        // numpy writes one-byte types as |i1; <i1 means the same
        if (std::strcmp(a.descr, want) != 0 && std::strcmp(a.descr + 1, want + 1) != 0)
            throw CaseError("input %s has dtype %s, the runner reads %s", name, a.descr, want);
        return a;
    }

    char io_[512];
    char name_[256];
    std::vector<Loaded> loaded_;
};

using CaseFn = void (*)(Case&);

// Walk the manifest, calling `test` per case (or `perf` when argv[1] is --perf). A case that
// throws gets error.txt and the runner goes on. 0 when the manifest was walked, 2 without one.
inline int run(int argc, char** argv, CaseFn test, CaseFn perf = nullptr) {
    const bool is_perf = argc > 1 && std::strcmp(argv[1], "--perf") == 0;
    CaseFn fn = is_perf ? perf : test;
    const char* env = std::getenv("CUDAENV_IO");
    const char* io = env && *env ? env : ".cudaenv-io";
    char path[1024];
    std::snprintf(path, sizeof path, "%s/in/manifest.txt", io);
    struct stat st;
    if (::stat(path, &st) != 0) {
        std::fprintf(stderr, "cudaenv runner: no %s (the grader lays the inputs)\n", path);
        return 2;
    }
    std::vector<char> manifest = detail::read_file(path);
    manifest.push_back('\n');
    std::vector<const char*> names;  // each line, terminated in place
    for (size_t i = 0, start = 0; i < manifest.size(); ++i) {
        if (manifest[i] != '\n' && manifest[i] != '\r') continue;
        manifest[i] = '\0';
        if (i > start) names.push_back(&manifest[start]);
        start = i + 1;
    }
    std::snprintf(path, sizeof path, "%s/out", io);
    detail::make_dir(path);
    for (const char* name : names) {
        if (!detail::valid_name(name)) {
            std::fprintf(stderr, "cudaenv runner: skipping a bad case name\n");
            continue;
        }
        Case c(io, name);
        try {
            if (!fn) throw CaseError(is_perf ? "this runner has no perf cases" : "no test function");
            fn(c);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "case %s: %s\n", name, e.what());
            try {
                c.error(e.what());
            } catch (const std::exception&) {
            }
        }
    }
    std::printf("cudaenv runner: %zu case(s) run\n", names.size());
    return 0;
}

#if defined(__CUDACC__) || defined(__NVCC__)
// The NVTX range of one solution call: on a GPU the grader checks that each ran kernels.
constexpr const char* CALL_RANGE = "cudaenv_call";

// An NVTX range for its scope ("bench_region" is what a region-timed benchmark times).
struct Range {
    explicit Range(const char* name) : open_(name != nullptr) {
        if (open_) nvtxRangePushA(name);
    }
    ~Range() {
        if (open_) nvtxRangePop();
    }
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;

private:
    bool open_;
};

// One call of the solution, in a CALL_RANGE when it has work to do (a call on empty inputs
// may rightly launch nothing).
struct Call : Range {
    explicit Call(bool has_work = true) : Range(has_work ? CALL_RANGE : nullptr) {}
};

// A CUDA error becomes a failed case.
inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw CaseError("%s: CUDA error %s", what, cudaGetErrorString(e));
}

// After a solution call: a launch error or a fault in its kernels fails the case.
inline void sync(const char* what) {
    check(cudaGetLastError(), what);
    check(cudaDeviceSynchronize(), what);
}

// A device buffer of `count` T, freed with its scope; movable, not copyable.
template <class T>
class DeviceArray {
public:
    explicit DeviceArray(size_t count) : count_(count) {
        check(cudaMalloc(&ptr_, (count ? count : 1) * sizeof(T)), "cudaMalloc");
    }
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host.data(), host.size()); }
    DeviceArray(DeviceArray&& o) noexcept : ptr_(o.ptr_), count_(o.count_) { o.ptr_ = nullptr; }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    ~DeviceArray() {
        if (ptr_) cudaFree(ptr_);
    }

    T* get() const { return ptr_; }
    size_t size() const { return count_; }

    void upload(const T* host, size_t count, size_t offset = 0) {
        check(cudaMemcpy(ptr_ + offset, host, count * sizeof(T), cudaMemcpyHostToDevice), "upload");
    }
    // `count` elements from `offset`, back on the host (synchronous).
    std::vector<T> download(size_t count, size_t offset = 0) const {
        std::vector<T> host(count);
        if (count) check(cudaMemcpy(host.data(), ptr_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
        return host;
    }
    // Fill with the poison pattern: an element the solution never writes stays recognisable.
    void poison() {
        std::vector<T> host(count_, poison_value<T>());
        upload(host.data(), count_);
    }

private:
    T* ptr_ = nullptr;
    size_t count_;
};
#else
// Without CUDA (CPU-only problems) ranges are no-ops, so runners read the same either way.
constexpr const char* CALL_RANGE = "cudaenv_call";
struct Range {
    explicit Range(const char*) {}
};
struct Call {
    explicit Call(bool = true) {}
};
#endif

}  // namespace cudaenv
