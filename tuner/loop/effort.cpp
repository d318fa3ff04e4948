// The effort levels' settings and where they come from (docs/effort.md#how-the-levels-were-chosen).
#include "ktune/effort.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ktune {

const std::vector<EffortLevel>& effort_levels() {
  // evaluations and stagnation: chosen leaving one recorded space out
  // (bench/effort/choose.py); the measurement settings: the adaptive default, fewer samples
  // for quick, a tighter spread for thorough.
  static const std::vector<EffortLevel> kLevels = {
      {"quick", 100, 60, 10, 0.02, 3},
      {"default", 300, 250, 50, 0.01, 5},
      {"thorough", 600, 400, 100, 0.005, 8},
  };
  return kLevels;
}

const EffortLevel& effort_level(const std::string& name, const std::string& what, ErrorKind kind) {
  std::vector<std::string> names;
  for (const EffortLevel& e : effort_levels()) {
    if (e.name == name) return e;
    names.push_back(e.name);
  }
  throw Error(kind, fmt::format("{} '{}': expected {}", what, name, fmt::join(names, ", ")));
}

}  // namespace ktune
