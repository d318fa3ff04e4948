// What the tuning loop stores (internal): trials built from measurements, the throughput of a
// time, the ids a trial is filed under, and a kernel's StoredSpec.
#pragma once

#include <cstdint>
#include <string>

#include "ktune/backend.h"
#include "ktune/instance.h"
#include "ktune/store.h"
#include "ktune/stored_spec.h"

namespace ktune {

// GB/s and GFLOP/s of a configuration at a time; NaN where the kernel declares no bytes/flops.
struct Throughput {
  double gbps = 0;
  double gflops = 0;
};
Throughput throughput(const KernelInstance& instance, const Config& config, double time_ms);

// The rows a run's trials are filed under.
struct TrialIds {
  std::int64_t run = 0, kernel = 0, device = 0, problem = 0;
  void stamp(TrialRecord& trial) const;
};

// A trial (not yet filed: no ids, kind search) from one evaluation of a configuration.
TrialRecord measured_trial(const KernelInstance& instance, const Config& config,
                           const std::string& arch, const Measurement& m,
                           const CompileResult* compiled);
// Copies the timing of an ok measurement into a trial.
void set_timing(TrialRecord& trial, const Measurement& m, const Throughput& rate);

StoredSpec stored_spec(const KernelSpec& kernel);

}  // namespace ktune
