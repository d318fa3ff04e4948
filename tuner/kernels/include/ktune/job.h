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
  std::optional<double> target_spread, timeout_seconds, sustain_ms;
  std::optional<std::string> flush_l2;
  // [inputs] BUFFER = "INIT" and [expected] BUFFER = "file(PATH)"; relative paths are relative
  // to the job file's directory
  std::map<std::string, std::string> inputs, expected;
};

// Reads a job file; throws Error(kInput) naming the file and the field for anything malformed.
// The strategy's name is checked where the job is resolved (ktune/setup.h), which knows them.
JobFile load_job(const std::string& path);

// Replaces buffers' init (`inputs`) and expected contents (`expected`), file paths taken relative
// to `base`; throws Error(kUsage) naming `where` for a buffer the kernel does not have, and
// Error(kInput) for an init or expected text that does not parse.
void apply_inputs(KernelSpec& kernel, const std::map<std::string, std::string>& inputs,
                  const std::map<std::string, std::string>& expected, const std::string& base,
                  const std::string& where);

// The kernel with the job's value lists, extra restrictions and inputs. Throws Error(kUsage) for a
// parameter the kernel does not have. A default that is no longer among the values becomes the
// first value.
KernelSpec apply_job(const KernelSpec& kernel, const JobFile& job);

}  // namespace ktune
