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
// A runner is two functions and a main (see envs/cuda-kernels/fused-axpby/test/runner.cu):
//
//   #include "cudaenv_runner.h"
//   static void test_case(cudaenv::Case& c) {
//       std::vector<float> x = c.input<float>("x");        // dtype checked: <f4
//       const int n = c.scalar<int32_t>("n");
//       ... run the solution ...
//       c.output("y", y);                                 // out/<case>/y.npy
//   }
//   static void perf_case(cudaenv::Case& c) { ... }          // ./test.out --perf
//   int main(int argc, char** argv) { return cudaenv::run(argc, argv, test_case, perf_case); }
//
// It compiles with plain g++ (CPU-only problems); under nvcc it adds device helpers:
// DeviceArray<T> (RAII buffer: upload, download, poison), check()/sync() turning CUDA errors
// into a failed case, and NVTX ranges (Range; the timed region is "bench_region", and each
// solution call sits in a Call, a CALL_RANGE, so the grader can see that its work ran on the GPU).
// .npy files: little-endian, C order, dtypes <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <sys/stat.h>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace cudaenv {

// A case that cannot go on (bad input, a CUDA error): caught by run(), written to error.txt.
struct CaseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Raw IEEE half-precision bits (.npy <f2), usable without cuda_fp16.h.
struct Half {
    uint16_t bits;
};

// The numpy dtype string of T (what .npy headers say).
template <class T>
std::string dtype_str() {
    if (std::is_same<T, bool>::value) return "|b1";
    if (std::is_same<T, Half>::value) return "<f2";
    static_assert(std::is_arithmetic<T>::value || std::is_same<T, Half>::value,
                  "cudaenv: .npy arrays hold numbers");
    const char kind = std::is_floating_point<T>::value ? 'f' : std::is_signed<T>::value ? 'i' : 'u';
    return std::string(sizeof(T) == 1 ? "|" : "<") + kind + std::to_string(sizeof(T));
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
    std::string descr;
    std::vector<int64_t> shape;
    std::vector<char> data;
    int64_t count() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

namespace detail {

inline std::vector<char> read_file(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw CaseError("cannot open " + path + ": " + std::strerror(errno));
    std::vector<char> bytes;
    char chunk[1 << 16];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
    std::fclose(f);
    return bytes;
}

inline void write_file(const std::string& path, const std::string& head, const void* data, size_t bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    bool ok = f && std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
              (bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes);
    if (f) ok = std::fclose(f) == 0 && ok;
    if (!ok) throw CaseError("cannot write " + path);
}

inline void make_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        throw CaseError("cannot create " + path + ": " + std::strerror(errno));
}

// The text after `key` in a .npy header dict, e.g. value_after(h, "'descr'") -> " '<f4', ...".
inline std::string value_after(const std::string& header, const char* key) {
    size_t at = header.find(key);
    if (at == std::string::npos) throw CaseError(std::string("npy header lacks ") + key);
    size_t colon = header.find(':', at);
    if (colon == std::string::npos) throw CaseError("malformed npy header");
    return header.substr(colon + 1);
}

inline Array parse_npy(const std::vector<char>& bytes, const std::string& path) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
        throw CaseError(path + " is not a .npy file");
    const unsigned char* u = reinterpret_cast<const unsigned char*>(bytes.data());
    const bool wide = u[6] >= 2;  // format 2.0+: a 4-byte header length
    const size_t start = wide ? 12 : 10;
    const size_t hlen = wide ? (u[8] | u[9] << 8 | u[10] << 16 | (size_t)u[11] << 24) : (u[8] | u[9] << 8);
    if (bytes.size() < start + hlen) throw CaseError(path + ": truncated header");
    const std::string header(bytes.data() + start, hlen);
    Array a;
    std::string d = value_after(header, "'descr'");
    size_t q1 = d.find('\''), q2 = d.find('\'', q1 + 1);
    if (q1 == std::string::npos || q2 == std::string::npos) throw CaseError(path + ": bad descr");
    a.descr = d.substr(q1 + 1, q2 - q1 - 1);
    if (value_after(header, "'fortran_order'").find("False") > 8)
        throw CaseError(path + ": only C-order arrays are supported");
    std::string s = value_after(header, "'shape'");
    size_t open = s.find('('), close = s.find(')');
    if (open == std::string::npos || close == std::string::npos) throw CaseError(path + ": bad shape");
    for (size_t i = open + 1; i < close;) {
        while (i < close && (s[i] == ' ' || s[i] == ',')) ++i;
        if (i >= close) break;
        char* end = nullptr;
        const long long dim = std::strtoll(s.c_str() + i, &end, 10);
        if (end == s.c_str() + i || dim < 0) throw CaseError(path + ": bad shape");
        a.shape.push_back(dim);
        i = static_cast<size_t>(end - s.c_str());
    }
    const size_t item = a.descr.size() == 3 ? static_cast<size_t>(a.descr[2] - '0') : 0;
    if (item == 0 || (a.descr[0] != '<' && a.descr[0] != '|'))
        throw CaseError(path + ": unsupported dtype " + a.descr);
    if (bytes.size() - start - hlen != static_cast<size_t>(a.count()) * item)
        throw CaseError(path + ": data size does not match the header");
    a.data.assign(bytes.begin() + start + hlen, bytes.end());
    return a;
}

inline std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
    std::string dims;  // () for a scalar, (3,) for one dimension, (2, 3) for more
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    const size_t total = 10 + dict.size() + 1;  // magic, version, length, dict, newline
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::string head("\x93NUMPY\x01\x00", 8);
    head += static_cast<char>(dict.size() & 0xFF);
    head += static_cast<char>((dict.size() >> 8) & 0xFF);
    return head + dict;
}

inline bool valid_name(const std::string& name) {
    if (name.empty() || name[0] == '.') return false;
    for (char ch : name)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-')) return false;
    return true;
}

}  // namespace detail

// One case of the manifest: its inputs (read on first use) and where its outputs go.
class Case {
public:
    Case(std::string io, std::string name) : io_(std::move(io)), name_(std::move(name)) {}

    const std::string& name() const { return name_; }

    // Whether the case has an input called `input`.
    bool has(const char* input) const {
        struct stat st;
        return ::stat(in_path(input).c_str(), &st) == 0;
    }

    // The input `input` as read (dtype and shape in the Array); cached.
    const Array& array(const char* input) {
        for (auto& kv : loaded_)
            if (kv.first == input) return kv.second;
        const std::string path = in_path(input);
        loaded_.emplace_back(input, detail::parse_npy(detail::read_file(path), path));
        return loaded_.back().second;
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
        if (a.count() != 1) throw CaseError(std::string("input ") + name + " is not a scalar");
        T value;
        std::memcpy(&value, a.data.data(), sizeof(T));
        return value;
    }

    std::vector<int64_t> shape(const char* name) { return array(name).shape; }

    // Write out/<case>/<name>.npy from `count` elements at `data` (shape {count} unless given).
    template <class T>
    void output(const std::string& name, const T* data, size_t count, std::vector<int64_t> shape = {}) {
        if (!detail::valid_name(name)) throw CaseError("bad output name " + name);
        if (shape.empty()) shape.push_back(static_cast<int64_t>(count));
        out_dir();
        detail::write_file(io_ + "/out/" + name_ + "/" + name + ".npy",
                           detail::npy_header(dtype_str<T>(), shape), data, count * sizeof(T));
    }
    template <class T>
    void output(const std::string& name, const std::vector<T>& v, std::vector<int64_t> shape = {}) {
        output(name, v.data(), v.size(), std::move(shape));
    }
    // A 0-d output (a scalar result).
    template <class T>
    void output_scalar(const std::string& name, T value) {
        out_dir();
        detail::write_file(io_ + "/out/" + name_ + "/" + name + ".npy",
                           detail::npy_header(dtype_str<T>(), {}), &value, sizeof(T));
    }

    // error.txt: why the case could not finish (the checker reports it as the case's failure).
    void error(const std::string& message) {
        out_dir();
        const std::string text = message.substr(0, 1000) + "\n";
        detail::write_file(io_ + "/out/" + name_ + "/error.txt", text, nullptr, 0);
    }

private:
    std::string in_path(const char* input) const { return io_ + "/in/" + name_ + "/" + input + ".npy"; }
    void out_dir() { detail::make_dir(io_ + "/out/" + name_); }
    template <class T>
    const Array& typed(const char* name) {
        const Array& a = array(name);
        std::string want = dtype_str<T>();
        if (a.descr != want && !(a.descr[0] == '<' && want[0] == '|' && a.descr.substr(1) == want.substr(1)))
            throw CaseError(std::string("input ") + name + " has dtype " + a.descr + ", the runner reads " + want);
        return a;
    }

    std::string io_, name_;
    std::vector<std::pair<std::string, Array>> loaded_;
};

using CaseFn = void (*)(Case&);

// Walk the manifest, calling `test` per case (or `perf` when argv[1] is --perf). A case that
// throws gets error.txt and the runner goes on. 0 when the manifest was walked, 2 without one.
inline int run(int argc, char** argv, CaseFn test, CaseFn perf = nullptr) {
    const bool is_perf = argc > 1 && std::strcmp(argv[1], "--perf") == 0;
    CaseFn fn = is_perf ? perf : test;
    const char* env = std::getenv("CUDAENV_IO");
    const std::string io = env && *env ? env : ".cudaenv-io";
    FILE* manifest = std::fopen((io + "/in/manifest.txt").c_str(), "r");
    if (!manifest) {
        std::fprintf(stderr, "cudaenv runner: no %s/in/manifest.txt (the grader lays the inputs)\n", io.c_str());
        return 2;
    }
    std::vector<std::string> names;
    char line[512];
    while (std::fgets(line, sizeof line, manifest)) {
        std::string name(line);
        while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
        if (!name.empty()) names.push_back(name);
    }
    std::fclose(manifest);
    detail::make_dir(io + "/out");
    for (const std::string& name : names) {
        if (!detail::valid_name(name)) {
            std::fprintf(stderr, "cudaenv runner: skipping bad case name\n");
            continue;
        }
        Case c(io, name);
        try {
            if (!fn) throw CaseError(is_perf ? "this runner has no perf cases" : "no test function");
            fn(c);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "case %s: %s\n", name.c_str(), e.what());
            try {
                c.error(e.what());
            } catch (const std::exception&) {
            }
        }
    }
    std::printf("cudaenv runner: %zu case(s) run\n", names.size());
    return 0;
}

#if defined(__CUDACC__)
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
    if (e != cudaSuccess) throw CaseError(std::string(what) + ": CUDA error " + cudaGetErrorString(e));
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
