// From a job to a run: a job file and its overrides resolved into what one tuning run needs
// (the kernel, the problem, the options, the backend with its recording, the kernel bound to the
// device, the strategy `auto` chose). The session (ktune/session.h) calls these; programs tune
// through the session, and the front ends of ktune's tree read what they resolved.
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
  std::unique_ptr<Strategy> strategy;  // the one that runs: what auto chose, where it was auto
  std::optional<AutoChoice> auto_choice;
  std::string strategy_text;  // "random", or "auto (random: <reason>)"
  std::uint64_t valid = 0;    // replay: valid configurations of the space
  std::uint64_t missing = 0;  // of which the recording lacks
};

// Throws Error(kDevice) when the job needs a GPU that is not there (and nothing ships to replay
// instead), naming where recordings were looked for. `gpu`: a CUDA backend already started for
// the same device (an earlier session's, Session's series), used instead of `cuda`'s.
TuningSetup set_up_tuning(TuningJob job, CudaBackend::Options cuda,
                          std::unique_ptr<CudaBackend> gpu = nullptr);

}  // namespace ktune
