// The GPU worker (worker.h): buffers, inputs and the reference, loading a configuration, and
// the steps of one evaluation: resources, verification, timing.
#include "backends/cuda/worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <thread>

#include "backends/cuda/compare.h"
#include "backends/cuda/inputs.h"
#include "ktune/cutoff.h"
#include "ktune/data_file.h"
#include "ktune/error.h"
#include "ktune/hash.h"
#include "ktune/sample_stats.h"

namespace ktune::worker {

using Clock = std::chrono::steady_clock;

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

namespace {

// The kernel's reference configuration (of its declared space, whatever a job narrowed),
// compiled for the device through the disk cache. Throws Error(kInput) where it does not compile.
CompileResult compile_reference_config(const KernelSpec& kernel, const Problem& problem,
                                       const DeviceInfo& device) {
  const KernelInstance declared(kernel.declared(), problem, device.limits);
  const Config ref = declared.space().from_assignments(kernel.reference_assignments());
  CompileCache cache(CompileCache::default_dir());
  CompileResult c = compile_cached(render(declared, ref, device.arch), &cache);
  if (!c.ok)
    throw Error(ErrorKind::kInput,
                fmt::format("{}: the reference configuration {} does not compile: {}\n{}",
                            kernel.name, declared.space().key(ref), c.error, c.log));
  return c;
}

// The seconds of each step of the worker's start (Worker::startup()): each lap adds the time
// since the previous one (or since the start) to its step.
class StartupLaps {
 public:
  explicit StartupLaps(std::map<std::string, double>& seconds)
      : seconds_(seconds), step_(Clock::now()) {}
  void operator()(const char* name) {
    const auto now = Clock::now();
    seconds_[name] += std::chrono::duration<double>(now - step_).count();
    step_ = now;
  }

 private:
  std::map<std::string, double>& seconds_;
  Clock::time_point step_;
};

// The start's first step: the kernel's buffers as the worker keeps them, without memory yet.
// Refuses a buffer fetched for the caller's check that is no output, and a fetch of a buffer the
// kernel lacks.
std::vector<Buffer> make_buffers(const KernelSpec& kernel, const MeasureOptions& measure) {
  // Inputs made on the GPU where nothing on the host reads them: the kernel has no host reference
  // function (its reference is a configuration run on the GPU, expected files, or none) and the
  // GPU makes the buffer's values as the host would (DeviceFill: random, iota, value). No pass of
  // the host over the buffer, no upload. Constant buffers stay the host's (they are small and go
  // up by symbol).
  const bool device_inputs = measure.verify_on_device && kernel.reference == nullptr;
  std::vector<Buffer> buffers;
  for (const auto& b : kernel.buffers) {
    Buffer buf;
    buf.spec = b;
    buf.init = KernelSpec::parse_init(b);
    buf.fetched = std::find(measure.fetch_outputs.begin(), measure.fetch_outputs.end(), b.name) !=
                  measure.fetch_outputs.end();
    buf.unchecked = kernel.unchecked;
    if (device_inputs && (b.role == BufferRole::kInput || b.role == BufferRole::kInOut))
      buf.device_fill = device_fill(b.type, buf.init);
    if (buf.fetched && b.role != BufferRole::kOutput && b.role != BufferRole::kInOut)
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: buffer '{}' is fetched for the caller's check but is not an "
                              "output or inout buffer",
                              kernel.name, b.name));
    buffers.push_back(std::move(buf));
  }
  for (const auto& name : measure.fetch_outputs)
    if (std::none_of(buffers.begin(), buffers.end(),
                     [&](const Buffer& b) { return b.spec.name == name; }))
      throw Error(
          ErrorKind::kInput,
          fmt::format("{}: no buffer '{}' to fetch for the caller's check", kernel.name, name));
  return buffers;
}

// What these buffers need: a comparison per output type, a fill per input type made on the GPU
// (what NVRTC compiles where the build's CUBIN of all of them does not serve).
DeviceCompare::Needs comparison_needs(const std::vector<Buffer>& buffers) {
  DeviceCompare::Needs needs;
  for (const auto& b : buffers) {
    if (b.spec.role == BufferRole::kOutput || b.spec.role == BufferRole::kInOut)
      needs.compared.push_back(b.spec.type);
    if (b.device_fill) needs.filled.push_back(b.spec.type);
  }
  return needs;
}

// The comparison (and fill) kernels, on another thread: the build's CUBIN, at once; else NVRTC
// builds the program (a cache miss costs ~0.04 s of CPU for one or two types, more on a host
// whose cores compile) while the driver creates the context and the host makes what it makes. A
// failure comes back as a CompileResult that is not ok.
std::future<CompileResult> compile_compare_kernels(const std::string& arch,
                                                   const DeviceCompare::Needs& needs) {
  return std::async(std::launch::async, [arch, needs] {
    try {
      return DeviceCompare::compile(arch, needs);
    } catch (const std::exception& e) {
      CompileResult failed;
      failed.error = e.what();
      return failed;
    }
  });
}

// The comparison kernels loaded from their compilation, before the first inputs; null where
// NVRTC could not build them (the host checks) or where outputs are checked on the host.
std::unique_ptr<DeviceCompare> load_compare_kernels(std::future<CompileResult>& compiled,
                                                    cudaStream_t stream) {
  if (!compiled.valid()) return nullptr;
  try {
    return std::make_unique<DeviceCompare>(compiled.get(), stream);
  } catch (const Error&) {
    return nullptr;  // NVRTC could not build the comparison: the host checks
  }
}

// The reference configuration compiled on another thread beside the context's creation, so that
// it is not a step of the start of its own (~0.06 s of NVRTC beside the tuner's compile
// processes). The disk cache serves a restarted worker.
std::future<CompileResult> compile_reference_config_async(const KernelSpec& kernel,
                                                          const Problem& problem,
                                                          const DeviceInfo& device) {
  return std::async(std::launch::async, [&kernel, &problem, device] {
    return compile_reference_config(kernel, problem, device);
  });
}

// NVML (tens of milliseconds to load and start) on another thread, told the GPU's bus id through
// `pci_bus_id` once the context exists; a broken promise opens it without one.
std::future<std::unique_ptr<GpuClocks>> open_clocks_async(std::promise<std::string>& pci_bus_id) {
  return std::async(std::launch::async, [bus = pci_bus_id.get_future()]() mutable {
    return GpuClocks::open([&bus]() -> std::string {
      try {
        return bus.get();
      } catch (const std::future_error&) {
        return {};
      }
    });
  });
}

// The context, the slowest step of a start (~0.2 s), created on another thread. Its errors come
// back from the checked calls after it.
std::future<void> create_context_async(int ordinal) {
  return std::async(std::launch::async, [ordinal] {
    if (cudaSetDevice(ordinal) == cudaSuccess) cudaFree(nullptr);
  });
}

// The configuration the start makes inputs (and a host reference) for: the default
// configuration, else the first valid one; none in an empty space.
std::optional<Config> probe_config(const SearchSpace& space) {
  std::optional<Config> probe;
  if (space.is_valid(space.default_config()))
    probe = space.default_config();
  else
    space.for_each_valid([&](const Config& c) {
      probe = c;
      return false;
    });
  return probe;
}

// Each buffer's element count for `config`.
std::vector<std::size_t> buffer_counts(const KernelInstance& instance, const Config& config) {
  const auto sizes = instance.buffer_sizes(config);
  return std::vector<std::size_t>(sizes.begin(), sizes.end());
}

// The elements each buffer is generated to for the probe: its own counts, and at least the
// reference configuration's where `reference` is given (it runs on the same buffers).
std::vector<std::size_t> generated_counts(const std::vector<std::size_t>& probe_sizes,
                                          const KernelInstance* reference,
                                          const KernelSpec& kernel) {
  std::vector<std::size_t> need = probe_sizes;
  if (reference) {
    const auto ref = reference->buffer_sizes(
        reference->space().from_assignments(kernel.reference_assignments()));
    for (std::size_t i = 0; i < need.size() && i < ref.size(); ++i)
      need[i] = std::max(need[i], static_cast<std::size_t>(ref[i]));
  }
  return need;
}

// The key of the kernel's reference configuration in the space of `instance`.
std::string reference_config_key(const KernelInstance& instance, const KernelSpec& kernel) {
  const SearchSpace& space = instance.space();
  return space.key(space.from_assignments(kernel.reference_assignments()));
}

// The probe configuration as loaded for preparing the buffers (no kernel of its own).
Loaded probe_loaded(const Config& probe, const std::vector<std::size_t>& sizes) {
  Loaded l;
  l.config = probe;
  l.sizes = sizes;
  return l;
}

// The kernel's declared space, where the reference is a configuration and a job narrowed the
// tuned space (the reference configuration belongs to the declared one); null otherwise.
std::unique_ptr<KernelInstance> reference_config_instance(const KernelSpec& kernel,
                                                          const Problem& problem,
                                                          const DeviceInfo& device,
                                                          bool has_reference_config) {
  if (!has_reference_config || kernel.declared_params.empty()) return nullptr;
  return std::make_unique<KernelInstance>(kernel.declared(), problem, device.limits);
}

// Waits for the context the other thread created, makes it this thread's and returns the
// worker's stream; a failure to create the context shows here, from the checked calls.
cudaStream_t use_context(std::future<void>& context, int ordinal) {
  context.get();
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return stream;
}

// The GPU's PCI bus id, empty where the driver does not say.
std::string pci_bus_id_of(int ordinal) {
  char pci[32] = {};
  return cudaDeviceGetPCIBusId(pci, sizeof(pci), ordinal) == cudaSuccess ? std::string(pci)
                                                                         : std::string();
}

// The buffer that flushing the L2 cache writes: twice the L2 (at least 2 MiB), allocated where
// the measurement may flush; `bytes` is set with it.
void* allocate_l2_flush_buffer(const DeviceInfo& device, FlushL2 flush, std::size_t& bytes) {
  if (flush == FlushL2::kNever) return nullptr;
  bytes = static_cast<std::size_t>(std::max<std::int64_t>(device.l2_bytes, 1 << 20)) * 2;
  void* buffer = nullptr;
  check(cudaMalloc(&buffer, bytes), "cudaMalloc(L2 flush buffer)");
  return buffer;
}

}  // namespace

// The start, in the order that hides its slow steps: the threads that compile the comparison
// kernels and the reference configuration, open NVML and create the context start first; this
// one meanwhile makes the instance, the host inputs and the host reference; then the context's
// resources, the reference configuration, the comparison kernels and the reference's upload.
Worker::Worker(const KernelSpec& kernel, const Problem& problem, int device,
               const MeasureOptions& measure)
    : measure_(measure) {
  StartupLaps lap(startup_);
  device_ = require_device(device);
  buffers_ = make_buffers(kernel, measure_);
  // The comparison kernels are loaded before the first inputs.
  std::future<CompileResult> compare;
  if (measure_.verify_on_device)
    compare = compile_compare_kernels(device_.arch, comparison_needs(buffers_));
  const bool has_reference_config = kernel.reference == nullptr && !kernel.reference_config.empty();
  std::future<CompileResult> reference_compile;
  if (has_reference_config)
    reference_compile = compile_reference_config_async(kernel, problem, device_);
  lap("device");
  // The promise is declared after the future, so that a throw below breaks it (ending the
  // thread) before the future's destructor waits for the thread.
  std::future<std::unique_ptr<GpuClocks>> clocks;
  std::promise<std::string> pci_bus_id;
  clocks = open_clocks_async(pci_bus_id);
  // CUDA calls below wait for the context.
  std::future<void> context = create_context_async(device_.ordinal);
  instance_ = std::make_unique<KernelInstance>(kernel, problem, device_.limits);
  reference_instance_ = reference_config_instance(kernel, problem, device_, has_reference_config);
  const KernelInstance& ref_instance = reference_instance_ ? *reference_instance_ : *instance_;
  // Inputs (and a host reference) now, while the tuner is still compiling its first
  // configurations.
  const std::optional<Config> probe = probe_config(instance_->space());
  const std::vector<std::size_t> probe_sizes =
      probe ? buffer_counts(*instance_, *probe) : std::vector<std::size_t>();
  if (probe) {
    const std::vector<std::size_t> need =
        generated_counts(probe_sizes, has_reference_config ? &ref_instance : nullptr, kernel);
    for (std::size_t i = 0; i < buffers_.size() && i < need.size(); ++i)
      if (!buffers_[i].device_fill) generate_host_input(i, need[i]);
    if (kernel.reference) {
      for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].count = probe_sizes[i];
      reference_from_function();
      host_reference_sizes_ = probe_sizes;
    }
  }
  lap("host_inputs_reference");
  stream_ = use_context(context, device_.ordinal);
  lap("context");
  pci_bus_id.set_value(pci_bus_id_of(device_.ordinal));
  flush_buffer_ = allocate_l2_flush_buffer(device_, measure_.flush_l2, flush_bytes_);
  lap("setup");
  if (has_reference_config) {
    // Throws where the configuration does not compile: nothing would check the outputs.
    const CompileResult compiled = reference_compile.get();
    reference_config_.emplace();
    load(*reference_config_, reference_config_key(ref_instance, kernel), compiled.lowered_name,
         compiled.cubin, &ref_instance);
  }
  lap("reference_config");
  device_compare_ = load_compare_kernels(compare, stream_);
  lap("compare_kernels");
  // The inputs made on the GPU or uploaded, and the reference put where the check will read it.
  if (probe) prepare_buffers(probe_loaded(*probe, probe_sizes));
  lap("upload_reference");
  clocks_ = clocks.get();
  lap("clocks");
}

Worker::~Worker() {
  // Nothing here may throw; a context poisoned by a fault is the process's to end, not ours.
  if (dead_) return;
  if (stream_) cudaStreamSynchronize(stream_);
  for (Buffer& b : buffers_) {
    for (void* p : {b.device, b.pristine, b.expected_device})
      if (p) cudaFree(p);
    if (b.pinned) cudaFreeHost(b.pinned);
  }
  if (flush_buffer_) cudaFree(flush_buffer_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (const auto& [hash, library] : libraries_) cudaLibraryUnload(library);
  device_compare_.reset();
  staging_.reset();
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();  // what a release reported is not the next Worker's
}

std::uint64_t Worker::input_stream(std::size_t i) const { return mix(measure_.seed) ^ mix(i + 1); }

// Fills the host copy of input `i` to `need` elements, generated from the seed (nothing is
// uploaded here, so the constructor runs it before the context exists).
void Worker::generate_host_input(std::size_t i, std::size_t need) {
  Buffer& b = buffers_[i];
  if (!b.has_input() || b.host_generated >= need) return;
  const std::size_t had = b.host.size();
  b.host.resize(need * elem_size(b.spec.type));
  // A distribution or a file writes every element; a plugin's generate function finds zeros.
  if (b.init.kind == BufferInit::Kind::kGenerator && b.host.size() > had)
    parallel_set(b.host.data() + had, 0, b.host.size() - had);
  fill_input(b.host.data(), b.spec, b.init, need, input_stream(i), instance_->kernel(),
             instance_->problem());
  b.host_generated = need;
}

void Worker::load(Loaded& l, const std::string& key, const std::string& lowered,
                  const std::string& cubin, const KernelInstance* instance) {
  const KernelInstance& in = instance ? *instance : *instance_;
  l.instance = &in;
  l.config = in.space().parse_key(key);
  l.geometry = in.geometry(l.config);
  l.scalars = in.scalar_args(l.config);
  const auto sizes = in.buffer_sizes(l.config);
  l.sizes.assign(sizes.begin(), sizes.end());
  // Configurations compiled in one batch share a CUBIN: load it once and keep the last few.
  const std::string hash = content_hash(cubin);
  auto it = std::find_if(libraries_.begin(), libraries_.end(),
                         [&](const auto& e) { return e.first == hash; });
  if (it != libraries_.end()) {
    libraries_.splice(libraries_.begin(), libraries_, it);
  } else {
    cudaLibrary_t library = nullptr;
    check(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData");
    libraries_.emplace_front(hash, library);
    constexpr std::size_t kKeep = 8;
    while (libraries_.size() > kKeep) {
      std::erase_if(constants_uploaded_,
                    [&](const auto& entry) { return entry.first == libraries_.back().second; });
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
  bool inputs_changed = false, filled_on_device = false;
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
      if (b.spec.role == BufferRole::kScratch && b.init.kind == BufferInit::Kind::kValue)
        check(cudaMemset(b.device, 0, bytes), "cudaMemset");
    }
    if (b.has_input() && b.generated < need) {
      void* target = b.spec.role == BufferRole::kInOut ? b.pristine : b.device;
      if (b.device_fill && device_compare_) {
        device_compare_->fill(b.spec.type, target, need, *b.device_fill, input_stream(i));
        filled_on_device = true;
      } else {
        generate_host_input(i, need);
        upload(target, b.host.data(), need * esize, "upload of inputs");
      }
      b.generated = need;
      inputs_changed = true;
      ++inputs_generation_;
    }
  }
  if (filled_on_device) check(cudaStreamSynchronize(stream_), "inputs made on the GPU");
  std::vector<std::size_t> sizes;
  for (const auto& b : buffers_) sizes.push_back(b.checked() || b.has_input() ? b.count : 0);
  if (inputs_changed || !reference_ok_ || sizes != reference_sizes_) {
    if (reference_ok_ && reference_config_ && sizes != reference_sizes_)
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: input or output sizes depend on the configuration, which a "
                              "reference configuration cannot check",
                              instance_->kernel().name));
    reference_sizes_ = sizes;
    compute_reference();
  }
}

void Worker::compute_reference() {
  const KernelSpec& k = instance_->kernel();
  std::vector<std::size_t> counts;
  for (const auto& b : buffers_) counts.push_back(b.count);
  // The constructor made the host reference from these inputs while the context was being
  // created; later inputs (another size) make their own.
  const bool made = !host_reference_sizes_.empty() && counts == host_reference_sizes_;
  host_reference_sizes_.clear();
  for (auto& b : buffers_) b.expected_on_device_only = false;
  if (k.reference) {
    if (!made) reference_from_function();
  } else if (reference_config_) {
    reference_from_config();
  }
  for (auto& b : buffers_) {
    if (!b.checked() || b.expected_on_device_only) continue;
    const std::size_t had = b.expected.size(), bytes = b.count * elem_size(b.spec.type);
    b.expected.resize(bytes);
    if (bytes > had) parallel_set(b.expected.data() + had, 0, bytes - had);
    // An expected file replaces what the kernel's reference made (or is all there is).
    const std::string path = KernelSpec::expected_file(b.spec);
    if (!path.empty())
      read_data_file(path, b.spec.type, b.count, b.expected.data(),
                     fmt::format("{}: expected '{}'", k.name, b.spec.name));
    b.expected_has_poison = contains_pattern(b.expected, elem_size(b.spec.type), kPoison);
  }
  poison_collision_ = std::any_of(buffers_.begin(), buffers_.end(), [](const Buffer& b) {
    return b.checked() && b.expected_has_poison;
  });
  upload_reference();
  reference_ok_ = true;
}

void Worker::reference_from_function() {
  const KernelSpec& k = instance_->kernel();
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
      b.expected.resize(bytes);
      if (b.spec.role == BufferRole::kInOut)
        parallel_copy(b.expected.data(), b.host.data(), bytes);
      else
        parallel_set(b.expected.data(), 0, bytes);
    }
    hb.push_back(
        {b.spec.name.c_str(), static_cast<int>(b.spec.type), static_cast<int>(b.spec.role), b.count,
         b.checked() ? static_cast<void*>(b.expected.data()) : static_cast<void*>(b.host.data())});
  }
  ktune_reference_ctx ctx{sizeof(ktune_reference_ctx),
                          names.size(),
                          name_ptrs.data(),
                          values.data(),
                          hb.size(),
                          hb.data(),
                          k.user_data};
  char error[1024] = {0};
  if (k.reference(&ctx, error, sizeof(error)) != 0)
    throw Error(ErrorKind::kInput, fmt::format("{}: reference failed: {}", k.name, error));
}

// The reference configuration's output, from poisoned outputs, is the reference.
void Worker::reference_from_config() {
  const Loaded& ref = *reference_config_;
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i].checked() && buffers_[i].count != ref.sizes[i])
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: output '{}' has {} elements here but {} in the reference "
                              "configuration",
                              instance_->kernel().name, buffers_[i].spec.name, buffers_[i].count,
                              ref.sizes[i]));
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
    const std::size_t esize = elem_size(b.spec.type);
    if (device_compare_ && KernelSpec::expected_file(b.spec).empty()) {
      // Checked on the GPU: the reference stays there, its elements equal to the poison counted
      // there (no download, no host copy, no upload).
      reserve_expected_device(b, b.count * esize);
      check(cudaMemcpyAsync(b.expected_device, b.device, b.count * esize, cudaMemcpyDeviceToDevice,
                            stream_),
            "copy of the reference");
      b.expected_has_poison = device_compare_->count_equal(esize, b.expected_device, b.count,
                                                           0x0101010101010101ull * kPoison) > 0;
      b.expected = HostBytes();
      b.expected_on_device_only = true;
      continue;
    }
    const std::size_t had = b.expected.size(), bytes = b.count * esize;
    b.expected.resize(bytes);
    if (bytes > had) parallel_set(b.expected.data() + had, 0, bytes - had);
    check(cudaMemcpy(b.expected.data(), b.device, b.expected.size(), cudaMemcpyDeviceToHost),
          "download of the reference");
  }
}

struct Worker::Staging {
  static constexpr std::size_t kSlot = std::size_t{64} << 20;
  unsigned char* slots = nullptr;  // two of kSlot bytes, page-locked
  cudaEvent_t free[2] = {nullptr, nullptr};
  static void destroy(Staging* s) {
    for (cudaEvent_t e : s->free)
      if (e) cudaEventDestroy(e);
    if (s->slots) cudaFreeHost(s->slots);
    delete s;
  }
};

void Worker::upload(void* device, const void* host, std::size_t bytes, const char* what) {
  if (bytes >= 2 * Staging::kSlot && !staging_) {
    std::unique_ptr<Staging, void (*)(Staging*)> s(new Staging, &Staging::destroy);
    if (cudaMallocHost(reinterpret_cast<void**>(&s->slots), 2 * Staging::kSlot) == cudaSuccess &&
        cudaEventCreateWithFlags(&s->free[0], cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreateWithFlags(&s->free[1], cudaEventDisableTiming) == cudaSuccess)
      staging_ = std::move(s);
    else
      cudaGetLastError();  // not sticky: pageable copies serve
  }
  if (!staging_ || bytes < 2 * Staging::kSlot) {
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), what);
    return;
  }
  const auto* from = static_cast<const unsigned char*>(host);
  auto* to = static_cast<unsigned char*>(device);
  for (std::size_t offset = 0, k = 0; offset < bytes; offset += Staging::kSlot, ++k) {
    const std::size_t n = std::min(Staging::kSlot, bytes - offset);
    unsigned char* slot = staging_->slots + (k % 2) * Staging::kSlot;
    check(cudaEventSynchronize(staging_->free[k % 2]), what);  // its last copy has left
    parallel_copy(slot, from + offset, n);
    check(cudaMemcpyAsync(to + offset, slot, n, cudaMemcpyHostToDevice, stream_), what);
    check(cudaEventRecord(staging_->free[k % 2], stream_), what);
  }
  check(cudaStreamSynchronize(stream_), what);
}

// The reference on the GPU too, where outputs are checked there.
void Worker::upload_reference() {
  if (!device_compare_) return;
  for (auto& b : buffers_) {
    if (!b.checked() || b.expected_on_device_only) continue;
    reserve_expected_device(b, b.expected.size());
    upload(b.expected_device, b.expected.data(), b.expected.size(), "upload of the reference");
  }
}

void Worker::reserve_expected_device(Buffer& b, std::size_t bytes) {
  if (bytes <= b.expected_device_bytes) return;
  if (b.expected_device) check(cudaFree(b.expected_device), "cudaFree");
  b.expected_device = nullptr;
  b.expected_device_bytes = 0;
  check(cudaMalloc(&b.expected_device, bytes), "cudaMalloc(reference on the GPU)");
  b.expected_device_bytes = bytes;
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

void* Worker::buffer(const std::string& name, std::size_t* count) const {
  for (const auto& b : buffers_) {
    if (b.spec.name == name) {
      if (count) *count = b.count;
      return b.device;
    }
  }
  if (count) *count = 0;
  return nullptr;
}

void Worker::upload_constants(const Loaded& l) {
  if (constants_uploaded_.count({l.library, inputs_generation_})) return;
  for (const auto& b : buffers_) {
    if (b.spec.role != BufferRole::kConstant) continue;
    void* address = nullptr;
    std::size_t size = 0;
    if (cudaLibraryGetGlobal(&address, &size, l.library, b.spec.name.c_str()) != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorKind::kInput,
                  fmt::format("constant buffer '{}': the kernel has no __constant__ variable '{}' "
                              "(declare it with that name at file scope)",
                              b.spec.name, b.spec.name));
    }
    const std::size_t bytes = b.count * elem_size(b.spec.type);
    if (bytes > size)
      throw Error(ErrorKind::kInput,
                  fmt::format("constant buffer '{}': {} elements ({} bytes) do not fit the "
                              "kernel's __constant__ variable '{}' ({} bytes)",
                              b.spec.name, b.count, bytes, b.spec.name, size));
    check(cudaMemcpy(address, b.device, bytes, cudaMemcpyDeviceToDevice),
          "upload of a constant buffer");
  }
  constants_uploaded_.insert({l.library, inputs_generation_});
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
  upload_constants(l);
  current_ = &l;
  if (k.run) {
    const unsigned grid[3] = {g.grid[0], g.grid[1], g.grid[2]};
    const unsigned block[3] = {g.block[0], g.block[1], g.block[2]};
    ktune_run_ctx ctx{sizeof(ktune_run_ctx),
                      stream_,
                      l.kernel,
                      grid,
                      block,
                      g.shared_mem,
                      args.data(),
                      &Worker::hook_launch,
                      &Worker::hook_buffer,
                      &Worker::hook_value,
                      &Worker::hook_cuda_function,
                      k.user_data,
                      this,
                      &Worker::hook_global};
    char error[1024] = {0};
    const int rc = k.run(&ctx, error, sizeof(error));
    if (rc != 0) {
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) throw CudaFailure{e, fmt::format("run hook: {}", error)};
      throw Error(ErrorKind::kInput, fmt::format("run hook failed: {}", error));
    }
  } else {
    check(cudaLaunchKernel(
              static_cast<const void*>(l.kernel), dim3(g.grid[0], g.grid[1], g.grid[2]),
              dim3(g.block[0], g.block[1], g.block[2]), args.data(), g.shared_mem, stream_),
          "cudaLaunchKernel");
  }
}

std::optional<std::string> Worker::verify(bool second_pattern_only) {
  for (auto& b : buffers_) {
    if (!b.checked()) continue;
    if (second_pattern_only && !b.expected_has_poison) continue;
    if (auto wrong = verify_buffer(b)) return wrong;
  }
  return std::nullopt;
}

namespace {
std::string mismatch_text(const Buffer& b, const Mismatch& m) {
  return fmt::format("{}[{}] = {}, expected {} ({} of {} elements differ{})", b.spec.name, m.first,
                     m.got, m.expected, m.count, b.count,
                     is_float(b.spec.type) ? fmt::format("; tolerance {} + {} * |expected|",
                                                         b.spec.abs_tol, b.spec.rel_tol)
                                           : std::string());
}
}  // namespace

std::optional<std::string> Worker::verify_buffer(Buffer& b) {
  const std::size_t esize = elem_size(b.spec.type);
  if (!device_compare_ || b.expected_device_bytes < b.count * esize) return verify_on_host(b);
  const DeviceCompare::Summary s = device_compare_->compare(
      b.spec.type, b.device, b.expected_device, b.count, b.spec.abs_tol, b.spec.rel_tol);
  if (s.count == 0) return std::nullopt;
  // The first differing element, fetched alone, printed as the host comparison prints it.
  std::vector<unsigned char> got(esize), want(esize);
  check(cudaMemcpy(got.data(), static_cast<const unsigned char*>(b.device) + s.first * esize, esize,
                   cudaMemcpyDeviceToHost),
        "download of a differing element");
  if (b.expected_on_device_only)
    check(cudaMemcpy(want.data(),
                     static_cast<const unsigned char*>(b.expected_device) + s.first * esize, esize,
                     cudaMemcpyDeviceToHost),
          "download of a differing element's reference");
  else
    std::memcpy(want.data(), b.expected.data() + s.first * esize, esize);
  Mismatch m = compare(b.spec.type, got.data(), want.data(), 1, b.spec.abs_tol, b.spec.rel_tol);
  m.first = s.first;
  m.count = s.count;
  return mismatch_text(b, m);
}

std::optional<std::string> Worker::verify_on_host(Buffer& b) {
  const std::size_t bytes = b.count * elem_size(b.spec.type);
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
  const Mismatch m =
      compare(b.spec.type, got, b.expected.data(), b.count, b.spec.abs_tol, b.spec.rel_tol);
  if (m.count == 0) return std::nullopt;
  return mismatch_text(b, m);
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

std::vector<double> Worker::sample_chunk(const Loaded& l, int count, int batch, bool flush,
                                         double& gpu_ms, int warmup) {
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
  note_clock_under_load();
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

void Worker::note_clock_under_load() {
  if (!clocks_) return;
  const ClockReading c = clocks_->read();
  const auto lower = [](int have, int v) {
    return have < 0 ? v : v < 0 ? have : std::min(have, v);
  };
  under_load_.sm_mhz = lower(under_load_.sm_mhz, c.sm_mhz);
  under_load_.memory_mhz = lower(under_load_.memory_mhz, c.memory_mhz);
  under_load_.temperature_c = std::max(under_load_.temperature_c, c.temperature_c);
  under_load_.reasons |= c.reasons;
}

void Worker::record_clocks(Measurement& m) const {
  if (!clocks_ || under_load_.sm_mhz < 0) return;
  m.sm_clock_mhz = under_load_.sm_mhz;
  m.max_sm_clock_mhz = clocks_->max_sm_mhz();
  m.temperature_c = under_load_.temperature_c;
  m.clock_reasons = under_load_.reasons;
}

namespace {
constexpr long kMaxEnergyRuns = 1'000'000;
constexpr auto kEnergyPoll = std::chrono::microseconds(500);
// The first part of a sustained run, while the board's power rises to its level, is not read.
constexpr double kEnergyRamp = 0.1;
constexpr int kEnergyAttempts = 3;
}  // namespace

void Worker::measure_energy(const Loaded& l, Measurement& m, double& gpu_ms) {
  if (measure_.energy_ms <= 0) return;
  if (!clocks_) {
    m.energy_source = "NVML is not available";
    return;
  }
  const auto t0 = Clock::now();
  // A run too short for the energy counter's steps runs again, twice and four times as long.
  PowerEstimate p;
  for (int attempt = 0; attempt < kEnergyAttempts; ++attempt) {
    p = energy_run(l, m.time_ms, measure_.energy_ms * (1 << attempt), gpu_ms);
    if (!p.too_short) break;
  }
  m.phases_ms["energy"] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  m.energy_source = p.source;
  if (!std::isfinite(p.watts) || p.watts <= 0) return;
  m.power_w = p.watts;
  m.energy_j = p.watts * m.time_ms * 1e-3;
}

PowerEstimate Worker::energy_run(const Loaded& l, double time_ms, double length_ms,
                                 double& gpu_ms) {
  const auto t0 = Clock::now();
  const auto since = [&] {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const long runs = std::clamp(static_cast<long>(std::ceil(length_ms / std::max(time_ms, 1e-6))),
                               1L, kMaxEnergyRuns);
  std::vector<EnergySample> samples;
  std::atomic<bool> done{false};
  std::thread poll([&] {
    while (!done.load()) {
      samples.push_back({since(), clocks_->energy_mj(), clocks_->power_mw()});
      std::this_thread::sleep_for(kEnergyPoll);
    }
  });
  double busy_ms = 0, end_ms = 0;
  try {
    while (events_.size() < 2) {
      cudaEvent_t e;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    check(cudaEventRecord(events_[0], stream_), "cudaEventRecord");
    for (long r = 0; r < runs; ++r) launch(l);
    check(cudaEventRecord(events_[1], stream_), "cudaEventRecord");
    check(cudaEventSynchronize(events_[1]), "energy runs");
    end_ms = since();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_[0], events_[1]), "cudaEventElapsedTime");
    busy_ms = ms;
  } catch (...) {
    done = true;
    poll.join();
    throw;
  }
  done = true;
  poll.join();
  gpu_ms += busy_ms;
  const double start_ms = std::max(0.0, end_ms - busy_ms);
  return estimate_power(samples, start_ms + kEnergyRamp * (end_ms - start_ms), end_ms);
}

Measurement Worker::evaluate(const std::string& key, const std::string& lowered,
                             const std::string& cubin, double cut_above_ms) {
  const auto t0 = Clock::now();
  Measurement m;
  // Wall time of each step, for finding where an evaluation's time goes.
  const auto phase = [&](const char* name, Clock::time_point since) {
    m.phases_ms[name] = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  };
  Loaded l;
  double gpu_ms = 0;
  try {
    load(l, key, lowered, cubin);
    phase("load", t0);
    if (check_resources(l, m)) {
      const auto p0 = Clock::now();
      prepare_buffers(l);
      phase("buffers", p0);
      const auto v0 = Clock::now();
      double first_ms = 0;
      const bool right = verify_first_run(l, m, gpu_ms, first_ms);
      if (right) fetch_outputs(m);
      // The first run is the kernel's own work (it also sets the launches per sample); what is
      // left is the cost of checking: poisoning the outputs and comparing them.
      phase("verify", v0);
      m.phases_ms["verify"] -= m.phases_ms["first_run"];
      under_load_ = {};
      if (right) time_samples(l, first_ms, m, gpu_ms, cut_above_ms);
      if (right) record_clocks(m);
      if (right && m.status == TrialStatus::kOk && !m.cut) measure_energy(l, m, gpu_ms);
    }
  } catch (const CudaFailure& f) {
    record_failure(f, m);
  } catch (const Error& e) {
    m.status = TrialStatus::kLaunchFailed;
    m.error = e.what();
  }
  const auto u0 = Clock::now();
  if (!dead_) unload(l);
  phase("unload", u0);
  m.gpu_ms = gpu_ms;
  m.eval_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return m;
}

// Resources first: what cannot launch is skipped without spending GPU time.
bool Worker::check_resources(const Loaded& l, Measurement& m) {
  cudaFuncAttributes attr{};
  check(cudaFuncGetAttributes(&attr, static_cast<const void*>(l.kernel)), "cudaFuncGetAttributes");
  const auto threads = static_cast<int>(l.geometry.threads_per_block());
  const auto dyn = static_cast<int>(l.geometry.shared_mem);
  m.registers = attr.numRegs;
  m.local_bytes = static_cast<int>(attr.localSizeBytes);
  m.static_shared_bytes = static_cast<int>(attr.sharedSizeBytes);
  m.dynamic_shared_bytes = dyn;
  m.max_threads_per_block = attr.maxThreadsPerBlock;
  const auto fail = [&](std::string error) {
    m.status = TrialStatus::kResourcesExceeded;
    m.error = std::move(error);
    return false;
  };
  if (threads > attr.maxThreadsPerBlock)
    return fail(
        fmt::format("{} threads per block, but with {} registers per thread at most {} can launch",
                    threads, attr.numRegs, attr.maxThreadsPerBlock));
  if (static_cast<std::int64_t>(attr.sharedSizeBytes) + dyn >
      device_.limits.max_shared_memory_per_block_optin)
    return fail(
        fmt::format("{} B static + {} B dynamic shared memory exceed the {} B a block may use",
                    attr.sharedSizeBytes, dyn, device_.limits.max_shared_memory_per_block_optin));
  if (dyn > 48 * 1024)
    check(cudaFuncSetAttribute(static_cast<const void*>(l.kernel),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, dyn),
          "cudaFuncSetAttribute(max dynamic shared memory)");
  int blocks = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, static_cast<const void*>(l.kernel),
                                                      threads, l.geometry.shared_mem),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  m.occupancy = static_cast<double>(blocks) * threads /
                static_cast<double>(device_.limits.max_threads_per_multiprocessor);
  if (blocks == 0)
    return fail(
        fmt::format("no block fits a multiprocessor ({} threads, {} registers, {} B shared)",
                    threads, attr.numRegs, attr.sharedSizeBytes + dyn));
  return true;
}

// The verification run on poisoned outputs; where an expected value equals the poison (an int
// -1), a second run with another pattern catches an element left unwritten.
bool Worker::verify_first_run(const Loaded& l, Measurement& m, double& gpu_ms, double& first_ms) {
  poison_outputs(kPoison);
  first_ms = sample_chunk(l, 1, 1, false, gpu_ms)[0];
  m.phases_ms["first_run"] = first_ms;  // as its events measured it
  std::optional<std::string> wrong = verify(false);
  if (!wrong && poison_collision_) {
    poison_outputs(kPoison2);
    (void)sample_chunk(l, 1, 1, false, gpu_ms);
    wrong = verify(true);
  }
  if (!wrong) return true;
  m.status = TrialStatus::kWrongResult;
  m.error = *wrong;
  return false;
}

// The first run's outputs that the caller checks (MeasureOptions::fetch_outputs).
void Worker::fetch_outputs(Measurement& m) {
  for (const auto& b : buffers_) {
    if (!b.fetched) continue;
    std::string& bytes = m.outputs[b.spec.name];
    bytes.resize(b.count * elem_size(b.spec.type));
    check(cudaMemcpy(bytes.data(), b.device, bytes.size(), cudaMemcpyDeviceToHost),
          "download of outputs for the caller's check");
  }
}

// Launches per timed sample: one where each launch starts from a flushed L2 or from restored
// in/out buffers, else enough back-to-back launches of a short kernel that the events' own
// overhead (a few microseconds) stays out of its time. Search and re-timing use the same rule,
// so the time stored for a best is the time its search trial measured.
int Worker::launches_per_sample(double first_ms, bool flush) const {
  const bool has_inout = std::any_of(buffers_.begin(), buffers_.end(), [](const Buffer& b) {
    return b.spec.role == BufferRole::kInOut;
  });
  if (flush || has_inout || first_ms <= 0 || first_ms >= measure_.batch_below_ms) return 1;
  return std::clamp(static_cast<int>(std::ceil(10 * measure_.batch_below_ms / first_ms)), 1, 1000);
}

// Timed samples (fixed or adaptive), then the last run's output checked again (a race shows up
// there). With the early cut-off (`cut_above_ms` > 0) the first MeasureOptions::kCutoffSamples
// come first, and cut_off (ktune/cutoff.h) may stop the configuration there.
void Worker::time_samples(const Loaded& l, double first_ms, Measurement& m, double& gpu_ms,
                          double cut_above_ms) {
  const auto t1 = Clock::now();
  const bool flush = needs_flush();
  const int batch = launches_per_sample(first_ms, flush);
  std::vector<double> samples;
  const bool fixed = measure_.samples > 0;
  const int target = fixed ? measure_.samples : measure_.max_samples;
  double timed_gpu = 0;
  int warmup = measure_.warmup;
  constexpr int kFirst = MeasureOptions::kCutoffSamples;
  bool may_cut = cut_above_ms > 0 && target > kFirst;
  while (static_cast<int>(samples.size()) < target) {
    const int have = static_cast<int>(samples.size());
    int want =
        fixed ? target - have : std::min(target - have, std::max(measure_.min_samples - have, 3));
    if (may_cut) want = std::min(want, kFirst - have);
    // Warm-up runs go in front of the first chunk: one wait for both.
    auto chunk = sample_chunk(l, want, batch, flush, timed_gpu, warmup);
    if (warmup > 0) {
      // The warm-up's GPU time is not in the events; count it as the first sample's.
      gpu_ms += warmup * (chunk.empty() ? 0 : chunk[0]);
      warmup = 0;
    }
    samples.insert(samples.end(), chunk.begin(), chunk.end());
    if (may_cut && static_cast<int>(samples.size()) >= kFirst) {
      may_cut = false;
      m.cut = cut_off(samples, cut_above_ms);
      if (m.cut) break;
    }
    if (fixed || static_cast<int>(samples.size()) < measure_.min_samples) continue;
    const SampleStats st = sample_stats(samples);
    if (st.spread <= measure_.target_spread || timed_gpu >= measure_.max_seconds * 1e3) break;
  }
  m.phases_ms["time"] = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  gpu_ms += timed_gpu;
  m.timed_ms = timed_gpu;
  const auto t2 = Clock::now();
  const auto late = verify(false);
  m.phases_ms["post_verify"] = std::chrono::duration<double, std::milli>(Clock::now() - t2).count();
  if (late) {
    m.status = TrialStatus::kWrongResult;
    m.error = "after the timed runs: " + *late;
    return;
  }
  const SampleStats st = sample_stats(samples);
  m.samples_ms = samples;
  m.time_ms = st.median;
  m.time_min_ms = st.min;
  m.time_mean_ms = st.mean;
  m.time_spread = st.spread;
  m.launches_per_sample = batch;
  m.l2_flushed = flush ? 1 : 0;
}

// A CUDA failure of a trial: crashed when it poisoned the context (the process must then end),
// else resources exceeded or launch failed.
void Worker::record_failure(const CudaFailure& f, Measurement& m) {
  const cudaError_t sticky_check = cudaStreamSynchronize(stream_);
  const bool sticky = is_sticky(f.code) || is_sticky(sticky_check);
  cudaGetLastError();
  const std::string what = fmt::format("{}: {}", f.where, cuda_text(f.code));
  if (sticky) {
    dead_ = true;
    m.status = TrialStatus::kCrashed;
    m.error = what;
  } else if (f.code == cudaErrorLaunchOutOfResources) {
    m.status = TrialStatus::kResourcesExceeded;
    m.error = what;
  } else if (f.where == "cudaLibraryLoadData" || f.where == "cudaLibraryGetKernel") {
    m.status = TrialStatus::kLaunchFailed;
    m.error = "loading the CUBIN: " + what;
  } else {
    m.status = TrialStatus::kLaunchFailed;
    m.error = what;
  }
}

double Worker::sustain(const std::vector<Loaded>& loaded, const std::vector<int>& per_round,
                       const std::vector<int>& batch, bool flush) {
  double ran = 0;
  if (measure_.sustain_ms <= 0 || loaded.empty()) return ran;
  // A kernel that draws the GPU's power limit runs at its boost clock only for its first tens
  // of milliseconds; then the clock falls to what the limit allows (on an H200, 4096^3 TF32
  // tensor-core kernels: 1980 MHz to 1400-1700 MHz, up to 20% slower), and a client running
  // it in a stream sees that. Windows of sustain_ms run until a window's median times are
  // within 0.5% of the window's before and the lowest SM clock under load fell by at most 1%
  // (memory-bound kernels: two windows), at most MeasureOptions::kSustainWindows windows. A window
  // also ends after MeasureOptions::kSustainWallFactor times its length of wall time, so that work
  // outside the events (resetting inout buffers, flushing the L2) cannot stretch it past the
  // watchdog's allowance.
  const std::size_t n = loaded.size();
  SustainWindow before{std::vector<double>(n, std::nan("")), -1};
  std::size_t next = 0;  // candidates take turns across windows: a chunk may outlast a window
  for (int window = 0; window < MeasureOptions::kSustainWindows; ++window) {
    const double until = ran + measure_.sustain_ms;
    const auto wall_until =
        Clock::now() + std::chrono::duration<double, std::milli>(
                           MeasureOptions::kSustainWallFactor * measure_.sustain_ms);
    std::vector<std::vector<double>> times(n);
    under_load_ = {};
    while (ran < until && Clock::now() < wall_until) {
      const double had = ran;
      const std::size_t i = next;
      next = (next + 1) % n;
      prepare_buffers(loaded[i]);
      const std::vector<double> chunk = sample_chunk(loaded[i], per_round[i], batch[i], flush, ran);
      times[i].insert(times[i].end(), chunk.begin(), chunk.end());
      if (ran <= had) return ran;  // events that read no time: nothing to wait for
    }
    SustainWindow now{std::vector<double>(n, std::nan("")), under_load_.sm_mhz};
    for (std::size_t i = 0; i < n; ++i)
      if (!times[i].empty()) now.medians[i] = sample_stats(times[i]).median;
    const bool settled = sustain_settled(before, now);
    for (std::size_t i = 0; i < n; ++i)  // one that did not run keeps its median before
      if (std::isnan(now.medians[i])) now.medians[i] = before.medians[i];
    before = std::move(now);
    if (settled) break;
  }
  return ran;
}

namespace {

// Samples per round of a re-timing, each of `batch` launches: enough for about 1 ms of GPU time
// (5 to 20). Within a round a candidate is timed as the search times it: warm-up launches, then
// samples queued back to back. Timing one sample per synchronisation instead measures a GPU
// that idled before every launch, which for a 0.04 ms kernel read 4% slow, and bursts of 5 such
// runs read 0.6% faster than the 20 of bench/peers: the stored time must be the one a search
// trial and a client launching the kernel in a stream see.
int samples_per_round(double first_ms, int batch) {
  const double sample_ms = std::max(first_ms, 1e-6) * batch;
  return static_cast<int>(std::clamp(std::ceil(1.0 / sample_ms), 5.0, 20.0));
}

// A finalist's re-timed measurement, without its clocks: the samples of its timing rounds (of
// its ranking rounds where there were none), and the median of its ranking rounds to rank it by.
Measurement retimed_measurement(const std::vector<double>& rank, const std::vector<double>& timed,
                                int batch, bool flush) {
  const std::vector<double>& samples = timed.empty() ? rank : timed;
  const SampleStats st = sample_stats(samples);
  Measurement m;
  m.samples_ms = samples;
  m.time_ms = st.median;
  m.time_min_ms = st.min;
  m.time_mean_ms = st.mean;
  m.time_spread = st.spread;
  m.rank_ms = sample_stats(rank).median;
  m.l2_flushed = flush ? 1 : 0;
  m.launches_per_sample = batch;
  return m;
}

}  // namespace

// The finalists loaded from the request's CUBINs, calibrated (launches per sample, samples per
// round), run back to back until the GPU is in its sustained state, then timed in interleaved
// rounds (a slow phase of the GPU hits them all alike).
protocol::RetimeReply Worker::retime(const protocol::RetimeRequest& request,
                                     const std::string& blob) {
  protocol::RetimeReply out;
  std::vector<Loaded> loaded;
  std::size_t offset = 0;
  try {
    for (const auto& c : request.candidates) {
      loaded.emplace_back();
      load(loaded.back(), c.config, c.lowered_name, blob.substr(offset, c.size));
      offset += c.size;
      // As for a search trial: a kernel above 48 KiB of dynamic shared memory must opt in, on
      // a library this load may have loaded afresh (its search trial's was evicted, or another
      // process measured it: a finalist answered from the database).
      Measurement resources;
      if (!check_resources(loaded.back(), resources))
        throw Error(ErrorKind::kInternal, c.config + ": " + resources.error);
    }
    std::vector<std::vector<double>> rank(loaded.size()), timed(loaded.size());
    std::vector<int> batch(loaded.size(), 1), per_round(loaded.size(), 5);
    const bool flush = needs_flush();
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      prepare_buffers(loaded[i]);
      const double first_ms = sample_chunk(loaded[i], 1, 1, flush, out.gpu_ms)[0];
      batch[i] = launches_per_sample(first_ms, flush);
      per_round[i] = samples_per_round(first_ms, batch[i]);
    }
    const auto s0 = Clock::now();
    out.gpu_ms += sustain(loaded, per_round, batch, flush);
    const double sustain_wall_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - s0).count();
    // Even rounds rank the candidates, odd ones time them: the time stored for the one ranked
    // fastest is then not the luckiest of several draws of near-equal kernels (the winner's
    // curse, 1-2% for a 0.05 ms reduction whose five finalists were within 1%). One round
    // does both.
    std::vector<ClockReading> clocks(loaded.size());
    for (int r = 0; r < request.rounds; ++r) {
      for (std::size_t i = 0; i < loaded.size(); ++i) {
        prepare_buffers(loaded[i]);
        under_load_ = clocks[i];
        const std::vector<double> chunk = sample_chunk(loaded[i], per_round[i], batch[i], flush,
                                                       out.gpu_ms, std::max(1, measure_.warmup));
        clocks[i] = under_load_;
        auto& into = r % 2 == 1 ? timed[i] : rank[i];
        into.insert(into.end(), chunk.begin(), chunk.end());
      }
    }
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      Measurement m = retimed_measurement(rank[i], timed[i], batch[i], flush);
      under_load_ = clocks[i];
      record_clocks(m);
      if (measure_.energy_ms > 0) {
        prepare_buffers(loaded[i]);  // the buffers are sized for the candidate timed last
        measure_energy(loaded[i], m, out.gpu_ms);
      }
      m.phases_ms["sustain"] = sustain_wall_ms;
      out.results.push_back(std::move(m));
    }
  } catch (const CudaFailure& f) {
    if (is_sticky(f.code) || is_sticky(cudaStreamSynchronize(stream_))) dead_ = true;
    out = {};
    out.error = fmt::format("{}: {}", f.where, cuda_text(f.code));
  } catch (const Error& e) {
    out = {};
    out.error = e.what();
  }
  if (!dead_)
    for (auto& l : loaded) unload(l);
  return out;
}

}  // namespace ktune::worker
