// Effort levels (`ktune tune --effort quick|default|thorough`, docs/effort.md): one word that sets
// the budget of a search, its stagnation stop and how carefully each configuration is timed,
// wherever the job file and the command line leave them open.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ktune/error.h"

namespace ktune {

struct EffortLevel {
  std::string name;
  // A run whose strategy is auto and which has no budget of its own gets this budget and this
  // stagnation stop (Budget::evaluations, Budget::stagnation).
  std::uint64_t evaluations = 0;
  std::uint64_t stagnation = 0;
  // The adaptive measurement (MeasureOptions) and the final re-timing, where not given.
  int max_samples = 50;
  double target_spread = 0.01;
  int retime_top = 5;
};

inline constexpr const char* kDefaultEffort = "default";

// quick, default, thorough, in that order.
const std::vector<EffortLevel>& effort_levels();
// The level of that name; an Error of `kind` naming the known ones (`what` says where the name
// was given: "--effort", "JOB.toml: effort").
const EffortLevel& effort_level(const std::string& name, const std::string& what = "--effort",
                                ErrorKind kind = ErrorKind::kUsage);

}  // namespace ktune
