// The GPU worker (internal): owns the CUDA context, the kernel's buffers, its inputs and the
// reference output. For each configuration it loads the CUBIN, checks resources before
// launching, verifies the output against the reference on poisoned outputs, and times it; the
// answer is a typed Measurement (JSON exists only at the pipe, protocol.h). It runs in the
// worker process (worker_main.cpp) and, for benchmarks, in-process (GpuEvaluator).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_compare.h"
#include "backends/cuda/gpu_clocks.h"
#include "backends/cuda/host_memory.h"
#include "backends/cuda/inputs.h"
#include "backends/cuda/protocol.h"
#include "ktune/backend.h"
#include "ktune/device.h"
#include "ktune/instance.h"

namespace ktune::worker {

// A CUDA call failed. Sticky errors leave the context unusable: the worker must exit.
struct CudaFailure {
  cudaError_t code;
  std::string where;
};
bool is_sticky(cudaError_t e);
void check(cudaError_t e, const char* where);
std::string cuda_text(cudaError_t e);  // "cudaErrorIllegalAddress (an illegal memory access ...)"

struct Buffer {
  BufferSpec spec;
  BufferInit init;
  void* device = nullptr;          // what the kernel sees
  void* pristine = nullptr;        // INOUT: the initial contents, restored before every run
  std::size_t capacity = 0;        // bytes allocated
  std::size_t count = 0;           // elements for the current config
  std::size_t generated = 0;       // INPUT/INOUT: elements generated and uploaded
  std::size_t host_generated = 0;  // INPUT/INOUT: elements generated into `host`
  HostBytes host;                  // INPUT/INOUT: generated data
  HostBytes expected;
  void* expected_device = nullptr;  // the reference on the GPU, for DeviceCompare
  std::size_t expected_device_bytes = 0;
  // The reference was made on the GPU and stays there alone (`expected` is empty).
  bool expected_on_device_only = false;
  bool expected_has_poison = false;  // some expected element equals the poison kPoison
  // INPUT/INOUT: the GPU makes this input (as the host would) where nothing on the host reads it.
  std::optional<DeviceFill> device_fill;
  // OUTPUT/INOUT: page-locked host memory the output is downloaded into for checking, kept
  // across trials (a pageable download of a large output, and allocating it, cost more than the
  // comparison); empty where page-locked memory could not be had, then `download` serves.
  void* pinned = nullptr;
  std::size_t pinned_bytes = 0;
  HostBytes download;
  bool fetched = false;    // MeasureOptions::fetch_outputs: the caller checks it, not the worker
  bool unchecked = false;  // the kernel's outputs are not checked (KernelSpec::unchecked)
  bool checked() const {
    return !fetched && !unchecked &&
           (spec.role == BufferRole::kOutput || spec.role == BufferRole::kInOut);
  }
  bool has_input() const {
    return spec.role == BufferRole::kInput || spec.role == BufferRole::kInOut ||
           spec.role == BufferRole::kConstant;
  }
};

// A loaded configuration.
struct Loaded {
  const KernelInstance* instance = nullptr;  // whose space `config` is of
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  Config config;
  LaunchGeometry geometry;
  std::vector<ScalarArg> scalars;
  std::vector<std::size_t> sizes;
};

class Worker {
 public:
  // A kernel whose reference is a configuration has it compiled here, while the context is
  // created; Error(kInput) where it does not compile.
  Worker(const KernelSpec& kernel, const Problem& problem, int device,
         const MeasureOptions& measure);
  // Frees what it holds on the GPU and the host, so that the next Worker of the same process (a
  // re-init for another problem) finds the device's memory as this one did.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  const KernelInstance& instance() const { return *instance_; }
  const DeviceInfo& device() const { return device_; }
  void* buffer(const std::string& name, std::size_t* count) const;
  // Trial-level failures come back as the measurement's status; a fault that poisons the context
  // also sets dead().
  // `cut_above_ms` (0: none): the early cut-off, MeasureOptions::cutoff.
  Measurement evaluate(const std::string& key, const std::string& lowered, const std::string& cubin,
                       double cut_above_ms = 0);
  protocol::RetimeReply retime(const protocol::RetimeRequest& request, const std::string& blob);
  bool dead() const { return dead_; }
  // Seconds of each step of the start (context, comparison kernels, inputs and reference).
  const std::map<std::string, double>& startup() const { return startup_; }

 private:
  // `instance`: the space `key` is of, where not the tuned one (the reference configuration's).
  void load(Loaded& l, const std::string& key, const std::string& lowered, const std::string& cubin,
            const KernelInstance* instance = nullptr);
  void unload(Loaded& l);
  // The steps of evaluate(); each records what it found in `m`, false when the trial ends there.
  bool check_resources(const Loaded& l, Measurement& m);
  bool verify_first_run(const Loaded& l, Measurement& m, double& gpu_ms, double& first_ms);
  void fetch_outputs(Measurement& m);
  void time_samples(const Loaded& l, double first_ms, Measurement& m, double& gpu_ms,
                    double cut_above_ms);
  void record_failure(const CudaFailure& f, Measurement& m);

  void prepare_buffers(const Loaded& l);
  void generate_host_input(std::size_t i, std::size_t need);
  void compute_reference();
  void reference_from_function();
  void reference_from_config();
  void launch(const Loaded& l);  // one run, as the kernel defines it (hook or launch)
  // Copies the constant buffers into the library's __constant__ variables, once per library and
  // inputs, so a timed run never includes the copy.
  void upload_constants(const Loaded& l);
  void reset_inouts();
  void poison_outputs(unsigned char byte);
  std::optional<std::string> verify(bool second_pattern_only);
  // One buffer's check: on the GPU where the reference is there, else downloaded to the host;
  // the message names the first element that differs.
  std::optional<std::string> verify_buffer(Buffer& b);
  std::optional<std::string> verify_on_host(Buffer& b);
  void upload_reference();
  // Makes b.expected_device hold at least `bytes` (its contents are lost where it grows).
  void reserve_expected_device(Buffer& b, std::size_t bytes);
  // The random sequence of input `i`: the same in every worker of one seed, host or GPU.
  std::uint64_t input_stream(std::size_t i) const;
  // Copies `bytes` of pageable host memory to the GPU and waits: large copies go through two
  // page-locked slots, filled on several threads while the other slot is on its way (a pageable
  // cudaMemcpy copies into the driver's staging memory on one thread).
  void upload(void* device, const void* host, std::size_t bytes, const char* what);
  int launches_per_sample(double first_ms, bool flush) const;
  bool needs_flush() const;
  void flush_l2();
  // Enqueues `warmup` untimed runs and `count` timed samples of `batch` runs each, then waits
  // once; returns milliseconds per run for each sample and adds the GPU time to gpu_ms.
  std::vector<double> sample_chunk(const Loaded& l, int count, int batch, bool flush,
                                   double& gpu_ms, int warmup = 0);
  // Runs the finalists back to back, as their rounds do, until the GPU is in the state a
  // sustained load holds it in (MeasureOptions::sustain_ms); returns the GPU milliseconds run.
  double sustain(const std::vector<Loaded>& loaded, const std::vector<int>& per_round,
                 const std::vector<int>& batch, bool flush);
  // The clocks while the GPU works through a queue: sample_chunk reads them after enqueuing,
  // before waiting, and keeps the lowest SM clock (a reading after the wait sees an idle GPU,
  // back at its boost clock).
  void note_clock_under_load();
  void record_clocks(Measurement& m) const;
  // MeasureOptions::energy_ms: runs the configuration back to back for that much GPU time while
  // a thread reads NVML's energy counter and power, and sets m's power and energy (m.time_ms is
  // the time of one run).
  void measure_energy(const Loaded& l, Measurement& m, double& gpu_ms);
  // One energy run of `length_ms` of GPU time (runs of `time_ms` each), and its estimate.
  PowerEstimate energy_run(const Loaded& l, double time_ms, double length_ms, double& gpu_ms);

  // The run hooks a plugin's run function calls (hooks.cpp).
  static int hook_launch(const ktune_run_ctx* ctx, void* kernel, const unsigned grid[3],
                         const unsigned block[3], std::size_t shared_mem, void** args);
  static void* hook_buffer(const ktune_run_ctx* ctx, const char* name, std::size_t* count);
  static std::int64_t hook_value(const ktune_run_ctx* ctx, const char* name, int* found);
  static void* hook_cuda_function(const char* name);
  static void* hook_global(const ktune_run_ctx* ctx, const char* name, std::size_t* bytes);

  std::unique_ptr<KernelInstance> instance_;
  // The kernel's declared space, where a job narrowed the tuned one and the reference is a
  // configuration: the reference configuration's.
  std::unique_ptr<KernelInstance> reference_instance_;
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
  std::size_t inputs_generation_ = 0;  // bumped whenever inputs are filled anew
  std::set<std::pair<cudaLibrary_t, std::size_t>> constants_uploaded_;  // library, generation
  bool poison_collision_ = false;  // some expected element equals the poison
  std::optional<Loaded>
      reference_config_;               // manifest kernels: the config whose output is the reference
  const Loaded* current_ = nullptr;    // for the hook callbacks
  std::unique_ptr<GpuClocks> clocks_;  // null without NVML
  ClockReading under_load_;            // since the last reset: lowest SM clock, highest temperature
  std::unique_ptr<DeviceCompare> device_compare_;  // null: outputs are checked on the host
  std::map<std::string, double> startup_;          // seconds of each step of the constructor
  struct Staging;                                  // upload()'s page-locked slots
  std::unique_ptr<Staging, void (*)(Staging*)> staging_{nullptr, nullptr};
  // The buffer counts the constructor's host reference was made for (empty: none pending).
  std::vector<std::size_t> host_reference_sizes_;
  bool dead_ = false;
};

}  // namespace ktune::worker
