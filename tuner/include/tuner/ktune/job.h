// Tuning jobs from files (configs/*.toml): which kernel, which problem, a narrowed or widened
// search space, the strategy, budget and measurement settings. Overrides (a command line's) and
// the resolution of a job into a run are in ktune/setup.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ktune/kernel.h"

namespace ktune {

struct JobFile {
  std::string path;
  std::string kernel;  // may be empty: the command line names it
  std::map<std::string, std::int64_t> problem;
  std::vector<std::pair<std::string, std::vector<Value>>> space;  // parameter -> its values
  std::vector<std::string> restrictions;                          // added to the kernel's
  std::optional<std::string> strategy;
  std::map<std::string, std::string> strategy_options;
  std::optional<std::uint64_t> budget_evaluations;
  std::optional<double> budget_seconds;
  // [measure]
  std::optional<int> samples, warmup, max_samples;
  std::optional<double> target_spread, timeout_seconds;
  std::optional<std::string> flush_l2;
};

// Reads a job file; throws Error(kInput) naming the file and the field for anything malformed.
JobFile load_job(const std::string& path);

// The kernel with the job's value lists and extra restrictions. Throws Error(kUsage) for a
// parameter the kernel does not have. A default that is no longer among the values becomes the
// first value.
KernelSpec apply_job(const KernelSpec& kernel, const JobFile& job);

}  // namespace ktune
