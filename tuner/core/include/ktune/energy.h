// Time against energy: the Pareto set of a problem's configurations and the policies that choose
// one of them (docs/energy.md). Shared by the tuner, `ktune best` and the run-time client.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

// One configuration's time per run (ms) and energy per run (J).
struct TimeEnergy {
  double time_ms = 0;
  double energy_j = 0;
};

// The indices of the points no other point beats in both time and energy (one of two equal
// points), fastest first; points without a finite time and energy above zero are left out.
std::vector<std::size_t> pareto_front(const std::vector<TimeEnergy>& points);

// How a configuration is chosen among a problem's Pareto set:
//   fastest                      the least time (the default; the best as stored)
//   least-energy                 the least energy
//   least-energy-within=PCT%     the least energy among those at most PCT% slower than the
//                                fastest ("least-energy-within=5%"; the % sign may be left out)
struct EnergyPolicy {
  enum class Kind { kFastest, kLeastEnergy, kLeastEnergyWithin };
  Kind kind = Kind::kFastest;
  double within = 0;  // a fraction: 0.05 for 5%

  // Throws Error(kUsage) naming what is wrong.
  static EnergyPolicy parse(std::string_view text);
  std::string text() const;  // as parse reads it
  bool fastest() const { return kind == Kind::kFastest; }
  bool operator==(const EnergyPolicy&) const = default;
};

// The index of the point the policy chooses among `points` (nullopt: none has a finite time and
// energy above zero); ties go to the faster point, then to the lower index.
std::optional<std::size_t> choose(const std::vector<TimeEnergy>& points, const EnergyPolicy& p);

}  // namespace ktune
