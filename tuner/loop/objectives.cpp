#include "ktune/objectives.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace ktune {

namespace {

double energy_of(const TrialRecord& t) {
  return std::isfinite(t.energy_j) && t.energy_j > 0 ? t.energy_j
                                                     : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

bool is_builtin_objective(const std::string& name) {
  return name == "time" || name == "energy" || name == "edp";
}

BuiltinObjective builtin_objective(const std::string& name, const std::string& what,
                                   ErrorKind kind) {
  BuiltinObjective b;
  b.objective.name = name;
  if (name == "time") return b;
  b.needs_energy = true;
  if (name == "energy") {
    b.value = energy_of;
    return b;
  }
  if (name == "edp") {
    b.value = [](const TrialRecord& t) { return energy_of(t) * t.time_ms * 1e-3; };
    return b;
  }
  throw Error(kind, fmt::format("{} '{}': expected time, energy or edp", what, name));
}

}  // namespace ktune
