// cudaenv's timing profiler: a CUDA injection library (CUDA_INJECTION64_PATH) built by
// cudaenv.grading.profiler.build_profiler().
//
// Why it exists: rewards depend on GPU time, and that time must come from a tool the graded
// program cannot talk to, not from text it prints. The library records
//   * kernel, memcpy and memset durations (CUPTI Activity API),
//   * the CPU timestamp of every kernel launch call (CUPTI runtime/driver callbacks), and
//   * NVTX ranges with their names (CUPTI NVTX callbacks; NVTX_INJECTION64_PATH must name
//     this same library, whose InitializeInjectionNvtx2 hands NVTX to CUPTI),
// and at exit writes one JSON document to the path that was in CUDAENV_PROFILE_OUT.
//
// A kernel belongs to a range when its launch call happened inside the range (the way Nsight
// Systems projects NVTX ranges onto the GPU); when no launch timestamp is known, its GPU
// start time decides. All timestamps come from CUPTI's one clock (cuptiGetTimestamp).
//
// Seen on CUDA 13.0 / H200: CUPTI delivers no callback for nvtxRangePushW (the pop arrives and
// is counted in "unmatched_range_ends"); push/pop, start/end, Ex, domain and registered-string
// ranges all arrive, and graph kernels correlate with their cudaGraphLaunch call.
//
// Robustness rules: no exception leaves a callback, nothing is printed on stdout, a failure
// becomes {"error": ...} in the output, and the graded program keeps running regardless.
//
// L2 flush (timing hygiene): when CUDAENV_PROFILE_L2_FLUSH is "1" (or a byte count), each
// time a timed range opens (its name matches CUDAENV_PROFILE_L2_FLUSH_INCLUDE and not
// CUDAENV_PROFILE_L2_FLUSH_EXCLUDE, newline-separated fnmatch globs; no include: every range)
// and no other timed range is open, the library writes a buffer of max(2 x the device's L2,
// 64 MiB) with cuMemsetD8Async on a stream of its own and waits for it, before the range's
// start time is taken: inputs the program just uploaded are not in L2 when the timed work
// starts, and the flush is in neither the range's wall clock nor its kernel time. The buffer
// is allocated once per context; the flush's memsets are told apart by their stream and are
// reported under "l2_flush", never as the program's memsets. The driver is reached through
// dlsym on the already loaded libcuda (no link-time dependency); a range opened before CUDA
// has a context is not flushed (counted as skipped). Ranges only, not kernels: flushing
// between kernels would punish a solution whose kernels legitimately share data through L2.

#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#define CUDAENV_EXPORT extern "C" __attribute__((visibility("default")))

// Provided by libcupti: hand NVTX's export table to CUPTI so NVTX calls reach CUPTI callbacks.
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize(void* pfnGetExportTable);
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize2(void* pfnGetExportTable);

namespace {

// ---- l2 flush size (pure; tests compile this block alone) ---------------------------------
// What CUDAENV_PROFILE_L2_FLUSH asks for: 0 (off; also anything that is not a plain decimal
// number), 1 (the default size) or a byte count.
inline uint64_t l2_flush_request(const char* text) {
  if (text == nullptr || *text == 0) return 0;
  uint64_t value = 0;
  for (const char* c = text; *c != 0; ++c) {
    if (*c < '0' || *c > '9' || value > (UINT64_MAX - 9) / 10) return 0;
    value = value * 10 + static_cast<uint64_t>(*c - '0');
  }
  return value;
}

// The bytes one flush writes: a request of 1 means max(2 x L2, 64 MiB), which replaces every
// line even of an L2 split in two partitions (and of a device whose L2 size is unknown, 0);
// any other request is taken as the byte count.
inline uint64_t l2_flush_size(uint64_t request, uint64_t l2_bytes) {
  const uint64_t floor_bytes = 64ull << 20;
  if (request != 1) return request;
  return 2 * l2_bytes > floor_bytes ? 2 * l2_bytes : floor_bytes;
}
// ---- end l2 flush size --------------------------------------------------------------------

// Bounds that keep memory and the output file small whatever the program does.
constexpr size_t kMaxKernelEvents = 2000000;   // kept in memory for range attribution
constexpr size_t kMaxRangeEvents = 1000000;    // kept in memory
constexpr size_t kMaxKernelsListed = 10000;    // above this, kernels are written per name
constexpr size_t kMaxRangesListed = 10000;     // above this, ranges are written per name
constexpr size_t kMaxLaunchEntries = 4000000;  // correlation id -> launch timestamp
constexpr size_t kBufferSize = 8u << 20;
constexpr size_t kMaxNameLength = 4096;

struct KernelEvent {
  uint32_t name;
  uint64_t start;
  uint64_t end;
  uint64_t launch;  // 0 when unknown
};

struct RangeEvent {
  uint32_t name;
  uint64_t start;
  uint64_t end;  // 0 while open
  uint64_t kernel_ns;
  uint64_t kernel_count;
  bool timed;  // a range the L2 flush runs before (counted in g_open_timed while open)
};

struct NameTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
};

struct CopyTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t bytes = 0;
};

// What the L2 flush did (under State::mu); written as "l2_flush" when it was asked for.
struct FlushStats {
  uint64_t request = 0;   // 0: off, 1: default size, else bytes
  uint64_t bytes = 0;     // size of the last flush done
  uint64_t l2_bytes = 0;  // the device's L2 as the driver reports it
  uint64_t count = 0;     // flushes done (each waited for)
  uint64_t skipped = 0;   // timed ranges opened with no CUDA context to flush in
  uint64_t failures = 0;  // flushes a driver call refused
  uint64_t gpu_count = 0;  // flush memsets CUPTI recorded
  uint64_t gpu_ns = 0;     // their GPU time (not the program's)
  std::string error;       // the first failure
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  std::vector<std::pair<uint32_t, uint32_t>> streams;  // (CUPTI context id, stream id)
};

struct LaunchEntry {
  uint64_t timestamp;
  bool graph;  // a graph launch correlates with many kernels: keep the entry
};

struct State {
  std::mutex mu;
  std::string out_path;
  std::string nonce;
  std::string error;
  uint64_t process_start = 0;
  // kernels
  std::unordered_map<std::string, uint32_t> kernel_ids;
  std::vector<std::string> kernel_names;
  std::vector<NameTotals> kernel_totals;
  std::vector<KernelEvent> kernels;
  uint64_t kernels_dropped = 0;
  std::unordered_map<uint32_t, LaunchEntry> launches;
  uint64_t launches_dropped = 0;
  // copies: memcpy kinds by name, memset as "memset"
  std::map<std::string, CopyTotals> copies;
  // ranges
  std::unordered_map<std::string, uint32_t> range_ids;
  std::vector<std::string> range_names;
  std::vector<RangeEvent> ranges;
  std::unordered_map<uint64_t, size_t> started;  // nvtxRangeStart id -> index in ranges
  std::unordered_map<uint64_t, std::string> registered;  // nvtxStringHandle_t -> text
  uint64_t ranges_dropped = 0;
  uint64_t unmatched_ends = 0;
  uint64_t cupti_dropped = 0;
  FlushStats flush;
};

State* g_state = nullptr;  // leaked on purpose: must outlive static destructors
std::atomic<bool> g_initialised{false};
std::atomic<bool> g_written{false};
std::once_flag g_init_once;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<int> g_open_timed{0};  // timed ranges open now: a nested one is not flushed again

// Per thread and per NVTX domain stack of open push/pop ranges (indices into ranges, or
// SIZE_MAX for a range that was dropped by the bound).
thread_local std::vector<std::pair<const void*, std::vector<size_t>>>* t_stacks = nullptr;

uint64_t now_ns() {
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) return 0;
  return ts;
}

const char* cupti_error(CUptiResult res) {
  const char* text = nullptr;
  if (cuptiGetResultString(res, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown";
  return text;
}

// Read a variable once and remove every trace of it from the environment, so that the
// profiled program cannot learn where the profile goes or the nonce that authenticates it.
// The bytes are overwritten in place as well: /proc/self/environ shows the original block.
std::string take_env(const char* name) {
  char* value = getenv(name);
  if (value == nullptr) return std::string();
  std::string copy(value);
  memset(value, 'x', strlen(value));
  unsetenv(name);
  return copy;
}

std::string demangle(const char* raw) {
  if (raw == nullptr) return std::string("<unknown>");
  int status = -1;
  char* out = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  std::string result = (status == 0 && out != nullptr) ? std::string(out) : std::string(raw);
  free(out);
  return result;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x110000) {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += '?';
  }
}

std::string from_ascii(const char* text) {
  if (text == nullptr) return std::string();
  return std::string(text, strnlen(text, kMaxNameLength));
}

std::string from_wide(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  for (size_t i = 0; text[i] != 0 && i < kMaxNameLength; ++i) {
    append_utf8(out, static_cast<uint32_t>(text[i]));
  }
  return out;
}

// The range name carried by NVTX event attributes (caller holds the lock).
std::string message_of(const nvtxEventAttributes_t* attr) {
  if (attr == nullptr) return std::string();
  const size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof(attr->message);
  if (attr->size < need) return std::string();
  switch (attr->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return from_ascii(attr->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return from_wide(attr->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      auto it = g_state->registered.find(reinterpret_cast<uint64_t>(attr->message.registered));
      return it == g_state->registered.end() ? std::string() : it->second;
    }
    default:
      return std::string();
  }
}

uint32_t intern(std::unordered_map<std::string, uint32_t>& ids, std::vector<std::string>& names,
                const std::string& name) {
  auto it = ids.find(name);
  if (it != ids.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(names.size());
  names.push_back(name);
  ids.emplace(name, id);
  return id;
}

// ---- NVTX ------------------------------------------------------------------------------

std::vector<size_t>& stack_for(const void* domain) {
  if (t_stacks == nullptr) t_stacks = new std::vector<std::pair<const void*, std::vector<size_t>>>();
  for (auto& entry : *t_stacks) {
    if (entry.first == domain) return entry.second;
  }
  t_stacks->emplace_back(domain, std::vector<size_t>());
  return t_stacks->back().second;
}

// Open a range (caller holds the lock); returns its index or SIZE_MAX when over the bound.
size_t open_range(const std::string& name, bool timed, uint64_t ts) {
  State& s = *g_state;
  if (s.ranges.size() >= kMaxRangeEvents) {
    ++s.ranges_dropped;
    return SIZE_MAX;
  }
  const uint32_t id = intern(s.range_ids, s.range_names, name);
  s.ranges.push_back(RangeEvent{id, ts, 0, 0, 0, timed});
  if (timed) g_open_timed.fetch_add(1);
  return s.ranges.size() - 1;
}

void close_range(size_t index, uint64_t ts) {
  if (index == SIZE_MAX || index >= g_state->ranges.size()) return;
  RangeEvent& r = g_state->ranges[index];
  if (r.end != 0) return;
  r.end = std::max(ts, r.start);
  if (r.timed) g_open_timed.fetch_sub(1);
}

void push(const void* domain, const std::string& name, bool timed, uint64_t ts) {
  std::vector<size_t>& stack = stack_for(domain);
  stack.push_back(open_range(name, timed, ts));
}

void pop(const void* domain, uint64_t ts) {
  std::vector<size_t>& stack = stack_for(domain);
  if (stack.empty()) {
    ++g_state->unmatched_ends;
    return;
  }
  close_range(stack.back(), ts);
  stack.pop_back();
}

void start_range(const std::string& name, bool timed, const void* return_value, uint64_t ts) {
  const size_t index = open_range(name, timed, ts);
  if (return_value == nullptr) return;
  const nvtxRangeId_t id = *static_cast<const nvtxRangeId_t*>(return_value);
  g_state->started[static_cast<uint64_t>(id)] = index;
}

void end_range(nvtxRangeId_t id, uint64_t ts) {
  auto it = g_state->started.find(static_cast<uint64_t>(id));
  if (it == g_state->started.end()) {
    ++g_state->unmatched_ends;
    return;
  }
  close_range(it->second, ts);
  g_state->started.erase(it);
}

// ---- L2 flush ------------------------------------------------------------------------------

// The driver entry points the flush needs, found in the libcuda the process already loaded.
struct Driver {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned int) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*exchange_capture_mode)(CUstreamCaptureMode*) = nullptr;  // may be missing
  bool ready = false;
};

// One context's flush buffer and stream (failed: never tried again in that context).
struct FlushTarget {
  CUcontext ctx = nullptr;
  CUdeviceptr buffer = 0;
  size_t bytes = 0;
  uint64_t l2_bytes = 0;
  CUstream stream = nullptr;
  bool failed = false;
};

std::mutex g_flush_mu;  // taken before State::mu, never after it
Driver g_driver;
std::vector<FlushTarget>* g_targets = nullptr;

template <typename Fn>
bool resolve(void* lib, const char* name, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(lib, name));
  return out != nullptr;
}

// Caller holds g_flush_mu. False while libcuda is not loaded (NVTX before CUDA).
bool driver_ready() {
  if (g_driver.ready) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return false;
  Driver d;
  const bool ok = resolve(lib, "cuCtxGetCurrent", d.ctx_get_current) &&
                  resolve(lib, "cuCtxGetDevice", d.ctx_get_device) &&
                  resolve(lib, "cuDeviceGetAttribute", d.device_get_attribute) &&
                  resolve(lib, "cuMemAlloc_v2", d.mem_alloc) &&
                  resolve(lib, "cuMemsetD8Async", d.memset_d8_async) &&
                  resolve(lib, "cuStreamCreate", d.stream_create) &&
                  resolve(lib, "cuStreamSynchronize", d.stream_synchronize);
  resolve(lib, "cuThreadExchangeStreamCaptureMode", d.exchange_capture_mode);
  if (!ok) return false;
  d.ready = true;
  g_driver = d;
  return true;
}

void flush_failed(const std::string& what, int code) {
  std::lock_guard<std::mutex> lock(g_state->mu);
  ++g_state->flush.failures;
  std::string& error = g_state->flush.error;
  if (error.empty()) error = what + " failed: CUresult " + std::to_string(code);
}

// This context's target, set up on first use (caller holds g_flush_mu); nullptr when failed.
FlushTarget* target_for(CUcontext ctx) {
  if (g_targets == nullptr) g_targets = new std::vector<FlushTarget>();
  for (FlushTarget& t : *g_targets) {
    if (t.ctx == ctx) return t.failed ? nullptr : &t;
  }
  g_targets->push_back(FlushTarget());
  FlushTarget& t = g_targets->back();
  t.ctx = ctx;
  t.failed = true;
  CUdevice device = 0;
  int l2 = 0;
  const CUdevice_attribute l2_size = CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
  if (g_driver.ctx_get_device(&device) != CUDA_SUCCESS ||
      g_driver.device_get_attribute(&l2, l2_size, device) != CUDA_SUCCESS) {
    l2 = 0;  // unknown: the size rule's floor still applies
  }
  t.l2_bytes = l2 > 0 ? static_cast<uint64_t>(l2) : 0;
  t.bytes = static_cast<size_t>(l2_flush_size(g_state->flush.request, t.l2_bytes));
  CUresult res = g_driver.mem_alloc(&t.buffer, t.bytes);
  if (res != CUDA_SUCCESS) {
    flush_failed("cuMemAlloc(" + std::to_string(t.bytes) + ")", res);
    return nullptr;
  }
  res = g_driver.stream_create(&t.stream, CU_STREAM_NON_BLOCKING);
  if (res != CUDA_SUCCESS) {
    flush_failed("cuStreamCreate", res);
    return nullptr;
  }
  uint32_t context_id = 0, stream_id = 0;
  CUptiResult cres = cuptiGetContextId(ctx, &context_id);
  if (cres == CUPTI_SUCCESS) cres = cuptiGetStreamIdEx(ctx, t.stream, 0, &stream_id);
  if (cres != CUPTI_SUCCESS) {
    // without its stream id the flush would be counted as the program's memsets
    flush_failed("cuptiGetStreamIdEx", static_cast<int>(cres));
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(g_state->mu);
    g_state->flush.streams.emplace_back(context_id, stream_id);
  }
  t.failed = false;
  return &t;
}

// Write the flush buffer of the calling thread's context and wait for it. The thread's stream
// capture mode is relaxed meanwhile, so a capture in progress elsewhere is not invalidated.
void flush_l2() {
  std::lock_guard<std::mutex> flush_lock(g_flush_mu);
  CUcontext ctx = nullptr;
  if (!driver_ready() || g_driver.ctx_get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
    std::lock_guard<std::mutex> lock(g_state->mu);
    ++g_state->flush.skipped;
    return;
  }
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  const bool exchanged = g_driver.exchange_capture_mode != nullptr &&
                         g_driver.exchange_capture_mode(&mode) == CUDA_SUCCESS;
  FlushTarget* t = target_for(ctx);
  if (t != nullptr) {
    uint64_t count = 0;
    {
      std::lock_guard<std::mutex> lock(g_state->mu);
      count = g_state->flush.count;
    }
    // a different byte each time: no flush finds its buffer already holding its value
    CUresult res = g_driver.memset_d8_async(t->buffer, static_cast<unsigned char>(count + 1),
                                            t->bytes, t->stream);
    if (res == CUDA_SUCCESS) res = g_driver.stream_synchronize(t->stream);
    if (res != CUDA_SUCCESS) {
      flush_failed("cuMemsetD8Async/cuStreamSynchronize", res);
    } else {
      std::lock_guard<std::mutex> lock(g_state->mu);
      ++g_state->flush.count;
      g_state->flush.bytes = t->bytes;
      g_state->flush.l2_bytes = t->l2_bytes;
    }
  }
  if (exchanged) g_driver.exchange_capture_mode(&mode);
}

bool glob_hit(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& pattern : patterns) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

// Whether a range of this name is timed, i.e. flushed before (the grader's include/exclude).
bool timed_name(const std::string& name) {
  const FlushStats& f = g_state->flush;
  if (f.request == 0) return false;
  if (!f.include.empty() && !glob_hit(f.include, name)) return false;
  return !glob_hit(f.exclude, name);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// ---- NVTX callbacks ------------------------------------------------------------------------

// The name of the range this callback opens; false for a callback that opens none (caller
// holds the lock: registered strings are looked up).
bool opened_name(CUpti_CallbackId cbid, const void* p, std::string& name) {
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      name = from_ascii(static_cast<const nvtxRangePushA_params*>(p)->message);
      return true;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      name = from_wide(static_cast<const nvtxRangePushW_params*>(p)->message);
      return true;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      name = message_of(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib);
      return true;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      name = message_of(static_cast<const nvtxDomainRangePushEx_params*>(p)->core.eventAttrib);
      return true;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      name = from_ascii(static_cast<const nvtxRangeStartA_params*>(p)->message);
      return true;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
      name = from_wide(static_cast<const nvtxRangeStartW_params*>(p)->message);
      return true;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      name = message_of(static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib);
      return true;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      name = message_of(static_cast<const nvtxDomainRangeStartEx_params*>(p)->core.eventAttrib);
      return true;
    default:
      return false;
  }
}

void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  const void* p = data->functionParams;
  if (p == nullptr) return;
  std::string name;
  bool opens = false, timed = false;
  {
    std::lock_guard<std::mutex> lock(g_state->mu);
    opens = opened_name(cbid, p, name);
    timed = opens && timed_name(name);
  }
  // outside the lock (the driver may deliver activity buffers meanwhile), before the timestamp
  if (timed && g_open_timed.load() == 0) flush_l2();
  const uint64_t ts = now_ns();
  std::lock_guard<std::mutex> lock(g_state->mu);
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
    case CUPTI_CBID_NVTX_nvtxRangePushW:
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      push(nullptr, name, timed, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
      pop(nullptr, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      push(static_cast<const nvtxDomainRangePushEx_params*>(p)->domain, name, timed, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      pop(static_cast<const nvtxDomainRangePop_params*>(p)->domain, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      start_range(name, timed, data->functionReturnValue, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      end_range(static_cast<const nvtxRangeEnd_params*>(p)->id, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      end_range(static_cast<const nvtxDomainRangeEnd_params*>(p)->core.id, ts);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      const auto* q = static_cast<const nvtxDomainRegisterStringA_params*>(p);
      if (data->functionReturnValue != nullptr) {
        const auto handle = *static_cast<const nvtxStringHandle_t*>(data->functionReturnValue);
        g_state->registered[reinterpret_cast<uint64_t>(handle)] = from_ascii(q->string);
      }
      break;
    }
    default:
      break;
  }
}

// ---- launches ----------------------------------------------------------------------------

void on_launch(const CUpti_CallbackData* data) {
  if (data->callbackSite != CUPTI_API_ENTER) return;
  const uint64_t ts = now_ns();
  const char* fn = data->functionName != nullptr ? data->functionName : "";
  const bool graph = strstr(fn, "Graph") != nullptr;
  std::lock_guard<std::mutex> lock(g_state->mu);
  if (g_state->launches.size() >= kMaxLaunchEntries) {
    ++g_state->launches_dropped;
    return;
  }
  g_state->launches[data->correlationId] = LaunchEntry{ts, graph};
}

void CUPTIAPI on_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* cbdata) {
  if (g_state == nullptr || cbdata == nullptr || g_written.load()) return;
  try {
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
      on_nvtx(cbid, static_cast<const CUpti_NvtxData*>(cbdata));
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      on_launch(static_cast<const CUpti_CallbackData*>(cbdata));
    }
  } catch (...) {
    // Out of memory or similar: losing one event beats crashing the graded program.
  }
}

// Enable callbacks for every API whose name says it launches kernels (cudaLaunchKernel,
// cuLaunchKernelEx, cudaGraphLaunch, ...), found by name so new toolkits' variants count too.
CUptiResult enable_launch_callbacks(CUpti_CallbackDomain domain, uint32_t size) {
  for (uint32_t cbid = 1; cbid < size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    if (strstr(name, "Launch") == nullptr || strstr(name, "HostFunc") != nullptr) continue;
    CUptiResult res = cuptiEnableCallback(1, g_subscriber, domain, cbid);
    if (res != CUPTI_SUCCESS) return res;
  }
  return CUPTI_SUCCESS;
}

// ---- activity ----------------------------------------------------------------------------

const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}


pid_t g_pid = 0;
std::atomic<int> g_init_state{0};  // 0: not started, 1: in progress, 2: done

// Record one kernel (caller holds the lock).
void record_kernel(const CUpti_ActivityKernel10* k) {
  State& s = *g_state;
  const uint64_t dur = k->end > k->start ? k->end - k->start : 0;
  const uint32_t id =
      intern(s.kernel_ids, s.kernel_names, k->name != nullptr ? from_ascii(k->name) : "<unknown>");
  if (s.kernel_totals.size() <= id) s.kernel_totals.resize(id + 1);
  s.kernel_totals[id].count += 1;
  s.kernel_totals[id].total_ns += dur;
  uint64_t launch = 0;
  auto it = s.launches.find(k->correlationId);
  if (it != s.launches.end()) {
    launch = it->second.timestamp;
    if (!it->second.graph) s.launches.erase(it);
  }
  if (s.kernels.size() >= kMaxKernelEvents) {
    ++s.kernels_dropped;
    return;
  }
  s.kernels.push_back(KernelEvent{id, k->start, std::max(k->end, k->start), launch});
}

void record_copy(const char* kind, uint64_t start, uint64_t end, uint64_t bytes) {
  CopyTotals& c = g_state->copies[kind];
  c.count += 1;
  c.total_ns += end > start ? end - start : 0;
  c.bytes += bytes;
}

// A memset on one of the flush's own streams (caller holds the lock).
bool is_flush(uint32_t context_id, uint32_t stream_id) {
  for (const auto& s : g_state->flush.streams) {
    if (s.first == context_id && s.second == stream_id) return true;
  }
  return false;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferSize));
  *size = *buffer != nullptr ? kBufferSize : 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  if (g_state != nullptr && buffer != nullptr && valid_size > 0) {
    try {
      std::lock_guard<std::mutex> lock(g_state->mu);
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
          case CUPTI_ACTIVITY_KIND_KERNEL:
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            record_kernel(reinterpret_cast<const CUpti_ActivityKernel10*>(record));
            break;
          case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            record_copy(copy_kind(m->copyKind), m->start, m->end, m->bytes);
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMSET: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
            if (is_flush(m->contextId, m->streamId)) {
              ++g_state->flush.gpu_count;
              g_state->flush.gpu_ns += m->end > m->start ? m->end - m->start : 0;
            } else {
              record_copy("memset", m->start, m->end, m->bytes);
            }
            break;
          }
          default:
            break;
        }
      }
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) {
        g_state->cupti_dropped += dropped;
      }
    } catch (...) {
      // Keep the program alive; the dropped counters already make the profile suspect.
    }
  }
  free(buffer);
}

// ---- output ------------------------------------------------------------------------------

void json_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_key(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

void json_uint(std::string& out, const char* key, uint64_t value) {
  json_key(out, key);
  out += std::to_string(value);
}

uint64_t attribution_time(const KernelEvent& k) { return k.launch != 0 ? k.launch : k.start; }

// Add each kernel's duration to every range open at its launch (or GPU start) time, and to
// each range name once (the per-name union used when ranges are written per name).
// Returns false when the work would be unreasonable (pathological overlapping ranges).
bool attribute(std::vector<uint64_t>& name_kernel_ns) {
  State& s = *g_state;
  std::vector<size_t> korder(s.kernels.size());
  for (size_t i = 0; i < korder.size(); ++i) korder[i] = i;
  std::sort(korder.begin(), korder.end(), [&](size_t a, size_t b) {
    return attribution_time(s.kernels[a]) < attribution_time(s.kernels[b]);
  });
  std::vector<size_t> rorder(s.ranges.size());
  for (size_t i = 0; i < rorder.size(); ++i) rorder[i] = i;
  std::sort(rorder.begin(), rorder.end(),
            [&](size_t a, size_t b) { return s.ranges[a].start < s.ranges[b].start; });
  name_kernel_ns.assign(s.range_names.size(), 0);
  std::vector<size_t> active;
  std::vector<uint32_t> names_seen;
  size_t next = 0;
  uint64_t work = 0;
  for (size_t ki : korder) {
    const KernelEvent& k = s.kernels[ki];
    const uint64_t t = attribution_time(k);
    while (next < rorder.size() && s.ranges[rorder[next]].start <= t) active.push_back(rorder[next++]);
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](size_t r) { return s.ranges[r].end < t; }),
                 active.end());
    work += active.size() + 1;
    if (work > 500000000ull) return false;
    const uint64_t dur = k.end - k.start;
    names_seen.clear();
    for (size_t r : active) {
      RangeEvent& range = s.ranges[r];
      range.kernel_ns += dur;
      range.kernel_count += 1;
      if (std::find(names_seen.begin(), names_seen.end(), range.name) == names_seen.end()) {
        names_seen.push_back(range.name);
        name_kernel_ns[range.name] += dur;
      }
    }
  }
  return true;
}

void write_kernels(std::string& out, bool aggregated) {
  State& s = *g_state;
  std::vector<std::string> demangled(s.kernel_names.size());
  for (size_t i = 0; i < s.kernel_names.size(); ++i) demangled[i] = demangle(s.kernel_names[i].c_str());
  auto name_fields = [&](uint32_t id) {
    json_key(out, "name");
    json_string(out, demangled[id]);
    if (demangled[id] != s.kernel_names[id]) {
      out += ',';
      json_key(out, "mangled");
      json_string(out, s.kernel_names[id]);
    }
  };
  out += aggregated ? "\"kernels_aggregated\":true" : "\"kernels_aggregated\":false";
  out += ",\"kernels\":[";
  bool first = true;
  if (aggregated) {
    for (uint32_t id = 0; id < s.kernel_totals.size(); ++id) {
      if (!first) out += ',';
      first = false;
      out += '{';
      name_fields(id);
      out += ',';
      json_uint(out, "count", s.kernel_totals[id].count);
      out += ',';
      json_uint(out, "total_ns", s.kernel_totals[id].total_ns);
      out += '}';
    }
  } else {
    for (const KernelEvent& k : s.kernels) {
      if (!first) out += ',';
      first = false;
      out += '{';
      name_fields(k.name);
      out += ',';
      json_uint(out, "start_ns", k.start);
      out += ',';
      json_uint(out, "end_ns", k.end);
      if (k.launch != 0) {
        out += ',';
        json_uint(out, "launch_ns", k.launch);
      }
      out += '}';
    }
  }
  out += ']';
}

void write_ranges(std::string& out, const std::vector<uint64_t>& name_kernel_ns, bool aggregated) {
  State& s = *g_state;
  out += aggregated ? "\"ranges_aggregated\":true" : "\"ranges_aggregated\":false";
  out += ",\"ranges\":[";
  bool first = true;
  auto emit = [&](uint32_t name, uint64_t start, uint64_t end, uint64_t wall, uint64_t kernel_ns,
                  uint64_t kernel_count, uint64_t count) {
    if (!first) out += ',';
    first = false;
    out += '{';
    json_key(out, "name");
    json_string(out, s.range_names[name]);
    out += ',';
    json_uint(out, "start_ns", start);
    out += ',';
    json_uint(out, "end_ns", end);
    out += ',';
    json_uint(out, "wall_ns", wall);
    out += ',';
    json_uint(out, "kernel_ns", kernel_ns);
    out += ',';
    json_uint(out, "kernel_count", kernel_count);
    out += ',';
    json_uint(out, "count", count);
    out += '}';
  };
  if (!aggregated) {
    for (const RangeEvent& r : s.ranges) {
      emit(r.name, r.start, r.end, r.end - r.start, r.kernel_ns, r.kernel_count, 1);
    }
  } else {
    struct Agg {
      uint64_t start = UINT64_MAX, end = 0, wall = 0, kernel_count = 0, count = 0;
    };
    std::vector<Agg> agg(s.range_names.size());
    for (const RangeEvent& r : s.ranges) {
      Agg& a = agg[r.name];
      a.start = std::min(a.start, r.start);
      a.end = std::max(a.end, r.end);
      a.wall += r.end - r.start;
      a.kernel_count += r.kernel_count;
      a.count += 1;
    }
    for (uint32_t id = 0; id < agg.size(); ++id) {
      if (agg[id].count == 0) continue;
      emit(id, agg[id].start, agg[id].end, agg[id].wall, name_kernel_ns[id], agg[id].kernel_count,
           agg[id].count);
    }
  }
  out += ']';
}

void write_flush(std::string& out) {
  const FlushStats& f = g_state->flush;
  if (f.request == 0) return;
  out += "\"l2_flush\":{";
  json_uint(out, "request", f.request);
  out += ',';
  json_uint(out, "bytes", f.bytes);
  out += ',';
  json_uint(out, "l2_bytes", f.l2_bytes);
  out += ',';
  json_uint(out, "count", f.count);
  out += ',';
  json_uint(out, "skipped", f.skipped);
  out += ',';
  json_uint(out, "failures", f.failures);
  out += ',';
  json_uint(out, "gpu_count", f.gpu_count);
  out += ',';
  json_uint(out, "gpu_ns", f.gpu_ns);
  if (!f.error.empty()) {
    out += ',';
    json_key(out, "error");
    json_string(out, f.error);
  }
  out += "},";
}

// Build the whole document (caller holds the lock).
std::string build_document(uint64_t end_ns) {
  State& s = *g_state;
  std::string out;
  out.reserve(1u << 16);
  out += "{\"version\":1,";
  json_key(out, "nonce");
  json_string(out, s.nonce);
  out += ',';
  if (!s.error.empty()) {
    json_key(out, "error");
    json_string(out, s.error);
    out += '}';
    out += '\n';
    return out;
  }
  out += "\"process\":{";
  json_uint(out, "start_ns", s.process_start);
  out += ',';
  json_uint(out, "end_ns", std::max(end_ns, s.process_start));
  out += "},";
  for (RangeEvent& r : s.ranges) {
    if (r.end == 0) r.end = std::max(end_ns, r.start);  // never closed: ends at exit
  }
  std::vector<uint64_t> name_kernel_ns;
  const bool complete = attribute(name_kernel_ns);
  uint64_t kernel_count = 0;
  for (const NameTotals& t : s.kernel_totals) kernel_count += t.count;
  write_kernels(out, s.kernels_dropped > 0 || kernel_count > kMaxKernelsListed);
  out += ",\"memcpy\":[";
  bool first = true;
  for (const auto& entry : s.copies) {
    if (!first) out += ',';
    first = false;
    out += '{';
    json_key(out, "kind");
    json_string(out, entry.first);
    out += ',';
    json_uint(out, "count", entry.second.count);
    out += ',';
    json_uint(out, "total_ns", entry.second.total_ns);
    out += ',';
    json_uint(out, "bytes", entry.second.bytes);
    out += '}';
  }
  out += "],";
  write_flush(out);
  write_ranges(out, name_kernel_ns, s.ranges_dropped > 0 || s.ranges.size() > kMaxRangesListed);
  out += complete ? ",\"ranges_complete\":true" : ",\"ranges_complete\":false";
  out += ",\"dropped\":{";
  json_uint(out, "kernels", s.kernels_dropped);
  out += ',';
  json_uint(out, "ranges", s.ranges_dropped);
  out += ',';
  json_uint(out, "launches", s.launches_dropped);
  out += ',';
  json_uint(out, "records", s.cupti_dropped);
  out += ',';
  json_uint(out, "unmatched_range_ends", s.unmatched_ends);
  out += "}}\n";
  return out;
}

// Write atomically: a reader sees the old file or the whole new one, never half of it.
void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long long>(getpid()));
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  ok = (close(fd) == 0) && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

void finalize() {
  if (g_state == nullptr || getpid() != g_pid || g_written.exchange(true)) return;
  try {
    const uint64_t end_ns = now_ns();
    if (g_state->error.empty()) {
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    std::lock_guard<std::mutex> lock(g_state->mu);
    write_file(g_state->out_path, build_document(end_ns));
  } catch (...) {
    // Nothing sensible is left to do; the grader reports the missing profile.
  }
}

std::string setup_cupti() {
  CUptiResult res = cuptiSubscribe(&g_subscriber, on_callback, nullptr);
  if (res != CUPTI_SUCCESS) return std::string("cuptiSubscribe: ") + cupti_error(res);
  res = cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_NVTX);
  if (res != CUPTI_SUCCESS) return std::string("cuptiEnableDomain(NVTX): ") + cupti_error(res);
  res = enable_launch_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  if (res != CUPTI_SUCCESS) return std::string("runtime launch callbacks: ") + cupti_error(res);
  res = enable_launch_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  if (res != CUPTI_SUCCESS) return std::string("driver launch callbacks: ") + cupti_error(res);
  res = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (res != CUPTI_SUCCESS) return std::string("cuptiActivityRegisterCallbacks: ") + cupti_error(res);
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                      CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
  for (CUpti_ActivityKind kind : kinds) {
    res = cuptiActivityEnable(kind);
    if (res != CUPTI_SUCCESS) {
      return std::string("cuptiActivityEnable(") + std::to_string(static_cast<int>(kind)) +
             "): " + cupti_error(res);
    }
  }
  return std::string();
}

// Set everything up once, whichever entry point (CUDA or NVTX injection) comes first. A
// second caller during setup returns at once instead of waiting: setup itself may initialise
// CUDA, which calls InitializeInjection again on the same thread.
void initialise() {
  int expected = 0;
  if (!g_init_state.compare_exchange_strong(expected, 1)) return;
  try {
    State* state = new State();
    state->out_path = take_env("CUDAENV_PROFILE_OUT");
    state->nonce = take_env("CUDAENV_PROFILE_NONCE");
    state->flush.request = l2_flush_request(take_env("CUDAENV_PROFILE_L2_FLUSH").c_str());
    state->flush.include = split_lines(take_env("CUDAENV_PROFILE_L2_FLUSH_INCLUDE"));
    state->flush.exclude = split_lines(take_env("CUDAENV_PROFILE_L2_FLUSH_EXCLUDE"));
    if (state->out_path.empty()) {
      // Not ours to profile (e.g. a child process that inherited the injection variables).
      delete state;
      g_init_state.store(2);
      return;
    }
    g_pid = getpid();
    g_state = state;
    state->process_start = now_ns();
    state->error = setup_cupti();
    if (!state->error.empty()) {
      if (g_subscriber != nullptr) cuptiUnsubscribe(g_subscriber);
      std::lock_guard<std::mutex> lock(state->mu);
      write_file(state->out_path, build_document(state->process_start));
    }
    atexit(finalize);
  } catch (...) {
    // Out of memory at start-up: run the program unprofiled; the grader sees no profile.
  }
  g_init_state.store(2);
}

}  // namespace

CUDAENV_EXPORT int InitializeInjection(void) {
  initialise();
  return 1;
}

CUDAENV_EXPORT int InitializeInjectionNvtx(void* get_export_table) {
  initialise();
  return cuptiNvtxInitialize(get_export_table) == CUPTI_SUCCESS ? 1 : 0;
}

CUDAENV_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  initialise();
  return cuptiNvtxInitialize2(get_export_table) == CUPTI_SUCCESS ? 1 : 0;
}
