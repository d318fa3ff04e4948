// Backends evaluate configurations: the CUDA backend measures them on a GPU in a worker
// process; the replay backend answers from recorded measurements; tests use fakes. The tuning
// loop only sees this interface.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/instance.h"
#include "ktune/status.h"

namespace ktune {

// How a configuration is timed (docs/measuring.md).
struct MeasureOptions {
  // Fixed mode (samples > 0): exactly `samples` timed runs after `warmup` runs.
  // Adaptive mode (samples == 0): at least min_samples, then until the relative spread
  // (interquartile range / median) is under target_spread, or max_samples or max_seconds of
  // timed runs are reached.
  int samples = 0;
  int warmup = 1;
  int min_samples = 5;
  int max_samples = 50;
  double target_spread = 0.01;
  double max_seconds = 0.5;
  // A run shorter than this is timed in batches of launches between two events, so launch
  // latency does not dominate (only when the L2 is not flushed between runs).
  double batch_below_ms = 0.02;
  // Before the final re-timing the finalists run back to back in windows of this much GPU time
  // until a window's median times are within 0.5% of the previous window's and the SM clock
  // under load no longer falls (at most 20 windows): the stored time is that of a GPU under
  // sustained load, held at its power limit where the kernel reaches it, not of a burst at the
  // boost clock (docs/measuring.md#sustained-load). 0: none.
  double sustain_ms = 100;
  static constexpr int kSustainWindows = 20;
  // A window also ends after this many times its length of wall time (work outside the events).
  static constexpr double kSustainWallFactor = 4;
  // The longest the sustained load can take, in seconds of wall time.
  double sustain_limit_seconds() const {
    return kSustainWindows * kSustainWallFactor * sustain_ms * 1e-3;
  }
  // L2: kAuto flushes before every timed run when the kernel's buffers together are smaller
  // than twice the device's L2, so no run is served from a cache its predecessor warmed;
  // kAlways / kNever force it.
  FlushL2 flush_l2 = FlushL2::kAuto;
  // Outputs are compared with the reference on the GPU, fetching only a summary; false: every
  // output is downloaded and compared on the host (the path before GPU verification, kept for
  // checking it and for kernels whose outputs do not fit twice in device memory).
  bool verify_on_device = true;
  // The early cut-off (docs/measuring.md#early-cut-off): once the run has a best, a
  // configuration whose fastest of its first kCutoffSamples samples is above kCutoffFactor
  // times that best stops sampling (Measurement::cut). false: every configuration gets every
  // sample. Re-timings never cut.
  bool cutoff = true;
  // Energy (docs/energy.md): after its timed samples a configuration runs back to
  // back for this much GPU time while NVML's energy counter is read, read-only; 0: no energy
  // is measured. kDefaultEnergyMs is what an objective that needs energy turns on.
  double energy_ms = 0;
  static constexpr double kDefaultEnergyMs = 300;
  static constexpr int kCutoffSamples = 5;
  static constexpr double kCutoffFactor = 1.5;
  // A trial that takes longer than this (compile excluded) is killed: status timeout.
  double timeout_seconds = 20;
  std::uint64_t seed = 1;  // input data
  // Outputs the caller checks itself (Kernel Tuner's `verify`; CudaBackend::Options::host_check):
  // these OUTPUT/INOUT buffers are not compared with a reference; their contents after each
  // configuration's first run come back in Measurement::outputs.
  std::vector<std::string> fetch_outputs;
};

// One window of a sustained load (MeasureOptions::sustain_ms): each candidate's median time in
// it (NaN: it did not run in this window) and the lowest SM clock read under load (-1: none).
struct SustainWindow {
  std::vector<double> medians;
  int sm_clock_mhz = -1;
};
// The load has settled when every candidate timed in both windows is within 0.5% of its median
// before (at least one is) and the SM clock fell by at most 1%.
bool sustain_settled(const SustainWindow& before, const SustainWindow& now);

// One reading of NVML taken while a configuration ran back to back (MeasureOptions::energy_ms):
// milliseconds since the run began, the energy counter in millijoules and the power in
// milliwatts (-1 where NVML gave none).
struct EnergySample {
  double t_ms = 0;
  long long energy_mj = -1;
  int power_mw = -1;
};
struct PowerEstimate {
  double watts = std::numeric_limits<double>::quiet_NaN();
  std::string source;      // "counter", "power", or why there is no estimate
  bool too_short = false;  // the device has a counter, but the span was too short for it
};
// The mean power between from_ms and to_ms: the energy counter's advance between its first and
// its last step inside that span, divided by the time between them, where the two steps are at
// least a third of the span apart (an H200's counter steps about every 100 ms). A device with a
// counter whose steps the span does not hold gives none (too_short: run longer); only a device
// without a counter gives the mean of its power readings inside the span.
PowerEstimate estimate_power(const std::vector<EnergySample>& samples, double from_ms,
                             double to_ms);

// What one evaluation found.
struct Measurement {
  TrialStatus status = TrialStatus::kOk;
  std::string error;               // reason for a non-ok status
  std::vector<double> samples_ms;  // per kernel run; batched samples are divided out
  double time_ms = 0;              // median of samples
  double time_min_ms = 0;
  double time_mean_ms = 0;
  double time_spread = 0;  // IQR / median
  // A re-timing's ranking: the median of the rounds the finalists were ranked on, where
  // time_ms comes from the others (NaN: rank by time_ms).
  double rank_ms = std::numeric_limits<double>::quiet_NaN();
  // Resources of the loaded kernel; -1 where unknown.
  int registers = -1;
  int local_bytes = -1;
  int static_shared_bytes = -1;
  int dynamic_shared_bytes = -1;
  int max_threads_per_block = -1;
  double occupancy = -1;        // active warps / max warps per multiprocessor
  int l2_flushed = -1;          // 1: the L2 was flushed before each timed run; -1 unknown
  int launches_per_sample = 1;  // short kernels are timed in batches of launches
  // The GPU right after the timed samples, read-only through NVML; -1 where unknown.
  int sm_clock_mhz = -1;
  int max_sm_clock_mhz = -1;  // the device's highest SM clock
  int temperature_c = -1;
  std::uint64_t clock_reasons = 0;  // NVML's clock event reasons at that moment (a bit set)
  // MeasureOptions::energy_ms: the board's mean power while the configuration ran back to back,
  // and the energy of one run (that power times time_ms); NaN where not measured. energy_source
  // says how: "counter" (NVML's energy counter), "power" (NVML's power readings, on a device
  // without a counter), "recorded" (replayed), or why there is none.
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  std::string energy_source;
  // Its sampling stopped at the early cut-off (MeasureOptions::cutoff): samples_ms holds the
  // samples it has.
  bool cut = false;
  // Accounting, for throughput figures.
  double gpu_ms = 0;        // GPU time in this trial's launches (warm-up, checks, samples)
  double timed_ms = 0;      // GPU time of the timed samples alone
  double eval_ms = 0;       // wall time of the evaluation
  bool from_cache = false;  // answered from the database / a recording, not measured
  // Where the evaluation's wall time went (load, buffers, verify, time, ...), for diagnostics.
  std::map<std::string, double> phases_ms;
  // MeasureOptions::fetch_outputs: each buffer's bytes after the first run (not stored).
  std::map<std::string, std::string> outputs;
};

// One finalist for interleaved re-timing.
struct RetimeCandidate {
  Config config;
  const CompileResult* compiled = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cuda", "replay", ...
  // True for a backend that answers from recorded measurements instead of measuring: its runs
  // are marked replayed, and replayed and measured trials never answer for each other.
  virtual bool replays() const { return false; }
  virtual DeviceInfo device() const = 0;
  // Whether evaluate() needs a CompileResult (the CUDA backend) or not (replay).
  virtual bool needs_compilation() const = 0;
  // Prepares for one kernel instance (for the CUDA backend: starts the worker process, which
  // allocates buffers, generates inputs and computes the reference). Called before evaluate().
  virtual void prepare(const KernelInstance& instance, const MeasureOptions& options) = 0;
  // Seconds of each step of the last preparation, where the backend knows them (the CUDA
  // backend: the worker process's start, its context, inputs, reference, ...).
  virtual std::map<std::string, double> prepare_phases() const { return {}; }
  // Evaluates one valid configuration. Trial-level failures (compile, launch, wrong result,
  // crash, timeout) come back as a status; only failures of the backend itself throw.
  virtual Measurement evaluate(const Config& config, const CompileResult* compiled) = 0;
  // The time above which the next configurations stop sampling after their first
  // MeasureOptions::kCutoffSamples samples (their fastest is compared); 0: none. The tuner sets
  // it from its best; a backend that cannot stop early ignores it.
  virtual void set_cutoff(double /*ms*/) {}
  // Pipelined evaluation: submit() queues an evaluation, collect() returns the result of the
  // oldest one not yet collected. A backend with a depth above 1 works on the next submitted
  // configuration while the tuner stores the previous result, so the GPU does not wait for the
  // host. The defaults evaluate synchronously.
  virtual std::size_t pipeline_depth() const { return 1; }
  virtual void submit(const Config& config, const CompileResult* compiled) {
    done_.push_back(evaluate(config, compiled));
  }
  virtual Measurement collect() {
    Measurement m = std::move(done_.front());
    done_.erase(done_.begin());
    return m;
  }
  // Re-times finalists interleaved (A B C A B C ...), `rounds` samples each, so that drift in
  // clocks or temperature cannot favour one; returns one Measurement per candidate.
  virtual std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates,
                                          int rounds) = 0;

 private:
  std::vector<Measurement> done_;  // results of the default submit(), oldest first
};

}  // namespace ktune
