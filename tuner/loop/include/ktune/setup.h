// From a job to a run: the overrides a command line (or any program) puts on a job file, and
// their resolution into what one tuning run needs: the kernel, the problem, the options, the
// backend (with its recording) and the kernel bound to the device. A program that links
// ktune::tuner gets from resolve_job() and set_up_tuning() exactly what `ktune tune` does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/cuda_backend.h"
#include "ktune/instance.h"
#include "ktune/job.h"
#include "ktune/registry.h"
#include "ktune/replay.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"

namespace ktune {

// What overrides a job file; an empty field leaves the job file's value (or the default).
struct JobOverrides {
  std::string kernel;
  std::map<std::string, std::int64_t> problem;          // merged over the job's
  std::map<std::string, std::string> inputs, expected;  // per buffer, over the job's (paths
                                                        // relative to the working directory)
  std::optional<std::string> strategy;                  // "auto" is the default
  std::map<std::string, std::string> strategy_options;  // merged over the job's
  std::optional<std::string> study_storage;             // Optuna strategies: study_storage option
  std::optional<std::uint64_t> budget_evaluations;
  std::optional<double> budget_seconds;
  std::uint64_t seed = 1;
  bool reuse = true;
  bool warm_start = false;
  std::vector<std::string> warm_start_from;  // recordings of the kernel on other GPUs
  std::uint32_t part = 0, parts = 1;         // --part I/K: part = I - 1
  int retime_top = 5;
  std::optional<int> samples, warmup, max_samples;
  std::optional<double> target_spread, timeout_seconds, sustain_ms;
  std::optional<std::string> flush_l2;
  std::optional<std::string> verify;      // "device" | "host"
  std::optional<std::string> backend;     // "cuda" | "replay"
  std::optional<std::string> replay;      // a recording: implies the replay backend
  std::string replay_device;              // names the recording's device
  std::optional<double> replay_delay_ms;  // replay: simulated evaluation time per trial
  std::string command_line;               // provenance
};

enum class BackendKind { kCuda, kReplay };

// A job with every choice made that needs no GPU.
struct TuningJob {
  KernelSpec kernel;    // with the job's space and restrictions
  Problem problem;      // defaults filled in
  TuneOptions options;  // strategy "auto" is resolved by set_up_tuning()
  BackendKind backend = BackendKind::kCuda;
  bool explicit_backend = false;         // --backend or --replay given: no fallback
  std::shared_ptr<Recording> recording;  // kReplay: the recording
  std::string replay_reason;             // why a recording is replayed that was not asked for
  bool no_gpu = false;                   // ... because there is no GPU
  double replay_delay_ms = 0;            // kReplay: each evaluation waits this long
  std::vector<std::string> notes;        // to tell the user ("warning: ..." for warnings)
};

// Merges a job file with overrides: the kernel (registered, or synthesized from a recording that
// was given or ships with ktune), the problem, the strategy and its options, budget and
// measurement. Throws Error(kUsage) for what a user got wrong (an unknown kernel, a backend
// that does not exist, a recording of another kernel, an option out of range), Error(kInput) for
// a broken job or recording.
TuningJob resolve_job(const Registry& registry, const JobFile& job, const JobOverrides& overrides);

// A job ready to run: its backend (CUDA, or without a GPU and without an explicit backend, the
// recording of the same job that ships with ktune), the kernel bound to the backend's device
// limits, and the strategy chosen when it was "auto".
struct TuningSetup {
  TuningJob job;
  std::unique_ptr<Backend> backend;
  CudaBackend* cuda = nullptr;  // the backend when it is the CUDA one
  std::unique_ptr<KernelInstance> instance;
  std::unique_ptr<Strategy> strategy;  // "auto" itself when the job says auto
  std::optional<AutoChoice> auto_choice;
  std::string strategy_text;  // "random", or "auto (random: <reason>)"
  std::uint64_t valid = 0;    // replay: valid configurations of the space
  std::uint64_t missing = 0;  // of which the recording lacks
};

// Throws Error(kDevice) when the job needs a GPU that is not there (and nothing ships to replay
// instead), naming where recordings were looked for.
TuningSetup set_up_tuning(TuningJob job, CudaBackend::Options cuda);

}  // namespace ktune
