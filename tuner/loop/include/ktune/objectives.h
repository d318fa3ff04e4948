// The objectives ktune computes from a trial itself (docs/energy.md): a run ranks its
// configurations by one of them, or by a value its caller computes (the Python package's
// Kernel Tuner objectives over metrics, TuneOptions::objective_value).
//   time    milliseconds per run (the default)
//   energy  joules per run (TrialRecord::energy_j; measured when the objective is energy)
//   edp     the energy-delay product: joules per run times seconds per run
#pragma once

#include <functional>
#include <string>

#include "ktune/error.h"
#include "ktune/store.h"

namespace ktune {

struct BuiltinObjective {
  Objective objective;                              // lower is better for all three
  std::function<double(const TrialRecord&)> value;  // null for time
  bool needs_energy = false;
};

// The objective of that name; Error(kind) naming `what` and the names for another.
BuiltinObjective builtin_objective(const std::string& name, const std::string& what,
                                   ErrorKind kind = ErrorKind::kUsage);
// Whether a name is one of them.
bool is_builtin_objective(const std::string& name);

}  // namespace ktune
