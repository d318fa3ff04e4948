// Checks of a kernel description that catch silent mistakes before tuning: a space that is
// empty (and which restrictions emptied it), a reference configuration outside the space, launch
// geometry that cannot be evaluated or exceeds the device's limits, input files that do not fit
// their buffers, and a parameter that changes nothing (configurations that differ only in it
// compile to the same CUBIN and launch alike). `ktune check` runs them all; a quick form that
// needs no compiler runs when a plugin or manifest loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/kernel.h"

namespace ktune {

struct CheckFinding {
  enum class Level { kOk, kWarning, kError } level = Level::kOk;
  std::string topic;  // "space", "reference", "geometry", "inputs", "parameter 'unroll'"
  std::string message;
};
std::string_view to_string(CheckFinding::Level level);  // "ok", "warning", "error"

// What one restriction does to a space: the configurations it lets through on its own, and
// those left valid when every restriction but it holds. Counts stop at `cap` (capped is set).
struct RestrictionImpact {
  std::string restriction;
  std::uint64_t cartesian = 0;
  std::uint64_t valid_alone = 0;
  std::uint64_t valid_without = 0;
  bool capped = false;
};
std::vector<RestrictionImpact> restriction_impacts(const SearchSpace& space,
                                                   std::uint64_t cap = 50'000'000);
// Lines that say why a space is empty: each restriction with the count it removes on its own,
// and those without which the space would not be empty.
std::vector<std::string> explain_empty_space(const SearchSpace& space);

struct CheckOptions {
  std::string arch = "sm_90";     // compile for
  bool compile = true;            // compare CUBINs of configurations differing in one parameter
  CompileCache* cache = nullptr;  // may be null
  int pairs_per_param = 3;        // at most this many pairs compiled per parameter
};

// Every check on a kernel bound to a problem and device limits.
std::vector<CheckFinding> check_kernel(const KernelInstance& instance, const CheckOptions& options);

// The quick form (no compiler, no enumeration): a parameter neither the source (as its macro) nor
// any launch, buffer or argument expression names, and a reference configuration that breaks the
// kernel's own restrictions for its default problem. Returns warnings only.
std::vector<CheckFinding> quick_check_kernel(const KernelSpec& kernel);

}  // namespace ktune
