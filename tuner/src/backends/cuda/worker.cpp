// The GPU worker process: owns the CUDA context, the kernel's buffers, its inputs and the
// reference output. For each configuration it loads the CUBIN, checks resources before
// launching, verifies the output against the reference on poisoned outputs, and times it.
// A fault that poisons the context ends the process after answering; the tuner starts another.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <list>
#include <optional>
#include <thread>

#include "process/ipc.h"
#include "ktune/cuda_backend.h"
#include "ktune/gpu_evaluator.h"
#include "backends/cuda/protocol.h"
#include "ktune/error.h"
#include "ktune/expr.h"
#include "ktune/hash.h"
#include "ktune/registry.h"
#include "backends/stats.h"

namespace ktune {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kRequestFd = 3;
constexpr int kReplyFd = 4;

// A CUDA call failed. `sticky` errors leave the context unusable: the worker must exit.
struct CudaFailure {
  cudaError_t code;
  std::string where;
};

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

void check(cudaError_t e, const char* where) {
  if (e != cudaSuccess) throw CudaFailure{e, where};
}

std::string cuda_text(cudaError_t e) {
  return fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
}

// Counter-based generator: the value of element i depends only on (seed, buffer, i), so
// inputs are the same in every worker and can be regenerated anywhere.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

using InitSpec = BufferInit;

template <typename T>
void fill_typed(T* data, std::size_t begin, std::size_t end, const InitSpec& s, std::uint64_t stream) {
  for (std::size_t i = begin; i < end; ++i) {
    switch (s.kind) {
      case InitSpec::Kind::kIota: data[i] = static_cast<T>(i); break;
      case InitSpec::Kind::kValue: data[i] = static_cast<T>(s.value); break;
      default: {
        const std::uint64_t r = mix(stream ^ mix(i));
        if constexpr (std::is_floating_point_v<T>) {
          const double u = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
          const double lo = s.has_range ? s.lo : -1.0, hi = s.has_range ? s.hi : 1.0;
          data[i] = static_cast<T>(lo + (hi - lo) * u);
        } else {
          // Integers in [lo, hi], never all zero: the default range is [-100, 100] ([0, 200]
          // for unsigned types).
          const double lo0 = s.has_range ? s.lo : (std::is_signed_v<T> ? -100.0 : 0.0);
          const double hi0 = s.has_range ? s.hi : (std::is_signed_v<T> ? 100.0 : 200.0);
          const auto lo = static_cast<std::int64_t>(std::ceil(lo0));
          const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(hi0)) - lo + 1);
          data[i] = static_cast<T>(lo + static_cast<std::int64_t>(r % span));
        }
      }
    }
  }
}

void fill(void* data, ElemType type, std::size_t count, const InitSpec& s, std::uint64_t stream) {
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::size_t chunk = std::max<std::size_t>(1 << 20, (count + threads - 1) / threads);
  std::vector<std::thread> pool;
  for (std::size_t begin = 0; begin < count; begin += chunk) {
    const std::size_t end = std::min(count, begin + chunk);
    pool.emplace_back([=] {
      switch (type) {
        case ElemType::kI8: fill_typed(static_cast<std::int8_t*>(data), begin, end, s, stream); break;
        case ElemType::kU8: fill_typed(static_cast<std::uint8_t*>(data), begin, end, s, stream); break;
        case ElemType::kI16: fill_typed(static_cast<std::int16_t*>(data), begin, end, s, stream); break;
        case ElemType::kU16: fill_typed(static_cast<std::uint16_t*>(data), begin, end, s, stream); break;
        case ElemType::kI32: fill_typed(static_cast<std::int32_t*>(data), begin, end, s, stream); break;
        case ElemType::kU32: fill_typed(static_cast<std::uint32_t*>(data), begin, end, s, stream); break;
        case ElemType::kI64: fill_typed(static_cast<std::int64_t*>(data), begin, end, s, stream); break;
        case ElemType::kU64: fill_typed(static_cast<std::uint64_t*>(data), begin, end, s, stream); break;
        case ElemType::kF32: fill_typed(static_cast<float*>(data), begin, end, s, stream); break;
        case ElemType::kF64: fill_typed(static_cast<double*>(data), begin, end, s, stream); break;
      }
    });
  }
  for (auto& t : pool) t.join();
}

// Result of comparing one output buffer with its reference.
struct Mismatch {
  std::size_t count = 0;
  std::size_t first = 0;
  std::string got, expected;
};

template <typename T>
Mismatch compare_typed(const T* got, const T* want, std::size_t n, double abs_tol, double rel_tol) {
  Mismatch m;
  for (std::size_t i = 0; i < n; ++i) {
    bool bad;
    if constexpr (std::is_floating_point_v<T>) {
      // NaN and Inf never pass, even where the reference has them.
      bad = !std::isfinite(got[i]) ||
            std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) >
                abs_tol + rel_tol * std::fabs(static_cast<double>(want[i]));
    } else {
      bad = got[i] != want[i];
    }
    if (bad) {
      if (m.count++ == 0) {
        m.first = i;
        m.got = fmt::format("{}", got[i]);
        m.expected = fmt::format("{}", want[i]);
      }
    }
  }
  return m;
}

Mismatch compare_range(ElemType type, const void* got, const void* want, std::size_t begin, std::size_t end,
                       double abs_tol, double rel_tol) {
  const std::size_t n = end - begin;
  switch (type) {
#define KTUNE_COMPARE(KIND, T)                                                                                 \
  case ElemType::KIND:                                                                                         \
    return compare_typed(static_cast<const T*>(got) + begin, static_cast<const T*>(want) + begin, n, abs_tol, \
                         rel_tol);
    KTUNE_COMPARE(kI8, std::int8_t)
    KTUNE_COMPARE(kU8, std::uint8_t)
    KTUNE_COMPARE(kI16, std::int16_t)
    KTUNE_COMPARE(kU16, std::uint16_t)
    KTUNE_COMPARE(kI32, std::int32_t)
    KTUNE_COMPARE(kU32, std::uint32_t)
    KTUNE_COMPARE(kI64, std::int64_t)
    KTUNE_COMPARE(kU64, std::uint64_t)
    KTUNE_COMPARE(kF32, float)
    KTUNE_COMPARE(kF64, double)
#undef KTUNE_COMPARE
  }
  return {};
}

// Every element is compared; large buffers in slices on up to 16 threads (a 2^28-element output
// is checked in tens of milliseconds, not a second). The first mismatch is the lowest index.
Mismatch compare(ElemType type, const void* got, const void* want, std::size_t n, double abs_tol, double rel_tol) {
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::size_t slice = std::max<std::size_t>(1 << 20, (n + threads - 1) / threads);
  if (n <= slice) return compare_range(type, got, want, 0, n, abs_tol, rel_tol);
  std::vector<Mismatch> parts((n + slice - 1) / slice);
  std::vector<std::thread> pool;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    pool.emplace_back([&, p] {
      const std::size_t begin = p * slice;
      parts[p] = compare_range(type, got, want, begin, std::min(n, begin + slice), abs_tol, rel_tol);
      parts[p].first += begin;
    });
  }
  for (auto& t : pool) t.join();
  Mismatch m;
  for (auto& part : parts) {
    if (part.count == 0) continue;
    if (m.count == 0) {
      m.first = part.first;
      m.got = std::move(part.got);
      m.expected = std::move(part.expected);
    }
    m.count += part.count;
  }
  return m;
}

// How often each poison byte pattern appears in a reference: an element equal to the poison
// would pass unwritten, so such buffers are checked a second time with another pattern.
bool contains_pattern(const std::vector<unsigned char>& data, std::size_t elem, unsigned char byte) {
  for (std::size_t i = 0; i + elem <= data.size(); i += elem) {
    bool all = true;
    for (std::size_t k = 0; k < elem && all; ++k) all = data[i + k] == byte;
    if (all) return true;
  }
  return false;
}

constexpr unsigned char kPoison = 0xFF;     // int -1, float NaN
constexpr unsigned char kPoison2 = 0x5A;

struct Buffer {
  BufferSpec spec;
  InitSpec init;
  void* device = nullptr;          // what the kernel sees
  void* pristine = nullptr;        // INOUT: the initial contents, restored before every run
  std::size_t capacity = 0;        // bytes allocated
  std::size_t count = 0;           // elements for the current config
  std::size_t generated = 0;       // INPUT/INOUT: elements generated and uploaded
  std::vector<unsigned char> host; // INPUT/INOUT: generated data; OUTPUT: scratch for checks
  std::vector<unsigned char> expected;
  // OUTPUT/INOUT: page-locked host memory the output is downloaded into for checking, kept
  // across trials (a pageable download of a large output, and allocating it, cost more than the
  // comparison); empty where page-locked memory could not be had, then `download` serves.
  void* pinned = nullptr;
  std::size_t pinned_bytes = 0;
  std::vector<unsigned char> download;
  bool checked() const { return spec.role == BufferRole::kOutput || spec.role == BufferRole::kInOut; }
  bool has_input() const { return spec.role == BufferRole::kInput || spec.role == BufferRole::kInOut; }
};

// A loaded configuration.
struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  Config config;
  LaunchGeometry geometry;
  std::vector<ScalarArg> scalars;
  std::vector<std::size_t> sizes;
};

class Worker {
 public:
  // reference_cubin: the compiled reference configuration, for kernels without a host reference.
  Worker(const KernelSpec& kernel, const Problem& problem, int device, const MeasureOptions& measure,
         const std::string& reference_lowered, const std::string& reference_cubin);
  const KernelInstance& instance() const { return *instance_; }
  const DeviceInfo& device() const { return device_; }
  void* buffer(const std::string& name, std::size_t* count) const {
    for (const auto& b : buffers_) {
      if (b.spec.name == name) {
        if (count) *count = b.count;
        return b.device;
      }
    }
    if (count) *count = 0;
    return nullptr;
  }
  ~Worker();
  json evaluate(const std::string& key, const std::string& lowered, const std::string& cubin);
  json retime(const json& request, const std::string& blob);
  bool dead() const { return dead_; }

 private:
  void load(Loaded& l, const std::string& key, const std::string& lowered, const std::string& cubin);
  void unload(Loaded& l);
  void prepare_buffers(const Loaded& l);
  void compute_reference();
  void launch(const Loaded& l);             // one run, as the kernel defines it (hook or launch)
  void reset_inouts();
  void poison_outputs(unsigned char byte);
  std::optional<std::string> verify(bool second_pattern_only);
  bool needs_flush() const;
  void flush_l2();
  double run_timed(const Loaded& l, int batch);  // enqueue + sync one sample; returns ms per run
  // Enqueues `warmup` untimed runs and `count` timed samples of `batch` runs each, then waits
  // once; returns milliseconds per run for each sample and adds the GPU time to gpu_ms.
  std::vector<double> sample_chunk(const Loaded& l, int count, int batch, bool flush, double& gpu_ms,
                                   int warmup = 0);

  static int hook_launch(const ktune_run_ctx* ctx, void* kernel, const unsigned grid[3],
                         const unsigned block[3], std::size_t shared_mem, void** args);
  static void* hook_buffer(const ktune_run_ctx* ctx, const char* name, std::size_t* count);
  static std::int64_t hook_value(const ktune_run_ctx* ctx, const char* name, int* found);
  static void* hook_cuda_function(const char* name);
  static void* hook_global(const ktune_run_ctx* ctx, const char* name, std::size_t* bytes);

  std::unique_ptr<KernelInstance> instance_;
  DeviceInfo device_;
  MeasureOptions measure_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::list<std::pair<std::string, cudaLibrary_t>> libraries_;  // by CUBIN hash, most recent first
  std::vector<Buffer> buffers_;
  void* flush_buffer_ = nullptr;
  std::size_t flush_bytes_ = 0;
  std::vector<std::size_t> reference_sizes_;  // output sizes the reference was computed for
  bool reference_ok_ = false;
  bool poison_collision_ = false;             // some expected element equals the poison
  std::optional<Loaded> reference_config_;    // manifest kernels: the config whose output is the reference
  const Loaded* current_ = nullptr;           // for the hook callbacks
  bool dead_ = false;
};

Worker::Worker(const KernelSpec& kernel, const Problem& problem, int device, const MeasureOptions& measure,
               const std::string& reference_lowered, const std::string& reference_cubin)
    : measure_(measure) {
  device_ = require_device(device);
  check(cudaSetDevice(device_.ordinal), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  instance_ = std::make_unique<KernelInstance>(kernel, problem, device_.limits);
  for (const auto& b : kernel.buffers) {
    Buffer buf;
    buf.spec = b;
    buf.init = KernelSpec::parse_init(b);
    buffers_.push_back(std::move(buf));
  }
  if (measure_.flush_l2 != FlushL2::kNever) {
    flush_bytes_ = static_cast<std::size_t>(std::max<std::int64_t>(device_.l2_bytes, 1 << 20)) * 2;
    check(cudaMalloc(&flush_buffer_, flush_bytes_), "cudaMalloc(L2 flush buffer)");
  }
  if (!reference_cubin.empty()) {
    reference_config_.emplace();
    const SearchSpace& space = instance_->space();
    load(*reference_config_, space.key(space.from_assignments(kernel.reference_assignments())), reference_lowered,
         reference_cubin);
  }
  // Inputs and the reference now, while the tuner is still compiling its first configurations.
  const SearchSpace& space = instance_->space();
  std::optional<Config> probe;
  if (space.is_valid(space.default_config())) probe = space.default_config();
  else space.for_each_valid([&](const Config& c) { probe = c; return false; });
  if (probe) {
    Loaded l;
    l.config = *probe;
    const auto sizes = instance_->buffer_sizes(l.config);
    l.sizes.assign(sizes.begin(), sizes.end());
    prepare_buffers(l);
  }
}

Worker::~Worker() {
  // The process is about to exit; the driver releases everything. Nothing to do that could
  // fail in a destructor.
}

void Worker::load(Loaded& l, const std::string& key, const std::string& lowered, const std::string& cubin) {
  l.config = instance_->space().parse_key(key);
  l.geometry = instance_->geometry(l.config);
  l.scalars = instance_->scalar_args(l.config);
  const auto sizes = instance_->buffer_sizes(l.config);
  l.sizes.assign(sizes.begin(), sizes.end());
  // Configurations compiled in one batch share a CUBIN: load it once and keep the last few.
  const std::string hash = content_hash(cubin);
  auto it = std::find_if(libraries_.begin(), libraries_.end(), [&](const auto& e) { return e.first == hash; });
  if (it != libraries_.end()) {
    libraries_.splice(libraries_.begin(), libraries_, it);
  } else {
    cudaLibrary_t library = nullptr;
    check(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData");
    libraries_.emplace_front(hash, library);
    constexpr std::size_t kKeep = 8;
    while (libraries_.size() > kKeep) {
      cudaLibraryUnload(libraries_.back().second);
      libraries_.pop_back();
    }
  }
  l.library = libraries_.front().second;
  check(cudaLibraryGetKernel(&l.kernel, l.library, lowered.c_str()), "cudaLibraryGetKernel");
}

void Worker::unload(Loaded& l) {
  // The library stays loaded for the configurations that share it; see load().
  l.library = nullptr;
  l.kernel = nullptr;
}

void Worker::prepare_buffers(const Loaded& l) {
  bool inputs_changed = false;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    Buffer& b = buffers_[i];
    const std::size_t esize = elem_size(b.spec.type);
    b.count = l.sizes[i];
    // A reference configuration runs on the same buffers, so they fit both.
    const std::size_t need = std::max(b.count, reference_config_ ? reference_config_->sizes[i] : 0);
    const std::size_t bytes = std::max<std::size_t>(need * esize, 16);
    if (bytes > b.capacity) {
      if (b.device) check(cudaFree(b.device), "cudaFree");
      if (b.pristine) check(cudaFree(b.pristine), "cudaFree");
      b.device = b.pristine = nullptr;
      check(cudaMalloc(&b.device, bytes), "cudaMalloc");
      if (b.spec.role == BufferRole::kInOut) check(cudaMalloc(&b.pristine, bytes), "cudaMalloc");
      b.capacity = bytes;
      b.generated = 0;
      if (b.spec.role == BufferRole::kScratch && b.init.kind == InitSpec::Kind::kValue)
        check(cudaMemset(b.device, 0, bytes), "cudaMemset");
    }
    if (b.has_input() && b.generated < need) {
      b.host.resize(need * esize);
      fill(b.host.data(), b.spec.type, need, b.init, mix(measure_.seed) ^ mix(i + 1));
      check(cudaMemcpy(b.spec.role == BufferRole::kInOut ? b.pristine : b.device, b.host.data(),
                       need * esize, cudaMemcpyHostToDevice),
            "upload of inputs");
      b.generated = need;
      inputs_changed = true;
    }
  }
  std::vector<std::size_t> sizes;
  for (const auto& b : buffers_) sizes.push_back(b.checked() || b.has_input() ? b.count : 0);
  if (inputs_changed || !reference_ok_ || sizes != reference_sizes_) {
    if (reference_ok_ && reference_config_ && sizes != reference_sizes_)
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: input or output sizes depend on the configuration, which a "
                              "reference configuration cannot check", instance_->kernel().name));
    reference_sizes_ = sizes;
    compute_reference();
  }
}

void Worker::compute_reference() {
  const KernelSpec& k = instance_->kernel();
  if (k.reference) {
    std::vector<std::string> names;
    std::vector<const char*> name_ptrs;
    std::vector<std::int64_t> values;
    for (const auto& [n, v] : instance_->problem()) {
      names.push_back(n);
      values.push_back(v);
    }
    for (const auto& n : names) name_ptrs.push_back(n.c_str());
    std::vector<ktune_host_buffer> hb;
    for (auto& b : buffers_) {
      if (b.spec.role == BufferRole::kScratch) continue;
      const std::size_t bytes = b.count * elem_size(b.spec.type);
      if (b.checked()) {
        b.expected.assign(bytes, 0);
        if (b.spec.role == BufferRole::kInOut) b.expected = b.host;
      }
      hb.push_back({b.spec.name.c_str(), static_cast<int>(b.spec.type), static_cast<int>(b.spec.role), b.count,
                    b.checked() ? static_cast<void*>(b.expected.data()) : static_cast<void*>(b.host.data())});
    }
    ktune_reference_ctx ctx{sizeof(ktune_reference_ctx), names.size(), name_ptrs.data(), values.data(),
                            hb.size(), hb.data(), k.user_data};
    char error[1024] = {0};
    if (k.reference(&ctx, error, sizeof(error)) != 0)
      throw Error(ErrorKind::kInput, fmt::format("{}: reference failed: {}", k.name, error));
  } else {
    // The reference configuration's output, from poisoned outputs, is the reference.
    const Loaded& ref = *reference_config_;
    std::vector<std::size_t> counts;
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].checked() && buffers_[i].count != ref.sizes[i])
        throw Error(ErrorKind::kInput,
                    fmt::format("{}: output '{}' has {} elements here but {} in the reference "
                                "configuration", instance_->kernel().name, buffers_[i].spec.name,
                                buffers_[i].count, ref.sizes[i]));
      counts.push_back(buffers_[i].count);
      buffers_[i].count = ref.sizes[i];
    }
    poison_outputs(kPoison);
    reset_inouts();
    launch(ref);
    check(cudaStreamSynchronize(stream_), "reference run");
    for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].count = counts[i];
    for (auto& b : buffers_) {
      if (!b.checked()) continue;
      b.expected.resize(b.count * elem_size(b.spec.type));
      check(cudaMemcpy(b.expected.data(), b.device, b.expected.size(), cudaMemcpyDeviceToHost),
            "download of the reference");
    }
  }
  poison_collision_ = false;
  for (const auto& b : buffers_)
    if (b.checked() && contains_pattern(b.expected, elem_size(b.spec.type), kPoison)) poison_collision_ = true;
  reference_ok_ = true;
}

void Worker::reset_inouts() {
  for (auto& b : buffers_) {
    if (b.spec.role == BufferRole::kInOut)
      check(cudaMemcpyAsync(b.device, b.pristine, b.count * elem_size(b.spec.type),
                            cudaMemcpyDeviceToDevice, stream_),
            "reset of inout buffer");
  }
}

void Worker::poison_outputs(unsigned char byte) {
  for (auto& b : buffers_) {
    if (b.spec.role == BufferRole::kOutput)
      check(cudaMemsetAsync(b.device, byte, b.count * elem_size(b.spec.type), stream_), "poison");
  }
}

int Worker::hook_launch(const ktune_run_ctx* ctx, void* kernel, const unsigned grid[3],
                        const unsigned block[3], std::size_t shared_mem, void** args) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  const void* k = kernel ? kernel : static_cast<const void*>(self->current_->kernel);
  return static_cast<int>(cudaLaunchKernel(k, dim3(grid[0], grid[1], grid[2]),
                                           dim3(block[0], block[1], block[2]), args, shared_mem,
                                           static_cast<cudaStream_t>(ctx->stream)));
}

void* Worker::hook_buffer(const ktune_run_ctx* ctx, const char* name, std::size_t* count) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  for (const auto& b : self->buffers_) {
    if (b.spec.name == name) {
      if (count) *count = b.count;
      return b.device;
    }
  }
  if (count) *count = 0;
  return nullptr;
}

std::int64_t Worker::hook_value(const ktune_run_ctx* ctx, const char* name, int* found) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  if (found) *found = 0;
  const auto& problem = self->instance_->problem();
  if (auto it = problem.find(name); it != problem.end()) {
    if (found) *found = 1;
    return it->second;
  }
  const SearchSpace& space = self->instance_->space();
  if (auto p = space.find_param(name)) {
    const Value v = space.value(self->current_->config, *p);
    if (v.is_number()) {
      if (found) *found = 1;
      return v.is_int() ? v.as_int() : static_cast<std::int64_t>(v.as_double());
    }
  }
  return 0;
}

void* Worker::hook_global(const ktune_run_ctx* ctx, const char* name, std::size_t* bytes) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  void* address = nullptr;
  std::size_t size = 0;
  if (cudaLibraryGetGlobal(&address, &size, self->current_->library, name) != cudaSuccess) {
    cudaGetLastError();
    address = nullptr;
    size = 0;
  }
  if (bytes) *bytes = size;
  return address;
}

void* Worker::hook_cuda_function(const char* name) {
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry kTable[] = {
      {"cudaMemcpyAsync", reinterpret_cast<void*>(&cudaMemcpyAsync)},
      {"cudaMemsetAsync", reinterpret_cast<void*>(&cudaMemsetAsync)},
      {"cudaMemcpy", reinterpret_cast<void*>(&cudaMemcpy)},
      {"cudaMalloc", reinterpret_cast<void*>(&cudaMalloc)},
      {"cudaFree", reinterpret_cast<void*>(&cudaFree)},
      {"cudaMallocHost", reinterpret_cast<void*>(static_cast<cudaError_t (*)(void**, size_t)>(&cudaMallocHost))},
      {"cudaFreeHost", reinterpret_cast<void*>(&cudaFreeHost)},
      {"cudaStreamCreate", reinterpret_cast<void*>(&cudaStreamCreate)},
      {"cudaStreamCreateWithFlags", reinterpret_cast<void*>(&cudaStreamCreateWithFlags)},
      {"cudaStreamDestroy", reinterpret_cast<void*>(&cudaStreamDestroy)},
      {"cudaStreamSynchronize", reinterpret_cast<void*>(&cudaStreamSynchronize)},
      {"cudaStreamWaitEvent", reinterpret_cast<void*>(&cudaStreamWaitEvent)},
      {"cudaEventCreate", reinterpret_cast<void*>(static_cast<cudaError_t (*)(cudaEvent_t*)>(&cudaEventCreate))},
      {"cudaEventCreateWithFlags", reinterpret_cast<void*>(&cudaEventCreateWithFlags)},
      {"cudaEventRecord", reinterpret_cast<void*>(&cudaEventRecord)},
      {"cudaEventSynchronize", reinterpret_cast<void*>(&cudaEventSynchronize)},
      {"cudaEventDestroy", reinterpret_cast<void*>(&cudaEventDestroy)},
      {"cudaLaunchKernel", reinterpret_cast<void*>(static_cast<cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>(&cudaLaunchKernel))},
      {"cudaGetLastError", reinterpret_cast<void*>(&cudaGetLastError)},
      {"cudaDeviceSynchronize", reinterpret_cast<void*>(&cudaDeviceSynchronize)},
  };
  for (const auto& e : kTable)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  return nullptr;
}

void Worker::launch(const Loaded& l) {
  const KernelSpec& k = instance_->kernel();
  // Argument storage: buffer pointers and scalar bytes, addressed by the args array.
  std::vector<void*> pointers(k.args.size(), nullptr);
  std::vector<void*> args(k.args.size(), nullptr);
  std::vector<ScalarArg> scalars = l.scalars;
  for (std::size_t i = 0; i < k.args.size(); ++i) {
    if (k.args[i].is_buffer()) {
      for (const auto& b : buffers_)
        if (b.spec.name == k.args[i].buffer) pointers[i] = b.device;
      args[i] = &pointers[i];
    } else {
      args[i] = scalars[i].bytes.data();
    }
  }
  const LaunchGeometry& g = l.geometry;
  current_ = &l;
  if (k.run) {
    const unsigned grid[3] = {g.grid[0], g.grid[1], g.grid[2]};
    const unsigned block[3] = {g.block[0], g.block[1], g.block[2]};
    ktune_run_ctx ctx{sizeof(ktune_run_ctx), stream_, l.kernel, grid, block, g.shared_mem, args.data(),
                      &Worker::hook_launch, &Worker::hook_buffer, &Worker::hook_value,
                      &Worker::hook_cuda_function, k.user_data, this, &Worker::hook_global};
    char error[1024] = {0};
    const int rc = k.run(&ctx, error, sizeof(error));
    if (rc != 0) {
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) throw CudaFailure{e, fmt::format("run hook: {}", error)};
      throw Error(ErrorKind::kInput, fmt::format("run hook failed: {}", error));
    }
  } else {
    check(cudaLaunchKernel(static_cast<const void*>(l.kernel), dim3(g.grid[0], g.grid[1], g.grid[2]),
                           dim3(g.block[0], g.block[1], g.block[2]), args.data(), g.shared_mem, stream_),
          "cudaLaunchKernel");
  }
}

std::optional<std::string> Worker::verify(bool second_pattern_only) {
  for (auto& b : buffers_) {
    if (!b.checked()) continue;
    const std::size_t esize = elem_size(b.spec.type);
    if (second_pattern_only && !contains_pattern(b.expected, esize, kPoison)) continue;
    const std::size_t bytes = b.count * esize;
    if (bytes > b.pinned_bytes && b.download.size() < bytes) {
      if (b.pinned) cudaFreeHost(b.pinned);
      b.pinned = nullptr;
      b.pinned_bytes = 0;
      if (cudaMallocHost(&b.pinned, bytes) == cudaSuccess) {
        b.pinned_bytes = bytes;
      } else {
        cudaGetLastError();  // not sticky: fall back to pageable memory
        b.pinned = nullptr;
        b.download.resize(bytes);
      }
    }
    void* got = b.pinned_bytes >= bytes ? b.pinned : static_cast<void*>(b.download.data());
    check(cudaMemcpy(got, b.device, bytes, cudaMemcpyDeviceToHost), "download of outputs");
    const Mismatch m = compare(b.spec.type, got, b.expected.data(), b.count, b.spec.abs_tol, b.spec.rel_tol);
    if (m.count > 0)
      return fmt::format("{}[{}] = {}, expected {} ({} of {} elements differ{})", b.spec.name, m.first, m.got,
                         m.expected, m.count, b.count,
                         is_float(b.spec.type) ? fmt::format("; tolerance {} + {} * |expected|", b.spec.abs_tol, b.spec.rel_tol)
                                               : std::string());
  }
  return std::nullopt;
}

bool Worker::needs_flush() const {
  if (measure_.flush_l2 == FlushL2::kAlways) return true;
  if (measure_.flush_l2 == FlushL2::kNever) return false;
  std::size_t bytes = 0;
  for (const auto& b : buffers_) bytes += b.count * elem_size(b.spec.type);
  return bytes < static_cast<std::size_t>(2 * device_.l2_bytes);
}

void Worker::flush_l2() {
  if (flush_buffer_) check(cudaMemsetAsync(flush_buffer_, 0, flush_bytes_, stream_), "L2 flush");
}

std::vector<double> Worker::sample_chunk(const Loaded& l, int count, int batch, bool flush, double& gpu_ms,
                                         int warmup) {
  while (events_.size() < static_cast<std::size_t>(2 * count)) {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  for (int w = 0; w < warmup; ++w) {
    if (flush) flush_l2();
    reset_inouts();
    launch(l);
  }
  for (int s = 0; s < count; ++s) {
    if (flush) flush_l2();
    reset_inouts();
    check(cudaEventRecord(events_[2 * s], stream_), "cudaEventRecord");
    for (int b = 0; b < batch; ++b) launch(l);
    check(cudaEventRecord(events_[2 * s + 1], stream_), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(stream_), "timed runs");
  std::vector<double> out;
  for (int s = 0; s < count; ++s) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_[2 * s], events_[2 * s + 1]), "cudaEventElapsedTime");
    gpu_ms += ms;
    out.push_back(static_cast<double>(ms) / batch);
  }
  return out;
}

json Worker::evaluate(const std::string& key, const std::string& lowered, const std::string& cubin) {
  const auto t0 = Clock::now();
  json r;
  r["status"] = to_string(TrialStatus::kOk);
  // Wall time of each step, for finding where an evaluation's time goes.
  const auto phase = [&](const char* name, Clock::time_point since) {
    r["phases_ms"][name] = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  };
  Loaded l;
  double gpu_ms = 0, timed_ms = 0;
  const auto fail = [&](TrialStatus s, const std::string& error) {
    r["status"] = to_string(s);
    r["error"] = error;
  };
  try {
    load(l, key, lowered, cubin);
    phase("load", t0);
    // Resources first: what cannot launch is skipped without spending GPU time.
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, static_cast<const void*>(l.kernel)), "cudaFuncGetAttributes");
    const auto threads = static_cast<int>(l.geometry.threads_per_block());
    const auto dyn = static_cast<int>(l.geometry.shared_mem);
    r["registers"] = attr.numRegs;
    r["local_bytes"] = attr.localSizeBytes;
    r["static_shared_bytes"] = attr.sharedSizeBytes;
    r["dynamic_shared_bytes"] = dyn;
    r["max_threads_per_block"] = attr.maxThreadsPerBlock;
    if (threads > attr.maxThreadsPerBlock) {
      fail(TrialStatus::kResourcesExceeded,
           fmt::format("{} threads per block, but with {} registers per thread at most {} can launch", threads,
                       attr.numRegs, attr.maxThreadsPerBlock));
    } else if (static_cast<std::int64_t>(attr.sharedSizeBytes) + dyn > device_.limits.max_shared_memory_per_block_optin) {
      fail(TrialStatus::kResourcesExceeded,
           fmt::format("{} B static + {} B dynamic shared memory exceed the {} B a block may use",
                       attr.sharedSizeBytes, dyn, device_.limits.max_shared_memory_per_block_optin));
    } else {
      if (dyn > 48 * 1024)
        check(cudaFuncSetAttribute(static_cast<const void*>(l.kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, dyn),
              "cudaFuncSetAttribute(max dynamic shared memory)");
      int blocks = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, static_cast<const void*>(l.kernel), threads, l.geometry.shared_mem),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      r["occupancy"] = static_cast<double>(blocks) * threads / static_cast<double>(device_.limits.max_threads_per_multiprocessor);
      if (blocks == 0) {
        fail(TrialStatus::kResourcesExceeded,
             fmt::format("no block fits a multiprocessor ({} threads, {} registers, {} B shared)", threads,
                         attr.numRegs, attr.sharedSizeBytes + dyn));
      }
    }
    if (r["status"] == to_string(TrialStatus::kOk)) {
      const auto p0 = Clock::now();
      prepare_buffers(l);
      phase("buffers", p0);
      // Verification run on poisoned outputs; where an expected value equals the poison (an
      // int -1), a second run with another pattern catches an element left unwritten.
      const auto v0 = Clock::now();
      poison_outputs(kPoison);
      const std::vector<double> first = sample_chunk(l, 1, 1, false, gpu_ms);
      std::optional<std::string> wrong = verify(false);
      if (!wrong && poison_collision_) {
        poison_outputs(kPoison2);
        (void)sample_chunk(l, 1, 1, false, gpu_ms);
        wrong = verify(true);
      }
      phase("verify", v0);
      if (wrong) {
        fail(TrialStatus::kWrongResult, *wrong);
      } else {
        const auto t1 = Clock::now();
        const bool flush = needs_flush();
        const double estimate = first[0];
        int batch = 1;
        const bool has_inout = std::any_of(buffers_.begin(), buffers_.end(), [](const Buffer& b) {
          return b.spec.role == BufferRole::kInOut;
        });
        if (!flush && !has_inout && estimate < measure_.batch_below_ms && estimate > 0)
          batch = std::clamp(static_cast<int>(std::ceil(10 * measure_.batch_below_ms / estimate)), 1, 1000);
        std::vector<double> samples;
        const bool fixed = measure_.samples > 0;
        const int target = fixed ? measure_.samples : measure_.max_samples;
        double timed_gpu = 0;
        int warmup = measure_.warmup;
        while (static_cast<int>(samples.size()) < target) {
          const int want = fixed ? target - static_cast<int>(samples.size())
                                 : std::min(target - static_cast<int>(samples.size()),
                                            std::max(measure_.min_samples - static_cast<int>(samples.size()), 3));
          // Warm-up runs go in front of the first chunk: one wait for both.
          auto chunk = sample_chunk(l, want, batch, flush, timed_gpu, warmup);
          if (warmup > 0) {
            // The warm-up's GPU time is not in the events; count it as the first sample's.
            gpu_ms += warmup * batch * (chunk.empty() ? 0 : chunk[0]);
            warmup = 0;
          }
          samples.insert(samples.end(), chunk.begin(), chunk.end());
          if (fixed) continue;
          if (static_cast<int>(samples.size()) >= measure_.min_samples) {
            const SampleStats st = sample_stats(samples);
            if (st.spread <= measure_.target_spread || timed_gpu >= measure_.max_seconds * 1e3) break;
          }
        }
        phase("time", t1);
        gpu_ms += timed_gpu;
        timed_ms = timed_gpu;
        // The last timed run's output must be right too (a race shows up here).
        const auto t2 = Clock::now();
        auto late = verify(false);
        phase("post_verify", t2);
        if (late) {
          fail(TrialStatus::kWrongResult, "after the timed runs: " + *late);
        } else {
          const SampleStats st = sample_stats(samples);
          r["samples_ms"] = samples;
          r["time_ms"] = st.median;
          r["time_min_ms"] = st.min;
          r["time_mean_ms"] = st.mean;
          r["time_spread"] = st.spread;
          r["batch"] = batch;
          r["flush_l2"] = flush;
        }
      }
    }
  } catch (const CudaFailure& f) {
    const cudaError_t sticky_check = cudaStreamSynchronize(stream_);
    const bool sticky = is_sticky(f.code) || is_sticky(sticky_check);
    cudaGetLastError();
    if (sticky) {
      dead_ = true;
      fail(TrialStatus::kCrashed, fmt::format("{}: {}", f.where, cuda_text(f.code)));
    } else if (f.code == cudaErrorLaunchOutOfResources) {
      fail(TrialStatus::kResourcesExceeded, fmt::format("{}: {}", f.where, cuda_text(f.code)));
    } else if (f.where == "cudaLibraryLoadData" || f.where == "cudaLibraryGetKernel") {
      fail(TrialStatus::kLaunchFailed, fmt::format("loading the CUBIN: {}: {}", f.where, cuda_text(f.code)));
    } else {
      fail(TrialStatus::kLaunchFailed, fmt::format("{}: {}", f.where, cuda_text(f.code)));
    }
  } catch (const Error& e) {
    fail(TrialStatus::kLaunchFailed, e.what());
  }
  const auto u0 = Clock::now();
  if (!dead_) unload(l);
  phase("unload", u0);
  r["gpu_ms"] = gpu_ms;
  r["timed_ms"] = timed_ms;
  r["eval_ms"] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

json Worker::retime(const json& request, const std::string& blob) {
  json out;
  std::vector<Loaded> loaded;
  std::size_t offset = 0;
  try {
    for (const auto& c : request.at("candidates")) {
      const std::size_t size = c.at("size").get<std::size_t>();
      loaded.emplace_back();
      load(loaded.back(), c.at("config").get<std::string>(), c.at("lowered_name").get<std::string>(),
           blob.substr(offset, size));
      offset += size;
    }
    const int rounds = request.value("rounds", 10);
    std::vector<std::vector<double>> samples(loaded.size());
    double gpu_ms = 0;
    for (auto& l : loaded) {
      prepare_buffers(l);
      (void)sample_chunk(l, 1, 1, needs_flush(), gpu_ms);  // warm-up
    }
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < loaded.size(); ++i) {
        prepare_buffers(loaded[i]);
        auto s = sample_chunk(loaded[i], 1, 1, needs_flush(), gpu_ms);
        samples[i].push_back(s[0]);
      }
    }
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      const SampleStats st = sample_stats(samples[i]);
      out["results"].push_back({{"status", "ok"}, {"samples_ms", samples[i]}, {"time_ms", st.median},
                                {"time_min_ms", st.min}, {"time_mean_ms", st.mean}, {"time_spread", st.spread}});
    }
    out["gpu_ms"] = gpu_ms;
  } catch (const CudaFailure& f) {
    if (is_sticky(f.code) || is_sticky(cudaStreamSynchronize(stream_))) dead_ = true;
    out = json{{"error", fmt::format("{}: {}", f.where, cuda_text(f.code))}};
  } catch (const Error& e) {
    out = json{{"error", e.what()}};
  }
  if (!dead_)
    for (auto& l : loaded) unload(l);
  return out;
}

}  // namespace

Measurement measurement_from_json(const json& r) {
  Measurement m;
  m.status = trial_status_from_string(r.value("status", "crashed")).value_or(TrialStatus::kCrashed);
  m.error = r.value("error", "");
  if (r.contains("samples_ms")) m.samples_ms = r["samples_ms"].get<std::vector<double>>();
  m.time_ms = r.value("time_ms", 0.0);
  m.time_min_ms = r.value("time_min_ms", 0.0);
  m.time_mean_ms = r.value("time_mean_ms", 0.0);
  m.time_spread = r.value("time_spread", 0.0);
  m.registers = r.value("registers", -1);
  m.local_bytes = r.value("local_bytes", -1);
  m.static_shared_bytes = r.value("static_shared_bytes", -1);
  m.dynamic_shared_bytes = r.value("dynamic_shared_bytes", -1);
  m.max_threads_per_block = r.value("max_threads_per_block", -1);
  m.occupancy = r.value("occupancy", -1.0);
  if (r.contains("flush_l2")) m.l2_flushed = r["flush_l2"].get<bool>() ? 1 : 0;
  m.gpu_ms = r.value("gpu_ms", 0.0);
  m.timed_ms = r.value("timed_ms", 0.0);
  m.eval_ms = r.value("eval_ms", 0.0);
  if (r.contains("phases_ms")) m.phases_ms = r["phases_ms"].get<std::map<std::string, double>>();
  return m;
}

struct GpuEvaluator::Impl {
  std::unique_ptr<Worker> worker;
};

GpuEvaluator::GpuEvaluator(const KernelSpec& kernel, const Problem& problem, int device,
                           const MeasureOptions& options, const CompileResult* reference)
    : impl_(std::make_unique<Impl>()) {
  try {
    impl_->worker = std::make_unique<Worker>(kernel, kernel.make_problem(problem), device, options,
                                             reference ? reference->lowered_name : std::string(),
                                             reference ? reference->cubin : std::string());
  } catch (const CudaFailure& f) {
    throw Error(ErrorKind::kDevice, fmt::format("{}: {}", f.where, cuda_text(f.code)));
  }
}

GpuEvaluator::~GpuEvaluator() = default;

const KernelInstance& GpuEvaluator::instance() const { return impl_->worker->instance(); }
const DeviceInfo& GpuEvaluator::device() const { return impl_->worker->device(); }
bool GpuEvaluator::context_lost() const { return impl_->worker->dead(); }
void* GpuEvaluator::buffer(const std::string& name, std::size_t* count) const {
  return impl_->worker->buffer(name, count);
}

Measurement GpuEvaluator::evaluate(const Config& config, const CompileResult& compiled) {
  if (!compiled.ok) throw Error(ErrorKind::kInternal, "GpuEvaluator::evaluate needs a successful compilation");
  return measurement_from_json(
      impl_->worker->evaluate(instance().space().key(config), compiled.lowered_name, compiled.cubin));
}

std::vector<Measurement> GpuEvaluator::retime(const std::vector<RetimeCandidate>& candidates, int rounds) {
  json request{{"rounds", rounds}, {"candidates", json::array()}};
  std::string blob;
  for (const auto& c : candidates) {
    request["candidates"].push_back({{"config", instance().space().key(c.config)},
                                     {"lowered_name", c.compiled->lowered_name},
                                     {"size", c.compiled->cubin.size()}});
    blob += c.compiled->cubin;
  }
  const json reply = impl_->worker->retime(request, blob);
  if (reply.contains("error")) throw Error(ErrorKind::kDevice, reply.value("error", ""));
  std::vector<Measurement> out;
  for (const auto& r : reply.at("results")) out.push_back(measurement_from_json(r));
  return out;
}

int cuda_worker_main() {
  // The tuner handles Ctrl-C; the worker finishes its trial.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  // If the tuner dies, so does the worker, even in the middle of a hung kernel. (Not
  // PR_SET_PDEATHSIG: it fires when the *thread* that started the worker ends, and the tuner
  // starts workers from short-lived threads.)
  const pid_t parent = ::getppid();
  std::thread([parent] {
    while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(4);
  }).detach();
  ipc::Message msg;
  if (ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 2;
  std::unique_ptr<Worker> worker;
  Registry registry;  // outlives the worker: plugin kernels point into its libraries
  try {
    const json& init = msg.header;
    MeasureOptions measure;
    measure.seed = init.value("seed", std::uint64_t{1});
    const json& m = init.at("measure");
    measure.samples = m.value("samples", 0);
    measure.warmup = m.value("warmup", 1);
    measure.min_samples = m.value("min_samples", 5);
    measure.max_samples = m.value("max_samples", 50);
    measure.target_spread = m.value("target_spread", 0.01);
    measure.max_seconds = m.value("max_seconds", 0.5);
    measure.batch_below_ms = m.value("batch_below_ms", 0.02);
    measure.flush_l2 = flush_l2_from_string(m.value("flush_l2", std::string("auto"))).value_or(FlushL2::kAuto);
    register_builtin_kernels(registry);
    registry.load_env_path();
    for (const auto& p : init.value("plugins", std::vector<std::string>{})) registry.load_path(p);
    KernelSpec kernel = registry.get(init.at("kernel").get<std::string>());
    if (init.contains("params")) {
      // The space as tuned: a job file may have changed value lists and added restrictions.
      kernel.params.clear();
      for (const auto& p : init.at("params")) {
        Parameter param;
        param.name = p.at("name").get<std::string>();
        for (const auto& v : p.at("values")) param.values.push_back(Value::parse(v.get<std::string>()));
        param.default_index = p.at("default_index").get<std::size_t>();
        kernel.params.push_back(std::move(param));
      }
      kernel.restrictions = init.at("restrictions").get<std::vector<std::string>>();
      kernel.validate();
    }
    worker = std::make_unique<Worker>(kernel, init.at("problem").get<Problem>(), init.value("device", 0), measure,
                                      init.value("reference_lowered", ""), msg.blob);
  } catch (const CudaFailure& f) {
    ipc::write_message(kReplyFd, {json{{"op", "fatal"}, {"message", fmt::format("{}: {}", f.where, cuda_text(f.code))}}, {}});
    return 3;
  } catch (const std::exception& e) {
    ipc::write_message(kReplyFd, {json{{"op", "fatal"}, {"message", e.what()}}, {}});
    return 3;
  }
  ipc::write_message(kReplyFd, {json{{"op", "ready"}}, {}});
  for (;;) {
    if (ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 0;
    const std::string op = msg.header.value("op", "");
    json reply;
    if (op == "evaluate") {
      reply = worker->evaluate(msg.header.at("config").get<std::string>(),
                               msg.header.at("lowered_name").get<std::string>(), msg.blob);
    } else if (op == "retime") {
      reply = worker->retime(msg.header, msg.blob);
    } else if (op == "quit") {
      return 0;
    } else {
      reply = json{{"error", "unknown request '" + op + "'"}};
    }
    reply["op"] = "result";
    if (!ipc::write_message(kReplyFd, {reply, {}})) return 0;
    if (worker->dead()) return 3;  // the context is poisoned; the tuner starts a new worker
  }
}

}  // namespace ktune
